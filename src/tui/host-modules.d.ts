/**
 * Types for the host's runtime modules. OpenCode maps these bare imports to its own copies
 * when it loads a TUI plugin; they are not dependencies of this package (optional peers, not
 * installed for the build), so only what this plugin calls is declared here.
 */
declare module "@opentui/solid" {
  export type Node = { readonly __opentuiNode?: true };
  export namespace JSX {
    type Element = unknown;
  }
  export type SolidPlugin<_Slots = unknown, _Ctx = unknown> = { order?: number; slots: Record<string, unknown> };
  export function createElement(tag: string): Node;
  export function createTextNode(text: string): Node;
  export function insertNode(parent: Node, node: Node, anchor?: Node): void;
  export function insert(parent: Node, accessor: unknown, marker?: unknown): unknown;
  export function setProp<T>(node: Node, name: string, value: T, prev?: unknown): T;
  export function effect<T>(fn: (prev?: T) => T, init?: T): void;
  export function createComponent<P>(component: (props: P) => unknown, props: P): unknown;
  export function useTerminalDimensions(): () => { width: number; height: number };
}

declare module "solid-js" {
  export function createSignal<T>(value: T): [() => T, (v: T | ((prev: T) => T)) => T];
  export function createMemo<T>(fn: (prev?: T) => T): () => T;
  export function Index<T>(props: { each: readonly T[]; children: (item: () => T, index: number) => unknown }): unknown;
}

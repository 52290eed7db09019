/**
 * A small fake of the TUI plugin api (only what the plugin's non-rendering parts call): it
 * records dialogs, toasts, notifications, navigation and client calls, and lets a test emit
 * server events. DialogSelect/DialogAlert return their props so a test can "press" an option.
 */
import type { Api } from "../../../src/tui/host.js";

export interface SelectProps {
  title: string;
  placeholder?: string;
  options: Array<{ title: string; value: string; description?: string; category?: string; onSelect?: () => void }>;
}

export interface AlertProps {
  title: string;
  message: string;
  onConfirm?: () => void;
}

export interface PromptProps {
  title: string;
  placeholder?: string;
  onConfirm?: (value: string) => void;
  onCancel?: () => void;
}

export interface FakeApi {
  api: Api;
  /** The dialog on screen (the last `dialog.replace`), rendered; undefined after `clear`. */
  dialog(): (SelectProps & { kind: "select" }) | (AlertProps & { kind: "alert" }) | (PromptProps & { kind: "prompt" }) | undefined;
  select(): SelectProps;
  /** "Press enter" on the option whose title contains `title`. */
  choose(title: string): void;
  toasts: Array<{ variant?: string; message: string; title?: string }>;
  notifications: Array<{ title?: string; message: string; sound?: unknown }>;
  navigations: Array<{ name: string; params?: Record<string, unknown> }>;
  calls: Array<{ method: string; args: unknown }>;
  route: { name: string; params?: Record<string, unknown> };
  emit(type: string, properties: Record<string, unknown>): void;
  /** Replies of the fake client, per method (`session.children`, ...): data, or a function of the args. */
  replies: Record<string, unknown>;
  layers: unknown[];
}

export function fakeApi(): FakeApi {
  const handlers = new Map<string, Array<(e: { type: string; properties: Record<string, unknown> }) => void>>();
  let current: (() => unknown) | undefined;
  const f: FakeApi = {
    api: undefined as unknown as Api,
    dialog() {
      return current ? (current() as ReturnType<FakeApi["dialog"]>) : undefined;
    },
    select() {
      const d = f.dialog();
      if (!d || d.kind !== "select") throw new Error(`no select dialog open (have ${d?.kind ?? "none"})`);
      return d;
    },
    choose(title) {
      const s = f.select();
      const opt = s.options.find((o) => o.title.includes(title));
      if (!opt) throw new Error(`no option "${title}" in "${s.title}": ${s.options.map((o) => o.title).join(" | ")}`);
      opt.onSelect?.();
    },
    toasts: [],
    notifications: [],
    navigations: [],
    calls: [],
    route: { name: "home" },
    emit(type, properties) {
      for (const h of handlers.get(type) ?? []) h({ type, properties });
    },
    replies: {},
    layers: [],
  };
  const call = (method: string) => async (args: unknown) => {
    f.calls.push({ method, args });
    const r = f.replies[method];
    if (r instanceof Error) throw r;
    const data = typeof r === "function" ? (r as (a: unknown) => unknown)(args) : r;
    return { data };
  };
  f.api = {
    client: {
      session: {
        get: call("session.get"),
        children: call("session.children"),
        messages: call("session.messages"),
        abort: call("session.abort"),
        promptAsync: call("session.promptAsync"),
        update: call("session.update"),
      },
      permission: { list: call("permission.list"), reply: call("permission.reply") },
      question: { list: call("question.list"), reply: call("question.reply"), reject: call("question.reject") },
      tool: { ids: call("tool.ids") },
      config: { get: call("config.get") },
    },
    event: {
      on(type: string, h: (e: { type: string; properties: Record<string, unknown> }) => void) {
        const list = handlers.get(type) ?? [];
        list.push(h);
        handlers.set(type, list);
        return () =>
          handlers.set(
            type,
            (handlers.get(type) ?? []).filter((x) => x !== h),
          );
      },
    },
    ui: {
      DialogSelect: (props: SelectProps) => ({ kind: "select", ...props, options: props.options }),
      DialogAlert: (props: AlertProps) => ({ kind: "alert", ...props }),
      DialogPrompt: (props: PromptProps) => ({ kind: "prompt", ...props }),
      DialogConfirm: (props: Record<string, unknown>) => ({ kind: "confirm", ...props }),
      toast: (t: { variant?: string; message: string; title?: string }) => void f.toasts.push(t),
      dialog: {
        replace: (render: () => unknown) => void (current = render),
        clear: () => void (current = undefined),
      },
    },
    route: {
      get current() {
        return f.route;
      },
      navigate: (name: string, params?: Record<string, unknown>) => {
        f.navigations.push({ name, params });
        f.route = { name, params };
      },
    },
    attention: {
      notify: async (n: { title?: string; message: string; sound?: unknown }) => {
        f.notifications.push(n);
        return { ok: true, notification: true, sound: true };
      },
    },
    keymap: {
      registerLayer: (layer: unknown) => {
        f.layers.push(layer);
        return () => {};
      },
    },
  } as unknown as Api;
  return f;
}

/** A session info as the server sends it for a background child (the server half's contract). */
export function childInfo(
  id: string,
  o: Partial<{
    parent: string;
    description: string;
    status: string;
    startedAt: number;
    completedAt: number;
    error: string;
    permission: unknown;
    question: unknown;
    taskId: string;
    model: string;
    forked: boolean;
    receipt: unknown;
    worktree: unknown;
  }> = {},
) {
  const parent = o.parent ?? "ses_parent";
  return {
    id,
    parentID: parent,
    title: `Background: ${o.description ?? id}`,
    metadata: {
      offshoot: {
        v: 1,
        taskId: o.taskId ?? `bg_${id}`,
        parentSessionID: parent,
        description: o.description ?? `task ${id}`,
        forked: o.forked ?? false,
        agent: "general",
        model: o.model,
        status: o.status ?? "running",
        startedAt: o.startedAt ?? 1_000,
        completedAt: o.completedAt,
        error: o.error,
        permission: o.permission,
        question: o.question,
        receipt: o.receipt,
        worktree: o.worktree,
      },
    },
  };
}

/** Let pending promise callbacks run (the fake client answers asynchronously). */
export async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
  await new Promise((r) => setImmediate(r));
}

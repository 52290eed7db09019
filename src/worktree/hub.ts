// Where the plugin instance of a task worktree meets the manager that owns the task. OpenCode runs
// one instance per directory in the same process: the child of a worktree task is served by the
// worktree's instance, whose plugin (loaded a second time, with `directory` = the worktree) gets the
// child's events; the project's instance never sees them. Both instances share this process-wide
// table (globalThis, so it holds even if the module were loaded twice): the worktree's plugin hands
// each event to the owning manager, and says it loaded (the proof that the worktree's config is there).

import type { Event } from "../host/types.js";
import type { NativeForkLookup } from "../native/registry.js";
import type { SessionMessage } from "../fork/types.js";

export interface WorktreeOwner {
  /** the owning manager's event handler */
  forward(event: Event): Promise<void> | void;
  /** whether the session is one of the owning manager's task children (the no-delegation guard) */
  isChild(sessionID: string): boolean;
  /** the owning manager's gate before each model request of its child (manager/step-gate.ts); never rejects */
  beforeModelRequest(messages: readonly SessionMessage[]): Promise<void>;
  /** whether its task is queued or running (its instance is asked for busy sessions only then) */
  active(): boolean;
  /** the parent's checkout (the repository's top: as the parent's OpenCode spells it first, then its real path) and the task's worktree: paths under the first mean the second */
  readonly checkouts: readonly string[];
  readonly worktree: string;
  /** the task's own branch: the one ref a git command in the worktree may write (git-guard.ts) */
  readonly branch: string;
  /**
   * a sandboxed task (sandbox/): the script that runs its shell commands in the sandbox, its private
   * and temp directories, its tools' caches, and the hosts it may reach (none: no network)
   */
  readonly sandbox?:
    | {
        readonly enter: string;
        readonly tmp: string;
        readonly privateDir: string;
        readonly caches: string;
        readonly hosts: readonly string[];
        /** variables passed in although their names say they hold secrets (option sandboxPassEnv) */
        readonly passEnv: readonly string[];
      }
    | undefined;
  /** OpenCode's config entries of the worktree (relative to its top): no file tool writes them (worktree.ts guardConfig) */
  readonly config: readonly string[];
}

interface Hub {
  hosts: Map<string, WorktreeOwner>;
  /** worktree directories whose OpenCode instance loaded this plugin */
  loaded: Set<string>;
  /** child session -> the directory its requests must name (its instance) */
  sessions: Map<string, string>;
  /** the native fork registries of the project instances in this process (a worktree child's fork is in one of them) */
  forks: Set<NativeForkLookup>;
}

const KEY = Symbol.for("opencode-offshoot.worktree-hub");

function hub(): Hub {
  const g = globalThis as unknown as Record<symbol, Hub | undefined>;
  return (g[KEY] ??= { hosts: new Map(), loaded: new Set(), sessions: new Map(), forks: new Set() });
}

export function hostWorktree(directory: string, host: WorktreeOwner): void {
  hub().hosts.set(directory, host);
}

export function unhostWorktree(directory: string): void {
  hub().hosts.delete(directory);
  hub().loaded.delete(directory);
}

export function hostOf(directory: string): WorktreeOwner | undefined {
  return hub().hosts.get(directory);
}

export function markLoaded(directory: string): void {
  hub().loaded.add(directory);
}

export function isLoaded(directory: string): boolean {
  return hub().loaded.has(directory);
}

export function setSessionDirectory(sessionID: string, directory: string): void {
  hub().sessions.set(sessionID, directory);
}

export function forgetSession(sessionID: string): void {
  hub().sessions.delete(sessionID);
}

/** The directory of a worktree task's child (its requests go to its instance), else undefined. */
export function sessionDirectory(sessionID: string | undefined): string | undefined {
  return sessionID ? hub().sessions.get(sessionID) : undefined;
}

/** The directories of active worktree tasks (their instances report their children's busy state). */
export function activeDirectories(): string[] {
  return [...hub().hosts].flatMap(([directory, host]) => (host.active() ? [directory] : []));
}

/** A project instance's native fork registry: the worktree instances look their children up there. */
export function shareForks(lookup: NativeForkLookup): () => void {
  const forks = (hub().forks ??= new Set());
  forks.add(lookup);
  return () => forks.delete(lookup);
}

/** The native fork a session is, in any project instance's registry of this process. */
export const sharedForks: NativeForkLookup = {
  async find(sessionID) {
    for (const lookup of hub().forks ?? []) {
      const fork = await lookup.find(sessionID).catch(() => undefined);
      if (fork) return fork;
    }
    return undefined;
  },
};

// The task record: ONE record per task, the same shape in memory and in the task file.
// The zod schema is the single definition; the TypeScript types are derived from it, and the store
// validates every entry of the file with it (entry by entry: one bad entry never costs the others).

import { tool } from "./host/tool.js";

const z = tool.schema;

// `queued`: waiting for a free slot of its provider/model (options.concurrency); its child is created
// right after the launch (one at a time, so a turn's launches do not wait for it) and has no prompt yet. `resumed` is a running state: it counts as running everywhere.
import { type ForkReceipt, TASK_STATUSES, type TaskStatus } from "./task-state.js";

export { TASK_STATUSES, type TaskStatus };
export const TaskStatusSchema = z.enum(TASK_STATUSES);

export const ModelRefSchema = z.object({ providerID: z.string().min(1), modelID: z.string().min(1) });
export type ModelRef = ReturnType<typeof ModelRefSchema.parse>;

/** What the child inherited, in a form the list, the notice and the launch output can state. */
export const ForkSummarySchema = z.discriminatedUnion("kind", [
  z.object({
    /** "text": a processed copy of the parent's history in one message (the fork pipeline) */
    kind: z.literal("text"),
    keptMessages: z.number().int().nonnegative(),
    totalMessages: z.number().int().nonnegative(),
    chars: z.number().int().nonnegative(),
    fromCompaction: z.boolean(),
    /** why a `fork: true` launch is not a native fork (the receipt says it), where it was asked for */
    notNative: z.string().max(1000).optional(),
  }),
  z.object({
    /** "native": the child's requests start with the parent's request (src/native) */
    kind: z.literal("native"),
    messages: z.number().int().nonnegative(),
    estimatedTokens: z.number().int().nonnegative(),
    rootSessionID: z.string().min(1).max(200),
    /** the parent's model variant, which the child's prompts (and resumes) repeat */
    variant: z.string().max(200).optional(),
    /** the parent's per-prompt system text (part of its system prompt), which the child's prompts repeat */
    system: z.string().max(100_000).optional(),
  }),
]);
export type ForkSummary = ReturnType<typeof ForkSummarySchema.parse>;

const count = z.number().int().nonnegative();

/** What a worktree was given before its child's first step (src/worktree/ready.ts): bounded. */
export const WorktreeReadySchema = z.object({
  /** the entries of .worktreeinclude, each with the way it was brought (or why not); at most READY_LISTED */
  brought: z
    .array(
      z.object({
        /** relative to the repository's top; a directory ends with "/" */
        path: z.string().min(1).max(4096),
        way: z.enum(["reflink", "copy", "link", "skipped"]),
        /** the bytes a copy or clone brought (its files' sizes) */
        bytes: count.optional(),
        /** files of a copy-on-write clone that fell back to a byte copy */
        fellBack: count.optional(),
        /** why it was skipped, or why a copy was bytes */
        reason: z.string().max(300).optional(),
      }),
    )
    .max(50),
  /** entries past the listed ones (brought or skipped alike) */
  more: count.optional(),
  /** the set-up command (option worktreeSetup) and how it ended; output: the end of what it printed */
  setup: z
    .object({
      command: z.string().max(4000),
      code: z.number().int(),
      ms: count,
      output: z.string().max(4000),
    })
    .optional(),
  /** the one line that says how to bring a big ignored directory the checkout has (neither .worktreeinclude nor a set-up command) */
  hint: z.string().max(1000).optional(),
});
export type WorktreeReady = ReturnType<typeof WorktreeReadySchema.parse>;

/** A task in its own git worktree (src/worktree): where, on which branch, from what, and what it changed. */
export const WorktreeInfoSchema = z.object({
  /** the parent's repository (top level), where the worktree and branch are managed */
  repo: z.string().min(1).max(4096),
  /** the worktree's root, under the plugin's data directory */
  path: z.string().min(1).max(4096),
  /** where the child works: the worktree, at the parent's directory inside the repository */
  directory: z.string().min(1).max(4096),
  branch: z.string().min(1).max(300),
  /** the commit the branch started from: the parent's HEAD, or a snapshot of its uncommitted changes on top of it */
  base: z.string().min(1).max(100),
  /** the parent's HEAD when the task started */
  parentHead: z.string().min(1).max(100),
  /** config entries linked from the parent's checkout (relative to the worktree); never committed */
  linked: z.array(z.string().max(4096)).max(50),
  /** the branch's last commit once a run ended */
  head: z.string().max(100).optional(),
  /** everything on the branch since `base`; absent: no change */
  changes: z
    .object({
      files: z.array(z.string().max(4096)).max(50),
      fileCount: z.number().int().nonnegative(),
      insertions: z.number().int().nonnegative(),
      deletions: z.number().int().nonnegative(),
      /** every changed path (up to CHANGED_PATHS_MAX), cached when the run was committed: overlaps between tasks are read from it */
      paths: z.array(z.string().max(4096)).max(500).optional(),
      /** the files it adds or changes that run on their own in the checkout ("path: why", worktree/runs-alone.ts): only a person takes them */
      runs: z.array(z.string().max(600)).max(20).optional(),
    })
    .optional(),
  /** the worktree and branch are gone: the run changed nothing, the task was discarded, or its changes were taken */
  removed: z.enum(["no changes", "discarded", "taken"]).optional(),
  /**
   * when its worktree directory (and its sandbox directory) was removed because its run was committed:
   * the branch holds everything a take, a diff or a discard needs, and a resume makes the directory
   * again from it. Not `removed`: the branch is still there. Cleared when a resume re-creates it.
   */
  freedAt: z.number().nonnegative().optional(),
  /** when its changes were taken into the parent's checkout with the worktree kept (background_take keep: true) */
  takenAt: z.number().nonnegative().optional(),
  /** how the child was contained: an OS sandbox (src/worktree/sandbox) or the text-level checks only; absent: made before sandboxes (text) */
  containment: z.enum(["bwrap", "sandbox-exec", "text"]).optional(),
  /** a sandboxed task's private directory, the worktree's admin directory and the repository's common one, recorded when made */
  sandboxDir: z.string().min(1).max(4096).optional(),
  gitDir: z.string().min(1).max(4096).optional(),
  commonDir: z.string().min(1).max(4096).optional(),
  /** what the worktree was given before the child's first step: .worktreeinclude's entries, the set-up command, or the hint */
  ready: WorktreeReadySchema.optional(),
  /** the hosts a person allowed this task's commands to reach (background_task's `network`), besides the option `sandboxNetwork`'s */
  network: z.array(z.string().min(1).max(300)).max(100).optional(),
  /** a task launched by a remote parent (`relay`): the branch's head last pushed to the shared git remote, or why the push failed */
  pushed: z.string().min(1).max(100).optional(),
  pushError: z.string().max(2000).optional(),
  /** (the same) the last run whose commit and push are over: its parent reads the branch only then */
  wrapped: z.number().int().positive().optional(),
});
/** A worktree's record, readonly all the way down like the task's that holds it (a new one is built, never changed). */
export type WorktreeInfo = Frozen<ReturnType<typeof WorktreeInfoSchema.parse>>;
/** The same with its own fields writable: while src/worktree/worktree.ts makes the worktree it describes. */
export type WorktreeFields = { -readonly [K in keyof WorktreeInfo]: WorktreeInfo[K] };

/** Tokens and cost of the child's assistant messages, summed over every run of the task. */
export const UsageSchema = z.object({
  input: z.number().nonnegative(),
  output: z.number().nonnegative(),
  reasoning: z.number().nonnegative(),
  cacheRead: z.number().nonnegative(),
  cacheWrite: z.number().nonnegative(),
  cost: z.number().nonnegative(),
});
export type Usage = ReturnType<typeof UsageSchema.parse>;

/**
 * The fork receipt as the task file holds it (bounded): its shape and meaning are task-state.ts
 * ForkReceipt, the one both halves read; a schema that reads another shape does not compile.
 */
export const ForkReceiptSchema = z.object({
  kind: z.enum(["native", "text"]),
  read: z.number().nonnegative(),
  input: z.number().nonnegative(),
  copy: z.number().nonnegative().optional(),
  miss: z.string().max(1000).optional(),
  differs: z.string().max(1000).optional(),
}) satisfies { parse(value: unknown): ForkReceipt }; // (it reads the contract's receipt: task-state.ts)
export type { ForkReceipt };

const time = z.number().nonnegative();
const id = z.string().min(1).max(200);

/**
 * A task that runs on a remote (option `remotes`, docs/remote.md), as this process follows it: the
 * remote's name (never its URL or password), the relay session there (its parent on the remote) and
 * its child there, where that child works, and the run of the remote's task this one follows.
 */
export const RemoteInfoSchema = z.object({
  name: z.string().min(1).max(40),
  relay: id,
  session: id,
  /** the remote's clone of the project, and the child's worktree directory there (a permission or question is answered in its instance) */
  root: z.string().min(1).max(4096),
  directory: z.string().min(1).max(4096),
  /** the run of the remote's task that this task's current run is */
  run: z.number().int().positive(),
  /** a cancel given while the remote could not be reached: sent once it can (its reason) */
  cancel: z.string().max(1000).optional(),
  /** its branch came back and was refused (git's checks): why; nothing of it was brought here */
  refused: z.string().max(2000).optional(),
  /** what the task left on the remote and the shared git remote is gone (a take, a discard, a run that changed nothing) */
  cleaned: z.boolean().optional(),
});
export type RemoteInfo = Frozen<ReturnType<typeof RemoteInfoSchema.parse>>;

/**
 * A task for a remote that waits here for a slot of it (`remotes.<name>.concurrency`): launched there
 * when its turn comes (src/manager/remote/launch.ts), from the snapshot made at its launch (pushed to
 * the shared git remote only then). Gone once it is launched there (`remote` then says where it runs).
 */
export const RemoteWaitSchema = z.object({
  name: z.string().min(1).max(40),
  /** the snapshot of what the parent saw at the launch (a commit of this repository), and the HEAD it was made on */
  base: z.string().min(1).max(100),
  parentHead: z.string().min(1).max(100),
  /** this repository's top, and the parent's directory in it (the task's directory there is the same place in its worktree) */
  repo: z.string().min(1).max(4096),
  projectDir: z.string().min(1).max(4096),
  /** the hosts the child may reach there (the launch's `network`) */
  network: z.array(z.string().min(1).max(300)).max(100).optional(),
});
export type RemoteWait = Frozen<ReturnType<typeof RemoteWaitSchema.parse>>;

export const TaskRecordSchema = z.object({
  id,
  /** the child session doing the work; empty while a queued task's child is being created (launch/launcher.ts) */
  sessionID: z.string().max(200),
  parentSessionID: id,
  /** tool call that launched (or last resumed) the task: a repeated call returns the same task */
  callID: id,
  /** one line, control characters removed, at most DESCRIPTION_MAX_CHARS */
  description: z.string().max(1000),
  agent: z.string().min(1).max(200),
  model: ModelRefSchema.optional(),
  /** the model variant chosen with `model: "provider/model#variant"` (sent with every prompt of the task) */
  variant: z.string().min(1).max(200).optional(),
  /** the parent's agent and model, used to notify and wake the parent without changing them */
  parentAgent: z.string().max(200).optional(),
  parentModel: ModelRefSchema.optional(),
  isForked: z.boolean(),
  fork: ForkSummarySchema.optional(),
  /** the OpenCode process that runs this task; another live process's tasks are left to it */
  ownerPid: z.number().int().positive(),
  status: TaskStatusSchema,
  /** 1 for the first run, +1 per resume; notices and wakes are keyed by run so none is sent twice */
  run: z.number().int().positive(),
  /** the last run whose notice reached the parent (or was found in the parent's messages) */
  notifiedRun: count,
  /** the last run the parent has been told about by a wake, or has read itself with background_output */
  reportedRun: count,
  /** set when a cancel came from the parent itself: nothing new to wake it for */
  cancelledByParent: z.boolean().optional(),
  createdAt: time,
  startedAt: time,
  completedAt: time.optional(),
  error: z.string().max(10_000).optional(),
  toolCalls: count,
  lastTool: z.string().max(200).optional(),
  usage: UsageSchema.optional(),
  /** a forked task: what its child's first request read from the cache (manager/usage.ts); absent until it finished */
  receipt: ForkReceiptSchema.optional(),
  /** the prompt of a queued task, kept until it starts (then dropped) */
  queuedPrompt: z.string().max(200_000).optional(),
  /** isolation: "worktree": the task's own git worktree and branch */
  worktree: WorktreeInfoSchema.optional(),
  /** why it is queued, e.g. "2 tasks of mock/mock-model are running (concurrency 2)" */
  queuedBecause: z.string().max(1000).optional(),
  /** messages the parent (or the TUI) sent into the task while it was queued or running (steer.ts); absent in older files */
  steers: count.optional(),
  /** it runs on a remote: this process follows it there (src/manager/remote/) */
  remote: RemoteInfoSchema.optional(),
  /** it waits here for a slot of its remote, to be launched there (src/manager/remote/launch.ts) */
  remoteWait: RemoteWaitSchema.optional(),
  /**
   * it was launched by a parent on another machine, through its relay session here (its parent): each
   * run's branch is pushed to `gitRemote` once committed, and its parent is never woken
   */
  relay: z.object({ gitRemote: z.string().min(1).max(100) }).optional(),
});

/**
 * A task's record as everyone holds it: deeply readonly, so a write does not compile (nested fields,
 * arrays and all). A change is an input of the task's step (src/manager/task/step.ts).
 */
export type BackgroundTask = Frozen<ReturnType<typeof TaskRecordSchema.parse>>;

/**
 * The same record with its own fields writable (what is nested in them stays readonly: a change
 * replaces it whole): for the step's one runner (src/manager/task/runner.ts) and where a record is
 * created (a launch's draft, a record migrated from an old file).
 */
export type TaskFields = { -readonly [K in keyof BackgroundTask]: BackgroundTask[K] };

/** `T`, readonly all the way down: objects, arrays, sets and maps (functions are left as they are). */
export type Frozen<T> = T extends (...args: never[]) => unknown
  ? T
  : T extends ReadonlyMap<infer K, infer V>
    ? ReadonlyMap<K, Frozen<V>>
    : T extends ReadonlySet<infer V>
      ? ReadonlySet<Frozen<V>>
      : T extends readonly (infer U)[]
        ? readonly Frozen<U>[]
        : T extends object
          ? { readonly [K in keyof T]: Frozen<T[K]> }
          : T;

/** The status predicates of the contract (task-state.ts): both halves' one rule. */
export { STATUS_MEANINGS, isMoving, isOpen, isWorking, meaningOf, statusesWhere } from "./task-state.js";

// The contract between the two halves: what the server half publishes in each background child
// session's `metadata.offshoot`, and what the TUI half reads back. Pure and import-free, so both
// bundles can use it without the other half's runtime.

/**
 * `queued`: waiting for a free slot of its provider/model; `resumed` counts as running. `paused`:
 * stopped after a step because its parent session's budget was reached (manager/budget.ts); its run
 * has not ended, it waits for a person (raise the budget, continue, or cancel), and "Continue" (or
 * the agent's resume, once the budget allows) goes on in place.
 */
export const TASK_STATUSES = ["queued", "running", "resumed", "paused", "completed", "error", "cancelled", "interrupted"] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/**
 * What a status means, to every place that reads one: the one table (STATUS_MEANINGS). Nothing
 * else in src/ compares a status with a literal (scripts/check-status-literals.mjs); the edges
 * between statuses are manager/transitions.ts, which reads its groups from here too.
 */
export interface StatusMeaning {
  /**
   * Its run has not ended. Cancelled by one task_id, by `all: true` and by /tasks "Cancel"; kept in
   * open.json by retention (never moved to the history); the parent still to hear of its end; shown
   * above the fold (sidebar) and counted by the badge and the bottom line. Its worktree can be
   * neither taken nor discarded (cancel it first). Not open: it ended (a follow-up is a new run).
   */
  readonly open: boolean;
  /**
   * It goes on without anyone: it waits for a slot or its child works. The clock runs, a parent's
   * wake waits for it, `background_output({ block })` waits for it, a permission or question of its
   * child is shown, and the agent's discard cancels it first.
   */
  readonly moving: boolean;
  /** Its child works on a prompt now: the watchdog, the completion check, a slot of its model, /tasks "Send a message". */
  readonly working: boolean;
  /**
   * Its child's steps are counted as they finish (the task's usage, its parent's budget): while it
   * works, and once paused, as the step the pause cut short may still be answered and charged.
   */
  readonly countsUsage: boolean;
  /** It waits for a free slot of its model, holding its prompt (a message to it joins that prompt). */
  readonly queued: boolean;
  /**
   * Its run stopped because the parent's budget was reached, and waits for a person: listed as
   * waiting (sidebar, badge, bottom line, /tasks), offered "Raise the session's budget". The usage of
   * a step the pause cut short is still counted.
   */
  readonly waitsForPerson: boolean;
  /** /tasks "Continue" (and the agent's follow-up to it) goes on in place: same child, its history kept. */
  readonly continuable: boolean;
  /** It ended because OpenCode stopped: its worktree is kept even without changes (a continue goes on there). */
  readonly cutShort: boolean;
  /** What `background_task` with its task_id does: a message the task reads at its next step, going on in place, or a new run. */
  readonly followUp: "steer" | "continue" | "new run";
  /** The status `background_list({ status })` lists it under (a resumed task is listed with `running`). */
  readonly listedAs: TaskStatus;
  /** Its section of /tasks. */
  readonly section: "Running" | "Waiting for you" | "Finished";
  /**
   * How its run ended (none while open): the toast and sound of its end; a `failure` wakes the parent
   * at once; a `cancel` the parent asked for is no news to it.
   */
  readonly end?: "success" | "failure" | "cancel" | "stop";
  /** The TUI's mark and colour of it. */
  readonly icon: string;
  readonly tone: "muted" | "accent" | "warning" | "success" | "error";
}

// prettier-ignore
/** One row per status (a new status is one more row here, its edges in manager/transitions.ts, and its words). */
export const STATUS_MEANINGS: { readonly [S in TaskStatus]: StatusMeaning } = {
  queued:      { open: true,  moving: true,  working: false, countsUsage: false, queued: true,  waitsForPerson: false, continuable: false, cutShort: false, followUp: "steer",    listedAs: "queued",      section: "Running",         icon: "◷", tone: "muted" },
  running:     { open: true,  moving: true,  working: true,  countsUsage: true,  queued: false, waitsForPerson: false, continuable: false, cutShort: false, followUp: "steer",    listedAs: "running",     section: "Running",         icon: "●", tone: "accent" },
  resumed:     { open: true,  moving: true,  working: true,  countsUsage: true,  queued: false, waitsForPerson: false, continuable: false, cutShort: false, followUp: "steer",    listedAs: "running",     section: "Running",         icon: "●", tone: "accent" },
  paused:      { open: true,  moving: false, working: false, countsUsage: true,  queued: false, waitsForPerson: true,  continuable: true,  cutShort: false, followUp: "continue", listedAs: "paused",      section: "Waiting for you", icon: "⏸", tone: "warning" },
  completed:   { open: false, moving: false, working: false, countsUsage: false, queued: false, waitsForPerson: false, continuable: false, cutShort: false, followUp: "new run",  listedAs: "completed",   section: "Finished", end: "success", icon: "✓", tone: "success" },
  error:       { open: false, moving: false, working: false, countsUsage: false, queued: false, waitsForPerson: false, continuable: false, cutShort: false, followUp: "new run",  listedAs: "error",       section: "Finished", end: "failure", icon: "✗", tone: "error" },
  cancelled:   { open: false, moving: false, working: false, countsUsage: false, queued: false, waitsForPerson: false, continuable: false, cutShort: false, followUp: "new run",  listedAs: "cancelled",   section: "Finished", end: "cancel",  icon: "⊘", tone: "muted" },
  interrupted: { open: false, moving: false, working: false, countsUsage: false, queued: false, waitsForPerson: false, continuable: true,  cutShort: true,  followUp: "new run",  listedAs: "interrupted", section: "Finished", end: "stop",    icon: "◌", tone: "warning" },
};

/** A status this half does not know (the TUI half may meet one of a newer server half): ended. */
const UNKNOWN: StatusMeaning = { ...STATUS_MEANINGS.cancelled, end: "stop", icon: "•" };

/** The row of a status (a string: the TUI half may meet a status of a newer server half, read as ended). */
export function meaningOf(status: string): StatusMeaning {
  return Object.prototype.hasOwnProperty.call(STATUS_MEANINGS, status) ? STATUS_MEANINGS[status as TaskStatus] : UNKNOWN;
}

/** The statuses whose row has `key` set (the edges' groups: manager/transitions.ts). */
export function statusesWhere(key: "open" | "moving" | "working" | "countsUsage" | "queued" | "waitsForPerson" | "continuable" | "cutShort"): TaskStatus[] {
  return TASK_STATUSES.filter((s) => STATUS_MEANINGS[s][key]);
}

/** Its run has not ended (STATUS_MEANINGS `open`). */
export function isOpen(status: string): boolean {
  return meaningOf(status).open;
}

/** It goes on without anyone: queued or working (STATUS_MEANINGS `moving`). */
export function isMoving(status: string): boolean {
  return meaningOf(status).moving;
}

/** Its child works on a prompt (STATUS_MEANINGS `working`). */
export function isWorking(status: string): boolean {
  return meaningOf(status).working;
}

/** A permission the child waits for, while it waits. */
export interface PermissionWait {
  /** the permission request's id (answer it with `permission.reply({ requestID })`) */
  readonly id: string;
  readonly permission: string;
  readonly patterns: readonly string[];
}

/**
 * A permission the child waits for, as both halves name it (the list, the watchdog's reason, the
 * TUI): `bash: rm -rf build`, its patterns but the catch-all `*` after the permission.
 */
export function permissionText(wait: { permission: string; patterns: readonly string[] }): string {
  const patterns = wait.patterns.filter((p) => p && p !== "*");
  return patterns.length ? `${wait.permission}: ${patterns.join(", ")}` : wait.permission;
}

/** One question of the child's `question` tool (cleaned and bounded by the server half). */
export interface AskedQuestion {
  readonly question: string;
  readonly header?: string;
  readonly options: readonly { readonly label: string; readonly description?: string }[];
  /** several options may be picked */
  readonly multiple?: boolean;
  /** a typed answer is allowed (OpenCode's default: true) */
  readonly custom?: boolean;
}

/** A question the child asked, while it waits for the answer. */
export interface QuestionWait {
  /** the question request's id (answer it with `question.reply({ requestID, answers })`) */
  readonly id: string;
  readonly questions: readonly AskedQuestion[];
}

/** `metadata.offshoot` of a background child session. */
export interface PublishedTaskState {
  v: 1;
  taskId: string;
  parentSessionID: string;
  description: string;
  forked: boolean;
  agent: string;
  /** "provider/model" (or "provider/model#variant") the child runs on, when known */
  model?: string;
  status: TaskStatus;
  /** the OpenCode process running it (a child of a dead process that no task file knows is adopted) */
  ownerPid: number;
  startedAt: number;
  completedAt?: number;
  error?: string;
  permission?: PermissionWait;
  question?: QuestionWait;
  worktree?: PublishedWorktree;
  /** a forked task: what its child's first request read from the cache (once that request finished) */
  receipt?: ForkReceipt;
  /** the answer to the last TUI request (`metadata.offshootRequest`) the server half acted on */
  answered?: RequestAnswer;
  /** its run (1, then +1 per resume): a remote parent follows the run it asked for (absent from older servers) */
  run?: number;
  /** what its child used, over every run, and its tool calls: a remote parent counts them (absent from older servers) */
  usage?: { input: number; output: number; reasoning: number; cacheRead: number; cacheWrite: number; cost: number };
  toolCalls?: number;
  lastTool?: string;
  /** it runs on another machine: the remote's name (option `remotes`); its child here is a mirror, the work is there */
  remote?: string;
}

/**
 * The fork receipt: what a fork's first request read from the cache. The server half makes it
 * (manager/usage.ts), keeps it on the task record (../task-record.ts ForkReceiptSchema checks it
 * on load) and publishes it; ../format.ts formatReceipt prints it for both halves.
 */
export interface ForkReceipt {
  /** how the child got the parent's context */
  kind: "native" | "text";
  /** tokens of the first request read from the cache */
  read: number;
  /** all input tokens of the first request: uncached, cache writes and cache reads */
  input: number;
  /** tokens of the context copy a text fork sent as new input (estimated from its characters) */
  copy?: number;
  /** a native fork below the threshold: the likely reason; a text fork on another model than its parent's: which (manager/usage.ts) */
  miss?: string;
  /** a native fork whose first request's system prompt was not its parent's as sent: where, and who changed it (native/request-check.ts) */
  differs?: string;
}

/**
 * What an action did (`ok`; its first line is the TUI's toast), or why it did not (`error`): the tool
 * replies with replyOf, the TUI's request is answered with either (manager/requests.ts). The error
 * reads without an "Error: " prefix.
 */
export type Outcome = { ok: string } | { error: string };

/** A tool's reply for an outcome: `Error: <why>` or what it did. */
export function replyOf(outcome: Outcome): string {
  return "error" in outcome ? `Error: ${outcome.error}` : outcome.ok;
}

/** The outcome of a TUI request: its id, and the error when it was refused or failed. */
export interface RequestAnswer {
  id: string;
  error?: string;
  /** what it did, when it worked (the TUI's toast) */
  message?: string;
}

/** A worktree task's branch and worktree; `changes` once a run ended ("2 files +10 -3"); `removed` when gone. */
export interface PublishedWorktree {
  branch: string;
  directory: string;
  changes?: string;
  removed?: string;
  /** its directory was freed once its run was committed: the branch holds its work (absent from older servers) */
  freed?: boolean;
  /** other ended tasks of the parent that changed the same files: "bg_x on src/a.ts" */
  overlaps?: string;
  /** how its child is contained: "sandboxed" (an OS sandbox) or "not sandboxed" (text-level checks only); absent from older servers */
  containment?: string;
  /** the files its branch adds or changes that run on their own in the checkout ("path: why"): the take's confirmation lists them */
  runs?: string[];
  /** the branch's last commit once a run was committed; the one pushed to the shared git remote (a task a remote parent launched), or why the push failed */
  head?: string;
  pushed?: string;
  pushError?: string;
  /** the last run whose commit (and push) is over, of a task a remote parent launched */
  wrapped?: number;
}

/**
 * The metadata key of a text part that is a message sent into a running task (a steer), by the
 * `background_task` tool or the TUI's "Send a message": its value is a mark unique to that message.
 * The server half counts each one as a steer of the task, and a sender knows its message was stored
 * when the part with its mark is.
 */
export const STEER_MARK = "offshootSteer";

/**
 * The metadata key of a one-shot request from the TUI half to the server half, written into a
 * task's child session metadata (`session.update`, beside the published `offshoot`, which it keeps).
 * The server half sees the `session.updated` event, acts once per request id, and publishes the
 * task's state again (which drops the request). The TUI half learns the outcome from that state.
 */
export const REQUEST_KEY = "offshootRequest";

/**
 * The kinds of `metadata.offshootRequest`: `discard` removes an ended worktree task's worktree and
 * branch; `take` applies an ended worktree task's changes to the parent's working tree (then removes
 * them); `continue` goes on with a paused or interrupted task in place (same child session, its
 * history kept); `raise-budget` raises the budget of the task's parent session by one more budget
 * (a person's decision: only the TUI sends it).
 */
export const REQUEST_KINDS = ["discard", "take", "continue", "raise-budget", "cancel", "permission"] as const;
export type RequestKind = (typeof REQUEST_KINDS)[number];

/** `metadata.offshootRequest`: one request of the TUI half (REQUEST_KINDS). */
export interface TaskRequest {
  kind: RequestKind;
  /** unique per request: a repeated event with the same id does nothing */
  id: string;
  /**
   * Set when the request is written into the task's PARENT session instead of its child: the task's
   * child session it is about. For a worktree task whose directory was freed: its child's events are
   * published on that directory's instance, which after a restart has no config there and so no plugin
   * to bring them to the server half; the parent's are published on the project's instance.
   */
  child?: string;
  /** when such a request was written (ms): the server half ignores it once the TUI stopped waiting for its answer */
  at?: number;
  /** `permission`: the reply to the permission request `requestID` the task's child waits on (a remote task's: the TUI cannot reach its server) */
  requestID?: string;
  reply?: "once" | "always" | "reject";
}

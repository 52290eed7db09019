// Task lifecycle constants. The fork pipeline's constants live in src/fork/constants.ts.

// ─── Task lifecycle ───
/** Slow safety net that asks session.status() for tasks whose idle event may have been missed. */
export const RECONCILE_INTERVAL_MS = 15_000;
/** background_output({ block }) default and maximum wait, in seconds. */
export const OUTPUT_BLOCK_DEFAULT_S = 60;
export const OUTPUT_BLOCK_MAX_S = 600;
/** At most one toast per this many milliseconds. */
export const TOAST_MIN_INTERVAL_MS = 1000;
/** How many lines of the child's answer go into the parent's notification. */
export const NOTIFICATION_ANSWER_LINES = 8;
/** How many lines of a running task's latest text background_output shows. */
export const PROGRESS_TEXT_LINES = 6;
/** A notice or wake that keeps failing (not a 404) is given up after this many attempts. */
export const MAX_DELIVERY_ATTEMPTS = 5;
/** How long the launches of one parent turn share the agent list and the parent's history they read. */
export const LAUNCH_SHARE_MS = 5_000;
/** An agent seen in the agent list read this recently is taken as existing without reading the list again. */
export const AGENT_LIST_FRESH_MS = 60_000;
/** Under `opencode run`, background_task waits at most this long for its task (seconds). */
export const ONE_SHOT_RUN_WAIT_MAX_S = 3600;
/** How long a message sent into a running task (steer) waits for the server to confirm it stored it. */
export const STEER_CONFIRM_MS = 10_000;
/** How long the TUI's "Take changes" and "Discard worktree and branch" wait for the server half to answer (the merge, git worktree remove, branch -D). */
export const TASK_REQUEST_CONFIRM_MS = 30_000;
/** Length of a task id (the child session id's random tail is not used; ids are our own). */
export const TASK_ID_LENGTH = 8;

// ─── Tool arguments ───
/** A task description is cut to this many characters (one line; it names the child session). */
export const DESCRIPTION_MAX_CHARS = 120;
/** A longer prompt is refused: long material belongs in a file the prompt names. */
export const PROMPT_MAX_CHARS = 100_000;

// ─── Model per task and spend caps ───
/** An unknown `model` is refused with at most this many of the configured models listed. */
export const MODEL_LIST_MAX = 30;
/** A model seen in the provider list read this recently is taken as configured without reading the list again. */
export const MODEL_LIST_FRESH_MS = 60_000;
/**
 * Default of the option maxTaskTokens: tokens charged in full (uncached input, output, reasoning,
 * cache writes) one task may use over all its runs. About 100 steps that each send a full
 * 100k-token context uncached: far beyond a normal task, a backstop for a runaway one.
 */
export const MAX_TASK_TOKENS = 10_000_000;

/**
 * The default budget of one parent session's background work (manager/budget.ts), over all of its
 * tasks: two per-task backstops of tokens charged in full, and $20. A session of ordinary tasks
 * (a few hundred thousand charged tokens each) never meets it, one runaway task meets its own cap
 * first, and a tree of runaways stops before it costs more than a person would notice on a bill.
 * Reaching it loses nothing: tasks pause and a person decides whether to go on.
 */
export const SESSION_BUDGET_TOKENS = 2 * MAX_TASK_TOKENS;
export const SESSION_BUDGET_COST = 20;
/** Parents whose budget state (raises, what they were told) budgets.json keeps, the most recently changed first. */
export const BUDGET_PARENTS_KEPT = 1000;
// ─── Questions of a child (its `question` tool) ───
/** What is kept of a child's question: at most this many questions, options per question, characters. */
export const QUESTION_MAX_QUESTIONS = 8;
export const QUESTION_MAX_OPTIONS = 12;
export const QUESTION_MAX_CHARS = 300;
/** An answer given through background_output may be this many characters long; a longer one is refused. */
export const ANSWER_MAX_CHARS = 2000;
/** A question's header, shown as it is cut. */
export const QUESTION_HEADER_MAX_CHARS = 80;
/**
 * An option's label is kept as the child wrote it (it is what the answer sends back: the child must
 * read its own words); only a label longer than this is cut (a child is untrusted: its labels are bounded).
 */
export const QUESTION_LABEL_MAX_CHARS = ANSWER_MAX_CHARS;

// The fork receipt (manager/usage.ts).
/**
 * A native fork whose first request read less than this share of its input from the cache is
 * flagged. A hit reads the parent's whole prompt (the child adds only its directive and task, small
 * beside a context worth forking) and a miss reads about nothing (the tools come first in what
 * providers cache, so any early difference loses all of it): the shares cluster near 0 and near
 * 100%, and one half keeps a small parent context with a long task prompt from being flagged.
 */
export const NATIVE_FORK_MIN_CACHE_SHARE = 0.5;
/** A provider's usual prompt cache lifetime without use (Anthropic's default 5 minutes; OpenAI's is 5–10). */
export const PROVIDER_CACHE_LIFETIME_MS = 5 * 60_000;
/** Characters per token, to state a text fork's context copy in tokens (the estimate used elsewhere too). */
export const CHARS_PER_TOKEN = 4;

// Fork pipeline constants: names and values as in the design (003 task 1.2), plus our additions below.

// ─── Character budget (Stage 3) ───
export const FORK_CHAR_BUDGET = 200_000;
export const FORK_CHAR_NO_REMOVAL = 120_000;

// ─── Tiers (Stage 2), counted from the newest tool result ───
export const FORK_TIER1_COUNT = 5;
export const FORK_TIER2_COUNT = 10;
export const FORK_TIER2_LIMIT = 3000;
export const FORK_TIER3_LIMIT = 500;

// ─── Tool input (JSON) limits per tier ───
export const FORK_PARAMS_TIER1 = 500;
export const FORK_PARAMS_TIER2 = 200;
export const FORK_PARAMS_TIER3 = 100;

// ─── Head+tail split ───
export const FORK_HEAD_RATIO = 0.8;
export const FORK_TAIL_RATIO = 0.2;

// ─── Detection patterns ───
export const FORK_ERROR_PATTERNS = ["error", "Error", "ERROR", "failed", "FAILED", "exception", "traceback"];
export const FORK_HEAD_TAIL_KEYWORDS = ["bash", "pty", "exec"];

// ─── Additions ───
/** What OpenCode sends the model instead of a pruned tool output (state.time.compacted set). */
export const FORK_CLEARED_OUTPUT = "[Old tool result content cleared]";
/** The tool whose in-flight call spawns a fork; it is never part of the inherited context. */
export const BACKGROUND_TASK_TOOL = "background_task";
/** How many files the preamble names per list before it says "and N more". */
export const FORK_PREAMBLE_FILE_LIMIT = 20;

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
/** Length of a task id (the child session id's random tail is not used; ids are our own). */
export const TASK_ID_LENGTH = 8;

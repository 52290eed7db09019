// Fork pipeline constants: every limit, tier, pattern and tool name the pipeline uses (openspec/specs/fork-context/spec.md
// states what each one does).
// The pipeline is self-contained: nothing under src/fork imports from outside it.

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

// ─── Markers, tool names and bounds ───
/** What OpenCode sends the model instead of a pruned tool output (state.time.compacted set). */
export const FORK_CLEARED_OUTPUT = "[Old tool result content cleared]";
/** The tool whose in-flight call spawns a fork; it is never part of the inherited context. */
export const BACKGROUND_TASK_TOOL = "background_task";
/** How many files the preamble names per list before it says "and N more". */
export const FORK_PREAMBLE_FILE_LIMIT = 20;
/** A file path longer than this is cut in the middle in the preamble. */
export const FORK_PREAMBLE_PATH_LIMIT = 200;
/** Total characters of one file list in the preamble; past it the list says "and N more". */
export const FORK_PREAMBLE_LIST_CHARS = 2_000;
/**
 * A part body larger than this share of the budget (half), wherever it is, is cut toward it before any
 * turn is removed to make room for it (cut before you drop: a giant paste keeps its head and tail, and
 * the turns around it stay).
 */
export const FORK_FAIR_SHARE = FORK_CHAR_BUDGET / 2;
/**
 * Tools whose result carries what the USER wrote: OpenCode's `question` (its output is `User has
 * answered your questions: "<question>"="<answer>". …`) and `ask_user_questions`, also under any MCP
 * prefix (`mcp_ask_user_questions`, `<server>_ask_user_questions`: FORK_USER_ANSWER_TOOL_SUFFIX).
 * The plugin option `userAnswerTools` adds exact names. Such a result is treated like a user message:
 * never cut by tier (it still counts as a result, so the results around it keep their tiers), never
 * superseded by a repeated call, never shown as cleared, and the message holding it is never removed
 * by the budget; only the cuts that apply to a giant user message (head and tail) reach it.
 * Why: a user who answers a question states a decision or a hard rule ("never touch the billing
 * schema"); a tier-3 cut kept its first 500 chars and a forked child broke the rule it never saw.
 */
export const FORK_USER_ANSWER_TOOLS: readonly string[] = ["question", "ask_user_questions"];
/** `ask_user_questions` under an MCP server's prefix: any tool name ending with this. */
export const FORK_USER_ANSWER_TOOL_SUFFIX = "_ask_user_questions";
/**
 * Whenever the budget removes anything, the block fills at least this share of FORK_CHAR_BUDGET:
 * removal stops as soon as the rest fits, and what a removal would free beyond that is given back
 * (the message that would cross the line is cut to fit instead of removed).
 */
export const FORK_MIN_FILL = 0.9;
/** Tool inputs are printed (and compared) to this nesting depth; deeper values show as a marker. */
export const FORK_MAX_INPUT_DEPTH = 32;

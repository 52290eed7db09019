/**
 * What the rules alone cost, next to JSON.parse, on the three shapes where the fork pipeline misses
 * its 0.25 × JSON.parse goal (bench/run.mjs): the work the rules (the seeds' and issue 8's) ask of
 * any implementation on them, each piece timed with the pipeline's own fastest primitive, on the same parsed history and with the
 * same interleaving as bench/run.mjs (one round: the work, then a JSON.parse of the history's JSON).
 *
 *   npx tsx bench/floors.ts [--sizes 1,3,10]
 *
 * Pieces (each a sum over the history; "cut result": a completed or error result longer than its
 * tier's limit, tiers counted from the newest result, which is exact on these shapes: none repeats a call):
 *   error scan   every cut result read whole for FORK_ERROR_PATTERNS (fork-context spec, "Stage 2": a match anywhere
 *                makes the cut head+tail): containsErrorPattern
 *   input walk   how deep every input goes, to FORK_MAX_INPUT_DEPTH (issue 8: a too-deep input is
 *                counted in stats.malformedParts): withinDepth; then every input within the bound
 *                walked whole (its length for the cut marker, its hash for repeated-call detection):
 *                walkInput. (walkInput alone stops at the bound too, but its heavier step over the
 *                first 32 levels of every too-deep input costs more than the two walks.)
 *   input print  the inputs of the calls the block prints (the newest ones on these shapes), each as
 *                far as tier 3 shows it (100 chars): boundedJson
 *   tag scan     the block's text (as it was before) scanned for the context tags and neutralised
 *                (issue 8: neutralised everywhere): neutraliseContextTags
 *   call reads   per call, the fields a decision needs (tool, status, input, output length) and the
 *                input kept in a set per tool (repeated-call detection) and in the files-read list
 *   part objects one printable part per call, with its printed input (the water-filling cut prints
 *                every call of the message when the calls fit the budget as stubs, as at 1 MB)
 * Pieces are timed one by one: where two read the same objects, each pays their cache misses.
 * Reports only; prints the sum next to the pipeline's own ratio.
 */
import { SHAPES } from "./generate.mjs";
import { interleavedRounds, min } from "./measure.mjs";
import { buildForkContext } from "../src/fork/index.js";
import { FORK_MAX_INPUT_DEPTH } from "../src/fork/constants.js";
import { boundedJson, withinDepth } from "../src/fork/dedup.js";
import { neutraliseContextTags } from "../src/fork/format.js";
import { walkInput } from "../src/fork/input.js";
import { containsErrorPattern, getToolResultTier, resultLimitForTier } from "../src/fork/truncation.js";
import type { SessionMessage } from "../src/fork/types.js";

interface Call {
  tool: string;
  status: string;
  input: unknown;
  result: string;
  callID: string;
}

const argIndex = process.argv.indexOf("--sizes");
const SIZES = (argIndex >= 0 ? process.argv[argIndex + 1]! : "1,3,10").split(",").map(Number);
const ROUNDS = 30;
const WARMUP_ROUNDS = 5;

/** Tool calls newest first, as the pipeline decides them. */
function callsNewestFirst(messages: SessionMessage[]): Call[] {
  const calls: Call[] = [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const parts = messages[i]!.parts;
    for (let j = parts.length - 1; j >= 0; j--) {
      const part = parts[j]!;
      if (part.type !== "tool") continue;
      const state = part.state;
      const result = state.status === "completed" ? state.output : state.status === "error" ? state.error : "";
      calls.push({ tool: part.tool, status: state.status, input: state.input, result, callID: part.callID });
    }
  }
  return calls;
}

/** Results longer than their tier's limit (tiers from the newest result, as Stage 2 counts them). */
function cutResults(calls: Call[]): string[] {
  return calls.filter((call, k) => call.result.length > resultLimitForTier(getToolResultTier(k))).map((call) => call.result);
}

/** How many calls the block prints (each opens with "[tool: "). */
function printedCalls(block: string): number {
  let n = 0;
  for (let at = block.indexOf("[tool: "); at >= 0; at = block.indexOf("[tool: ", at + 1)) n++;
  return n;
}

/** What the pieces read, worked out once per history, outside the timed rounds. */
interface History {
  messages: SessionMessage[];
  /** tool calls, newest first */
  calls: Call[];
  /** the results the tiers cut */
  cut: string[];
  /** how many calls the block prints: the newest ones on these shapes */
  printed: number;
  /** the block's text as it was before its tags were neutralised */
  block: string;
}

// Each piece returns what it computed, so the work cannot be optimised away.
const PIECES: Record<string, (history: History) => unknown> = {
  "error scan": ({ cut }) => {
    let n = 0;
    for (const text of cut) if (containsErrorPattern(text)) n++;
    return n;
  },
  "input walk": ({ calls }) => {
    let n = 0;
    for (const call of calls) if (withinDepth(call.input)) n += walkInput(call.input).length;
    return n;
  },
  "input print": ({ calls, printed }) => {
    let n = 0;
    for (let k = 0; k < printed; k++) n += boundedJson(calls[k]!.input, false, 100).length;
    return n;
  },
  "tag scan": ({ block }) => neutraliseContextTags(block),
  "call reads": ({ messages }) => {
    const seen = new Map<string, Set<string>>();
    const filesRead: string[] = [];
    let chars = 0;
    for (let i = messages.length - 1; i >= 0; i--) {
      const parts = messages[i]!.parts;
      for (let j = parts.length - 1; j >= 0; j--) {
        const part = parts[j]!;
        if (part.type !== "tool" || part.state.status !== "completed") continue;
        const path = (part.state.input as { filePath?: string }).filePath ?? "";
        let set = seen.get(part.tool);
        if (set === undefined) seen.set(part.tool, (set = new Set()));
        if (!set.has(path)) set.add(path);
        if (part.tool === "read") filesRead.push(path);
        chars += part.state.output.length;
      }
    }
    return [chars, new Set(filesRead)];
  },
  "part objects": ({ calls }) => {
    const parts = [];
    for (const call of calls)
      parts.push({
        kind: "tool",
        tool: call.tool,
        callID: call.callID,
        input: `{"filePath":"${(call.input as { filePath?: string }).filePath}"}`,
        result: call.result,
        status: call.status,
        tier: 3,
      });
    return parts;
  },
};

const WORK: Record<string, string[]> = {
  "deep-inputs": ["error scan", "input walk", "input print", "tag scan"],
  "blank-and-tag-heavy": ["error scan", "tag scan"],
  "one-message-many-parts": ["call reads", "part objects", "tag scan"],
};

/** Best times of the work and of JSON.parse over interleaved rounds (as bench/run.mjs times them). */
function best(run: () => unknown, json: string): { ms: number; parseMs: number } {
  const { runTimes, parseTimes } = interleavedRounds(run, json, WARMUP_ROUNDS, ROUNDS);
  return { ms: min(runTimes), parseMs: min(parseTimes) };
}

/** `text` as a one-byte string when every character fits one byte (as the tool outputs it comes from). */
function oneByte(text: string): string {
  return /[^\u0000-\u00ff]/.test(text) ? text : Buffer.from(text, "latin1").toString("latin1");
}

console.log(
  `floors of the rules next to JSON.parse (node ${process.version}; best of ${ROUNDS} interleaved rounds; FORK_MAX_INPUT_DEPTH ${FORK_MAX_INPUT_DEPTH})\n`,
);
for (const [shape, pieces] of Object.entries(WORK)) {
  for (const size of SIZES) {
    const json = JSON.stringify(SHAPES[shape]!(size * 1e6, 42));
    const messages = JSON.parse(json) as SessionMessage[];
    const calls = callsNewestFirst(messages);
    // the shapes hold no ‹ of their own: every ‹ in the block is a neutralised <
    const block = oneByte(buildForkContext(messages).text.replaceAll("\u2039", "<"));
    const history: History = { messages, calls, cut: cutResults(calls), printed: Math.min(calls.length, printedCalls(block)), block };
    const pipeline = best(() => buildForkContext(messages), json);
    const row: string[] = [];
    let floor = 0;
    for (const piece of pieces) {
      const { ms, parseMs } = best(() => PIECES[piece]!(history), json);
      const ratio = ms / parseMs;
      // the part objects only count where the block prints every call (the calls fit it as stubs)
      const counted = piece !== "part objects" || history.printed === calls.length ? ratio : 0;
      floor += counted;
      row.push(`${piece} ${ratio.toFixed(3)}${counted === ratio ? "" : " (not counted)"}`);
    }
    console.log(
      `${shape.padEnd(24)} ${String(size).padStart(3)} MB  parse ${pipeline.parseMs.toFixed(1).padStart(6)} ms  pipeline ${(pipeline.ms / pipeline.parseMs).toFixed(3)}  floor ${floor.toFixed(3)}  = ${row.join(" + ")}`,
    );
  }
}

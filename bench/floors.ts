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
 *   error scan   every cut result read whole for FORK_ERROR_PATTERNS (seed 000: a match anywhere
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

function cutResults(calls: Call[]): string[] {
  return calls.filter((call, k) => call.result.length > resultLimitForTier(getToolResultTier(k))).map((call) => call.result);
}

/** How many calls the block prints (each opens with "[tool: "). */
function printedCalls(block: string): number {
  let n = 0;
  for (let at = block.indexOf("[tool: "); at >= 0; at = block.indexOf("[tool: ", at + 1)) n++;
  return n;
}

let sink: unknown;

const PIECES: Record<string, (messages: SessionMessage[], calls: Call[], block: string) => void> = {
  "error scan": (_m, calls) => {
    let n = 0;
    for (const text of cutResults(calls)) if (containsErrorPattern(text)) n++;
    sink = n;
  },
  "input walk": (_m, calls) => {
    let n = 0;
    for (const call of calls) if (withinDepth(call.input)) n += walkInput(call.input).length;
    sink = n;
  },
  "input print": (_m, calls, block) => {
    let n = 0;
    const printed = Math.min(calls.length, printedCalls(block));
    for (let k = 0; k < printed; k++) n += boundedJson(calls[k]!.input, false, 100).length;
    sink = n;
  },
  "tag scan": (_m, _c, block) => {
    sink = neutraliseContextTags(block);
  },
  "call reads": (messages) => {
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
    sink = [chars, new Set(filesRead)];
  },
  "part objects": (_m, calls) => {
    const parts = [];
    for (const call of calls) parts.push({ kind: "tool", tool: call.tool, callID: call.callID, input: `{"filePath":"${(call.input as { filePath?: string }).filePath}"}`, result: call.result, status: call.status, tier: 3 });
    sink = parts;
  },
};

const WORK: Record<string, string[]> = {
  "deep-inputs": ["error scan", "input walk", "input print", "tag scan"],
  "blank-and-tag-heavy": ["error scan", "tag scan"],
  "one-message-many-parts": ["call reads", "part objects", "tag scan"],
};

function best(run: () => void, json: string): { ms: number; parseMs: number } {
  let ms = Number.POSITIVE_INFINITY;
  let parseMs = Number.POSITIVE_INFINITY;
  for (let r = 0; r < ROUNDS + 5; r++) {
    const t0 = performance.now();
    run();
    const t1 = performance.now();
    JSON.parse(json);
    const t2 = performance.now();
    if (r < 5) continue;
    ms = Math.min(ms, t1 - t0);
    parseMs = Math.min(parseMs, t2 - t1);
  }
  return { ms, parseMs };
}

console.log(`floors of the rules next to JSON.parse (node ${process.version}; best of ${ROUNDS} interleaved rounds; FORK_MAX_INPUT_DEPTH ${FORK_MAX_INPUT_DEPTH})\n`);
for (const [shape, pieces] of Object.entries(WORK)) {
  for (const size of SIZES) {
    const json = JSON.stringify(SHAPES[shape]!(size * 1e6, 42));
    const messages = JSON.parse(json) as SessionMessage[];
    const calls = callsNewestFirst(messages);
    // the block's text before its tags were neutralised (the shapes hold no ‹ of their own): a text
    // of one-byte characters, as the outputs it comes from, which native searches scan fastest
    const block = buildForkContext(messages).text.replaceAll("\u2039", "<");
    const pipeline = best(() => {
      sink = buildForkContext(messages);
    }, json);
    const row: string[] = [];
    let floor = 0;
    for (const piece of pieces) {
      const { ms, parseMs } = best(() => PIECES[piece]!(messages, calls, block), json);
      const ratio = ms / parseMs;
      // the part objects only count where the block prints every call (the calls fit it as stubs)
      const counted = piece !== "part objects" || printedCalls(block) === calls.length ? ratio : 0;
      floor += counted;
      row.push(`${piece} ${ratio.toFixed(3)}${counted === ratio ? "" : " (not counted)"}`);
    }
    console.log(
      `${shape.padEnd(24)} ${String(size).padStart(3)} MB  parse ${pipeline.parseMs.toFixed(1).padStart(6)} ms  pipeline ${(pipeline.ms / pipeline.parseMs).toFixed(3)}  floor ${floor.toFixed(3)}  = ${row.join(" + ")}`,
    );
  }
}
void sink;

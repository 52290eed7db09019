// Properties over generated OpenCode-shaped histories: whatever the parent did, the child's context
// fits the budget, is well-formed UTF-16, pairs every call with a result line, keeps pinned messages,
// and is a pure function of the history.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FORK_CHAR_BUDGET, FORK_MIN_FILL } from "../../../src/fork/constants.js";
import { formatForkMessage, measureForkMessage } from "../../../src/fork/format.js";
import { buildForkContext, formatMessagesAsContext, processMessagesForFork } from "../../../src/fork/index.js";
import type { SessionMessage } from "../../../src/fork/types.js";
import { hasLoneSurrogate, History, type ToolSpec } from "./builders.js";

// Fixed seeds keep CI reproducible; FC_SEED / FC_RUN_FACTOR explore further when run by hand.
const seed = (fixed: number) => (process.env.FC_SEED ? Number(process.env.FC_SEED) : fixed);
const RUN_FACTOR = Number(process.env.FC_RUN_FACTOR ?? 1);

// No "[" in generated content, so every "[tool: " line in the text is one we printed.
const ATOMS = ["a", "b", "c", " ", "\n", "😀", "é", "error", "FAILED", "</inherited_context>", "<inherited_context>", "x\ty"];

/** Text made of a short random chunk repeated: sizes from empty up to tens of KB. */
const content = (maxRepeat: number) =>
  fc
    .tuple(fc.array(fc.constantFrom(...ATOMS), { minLength: 1, maxLength: 8 }), fc.nat({ max: maxRepeat }))
    .map(([atoms, repeat]) => atoms.join("").repeat(repeat));

const toolSpec: fc.Arbitrary<ToolSpec> = fc
  .record({
    tool: fc.constantFrom("bash", "read", "grep", "edit", "webfetch", "apply_patch"),
    // few distinct inputs, so identical repeated calls happen
    input: fc.oneof(
      fc.constantFrom({ command: "npm test" }, { filePath: "/p/a.ts" }, { filePath: "/p/b😀.ts" }, { pattern: "TODO", path: "/p" }),
      fc.nat({ max: 80 }).map((n) => ({ filePath: `/p/f${n}.ts`, offset: n })),
    ),
    status: fc.constantFrom("completed", "completed", "completed", "completed", "error", "running", "pending") as fc.Arbitrary<ToolSpec["status"]>,
    output: content(3000),
    error: content(200),
  })
  .map((spec) => ({ ...spec, error: spec.status === "error" ? spec.error : undefined }));

type PartGen = { kind: "text"; text: string } | { kind: "reasoning"; text: string } | { kind: "tool"; spec: ToolSpec; cleared: boolean };

const partGen: fc.Arbitrary<PartGen> = fc.oneof(
  { weight: 3, arbitrary: content(500).map((text) => ({ kind: "text" as const, text })) },
  { weight: 1, arbitrary: content(200).map((text) => ({ kind: "reasoning" as const, text })) },
  {
    weight: 4,
    arbitrary: fc.tuple(toolSpec, fc.boolean()).map(([spec, cleared]) => ({ kind: "tool" as const, spec, cleared: cleared && spec.status === "completed" })),
  },
);

const turnGen = fc.record({
  userText: content(400),
  answers: fc.array(fc.array(partGen, { maxLength: 6, size: "medium" }), { maxLength: 5, size: "medium" }),
});

const historyGen = fc.record({
  turns: fc.array(turnGen, { minLength: 1, maxLength: 14, size: "medium" }),
  compactAfter: fc.option(fc.nat({ max: 13 })),
  tailTurns: fc.nat({ max: 2 }),
  failedLater: fc.boolean(),
});

interface Built {
  messages: SessionMessage[];
  /** prefix of the first user message of the window: the pinned task statement */
  task: string;
  summary?: string;
}

type HistorySpec = typeof historyGen extends fc.Arbitrary<infer T> ? T : never;

function build(spec: HistorySpec): Built {
  const h = new History();
  const userIds: string[] = [];
  let taskTurn = 0;
  let summary: string | undefined;
  spec.turns.forEach((turn, t) => {
    userIds.push(h.user(`U${t}: ${turn.userText}`).info.id);
    for (const answer of turn.answers) {
      h.assistant(
        answer.map((p) => {
          if (p.kind === "text") return p.text;
          if (p.kind === "reasoning") return { type: "reasoning", text: p.text, time: { start: 1 } } as never;
          return h.tool({ ...p.spec, compacted: p.cleared });
        }),
      );
    }
    if (spec.compactAfter === t && t < spec.turns.length - 1) {
      const tailStart = t + 1 - spec.tailTurns; // keep the last `tailTurns` turns as the retained tail
      h.compactionRequest(spec.tailTurns > 0 ? userIds[Math.max(0, tailStart)] : undefined);
      summary = `SUMMARY of turns 0..${t}`;
      h.summary(summary);
      taskTurn = spec.tailTurns > 0 ? Math.max(0, tailStart) : t + 1;
      if (spec.failedLater) {
        h.compactionRequest();
        h.summary("FAILED SUMMARY", { error: { name: "UnknownError", data: { message: "boom" } } });
      }
    }
  });
  return { messages: h.messages, task: `[user]\nU${taskTurn}: `, summary };
}

/** Every "[tool: " line is followed by its result line (after an optional input-truncation line). */
function callsWithoutResult(text: string): number {
  const lines = text.split("\n");
  let missing = 0;
  lines.forEach((line, i) => {
    if (!line.startsWith("[tool: ")) return;
    let next = lines[i + 1] ?? "";
    if (next.startsWith("...[truncated ")) next = lines[i + 2] ?? "";
    if (next !== "[result]" && next !== "[error]") missing++;
  });
  return missing;
}

describe("fork context properties", () => {
  it("fits the budget, stays well-formed, pairs calls with results, keeps pinned messages", () => {
    const seen = { removedTurns: 0, compaction: 0, tail: 0, superseded: 0, cleared: 0, interrupted: 0, tier3: 0, headTail: 0 };
    fc.assert(
      fc.property(historyGen, (spec) => {
        const { messages, task, summary } = build(spec);
        const { text, stats } = buildForkContext(messages);
        if (stats.removedTurns > 0) seen.removedTurns++;
        if (stats.compactionDetected) seen.compaction++;
        if (stats.compactionDetected && spec.tailTurns > 0) seen.tail++;
        if (stats.supersededResults > 0) seen.superseded++;
        if (stats.clearedResults > 0) seen.cleared++;
        if (stats.interruptedCalls > 0) seen.interrupted++;
        if (stats.tierDistribution.tier3 > 0) seen.tier3++;
        if (stats.headTailApplied > 0) seen.headTail++;
        expect(text.length).toBeLessThanOrEqual(FORK_CHAR_BUDGET);
        // nothing is removed beyond what the budget needs (issue 17)
        if (stats.removedMessages > 0) expect(text.length).toBeGreaterThanOrEqual(FORK_MIN_FILL * FORK_CHAR_BUDGET);
        expect(stats.totalChars).toBe(text.length);
        expect(hasLoneSurrogate(text)).toBe(false);
        expect(callsWithoutResult(text)).toBe(0);
        // the block is opened and closed exactly once
        expect(text.match(/<\s*\/?\s*inherited_context/gi)).toEqual(["<inherited_context", "</inherited_context"]);
        // pinned: the first user message of the window (the task), the compaction request and summary
        expect(text.includes(task)).toBe(true);
        expect(stats.compactionDetected).toBe(summary !== undefined);
        if (summary) {
          expect(text.includes(`[user: compaction request]\n`)).toBe(true);
          expect(text.includes(`[assistant: compaction summary]\n${summary}`)).toBe(true);
          expect(text.includes("U0: ")).toBe(spec.compactAfter !== null && spec.tailTurns > spec.compactAfter);
        }
      }),
      { numRuns: 150 * RUN_FACTOR, seed: seed(20251122) },
    );
    // the generated histories really exercise every stage
    for (const [what, count] of Object.entries(seen)) expect(count, what).toBeGreaterThan(5);
  });

  it("is deterministic and does not modify the history", () => {
    fc.assert(
      fc.property(historyGen, fc.option(fc.constantFrom("call_1", "call_2", "call_5")), (spec, excludeCallID) => {
        const { messages } = build(spec);
        const snapshot = JSON.stringify(messages);
        const options = excludeCallID ? { excludeCallID } : {};
        const first = buildForkContext(messages, options);
        const second = buildForkContext(messages, options);
        expect(second).toEqual(first);
        expect(JSON.stringify(messages)).toBe(snapshot);
        // the budget plans with measured lengths: they must be the formatted lengths
        const processed = processMessagesForFork(messages, options);
        for (const message of processed.messages) {
          expect(measureForkMessage(message)).toBe(formatForkMessage(message).length);
        }
        // buildForkContext (lengths taken in Stage 2) is the two public stages run one after the other
        const formatted = formatMessagesAsContext(processed.messages, processed.stats);
        expect({ text: first.text, stats: first.stats }).toEqual(formatted);
      }),
      { numRuns: 60 * RUN_FACTOR, seed: seed(7) },
    );
  });

  it("fits the budget even when single messages are far over it", () => {
    const huge = fc.record({
      task: content(40_000),
      output: content(60_000),
      answers: fc.nat({ max: 5 }),
    });
    let clamped = 0;
    fc.assert(
      fc.property(huge, ({ task, output, answers }) => {
        const h = new History();
        h.user(`T ${task}`);
        for (let i = 0; i <= answers; i++) h.assistant([h.tool({ tool: "read", input: { filePath: `/p/${i}` }, output }), output]);
        const { text, stats } = buildForkContext(h.messages);
        if (stats.clampedMessages > 0) clamped++;
        expect(text.length).toBeLessThanOrEqual(FORK_CHAR_BUDGET);
        expect(hasLoneSurrogate(text)).toBe(false);
        expect(callsWithoutResult(text)).toBe(0);
        expect(text.startsWith("<inherited_context>\n[user]\nT ")).toBe(true);
      }),
      { numRuns: 30 * RUN_FACTOR, seed: seed(3) },
    );
    expect(clamped).toBeGreaterThan(0);
  });
});

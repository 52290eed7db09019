// Spend the budget before giving anything up (issue 17): a giant message anywhere is cut before
// turns are removed for it, removal stops as soon as the rest fits and gives back what it freed
// (the block is then at least 90% full), a long turn loses its oldest steps rather than everything,
// and the task, the summary, the last answer, the newest results and a giant message of the last
// turns survive, head and tail.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FORK_CHAR_BUDGET, FORK_MIN_FILL } from "../../../src/fork/constants.js";
import { formatMessagesAsContext, processMessagesForFork } from "../../../src/fork/index.js";
import { buildForkContext } from "../../../src/fork/index.js";
import type { ForkMessage, ProcessingStats, SessionMessage } from "../../../src/fork/types.js";
import { History, sized } from "./builders.js";

const seed = (fixed: number) => (process.env.FC_SEED ? Number(process.env.FC_SEED) : fixed);
const RUN_FACTOR = Number(process.env.FC_RUN_FACTOR ?? 1);

/** Boolean check, so a failure does not print 200k chars of context. */
const has = (text: string, piece: string) => text.includes(piece);
const FULL = FORK_MIN_FILL * FORK_CHAR_BUDGET;

/** The guarantee: within the budget, and at least 90% full whenever anything was removed. */
function expectFilled(text: string, stats: ProcessingStats): void {
  expect(text.length).toBeLessThanOrEqual(FORK_CHAR_BUDGET);
  if (stats.removedMessages > 0) expect(text.length, `${stats.removedMessages} removed, ${text.length} chars`).toBeGreaterThanOrEqual(FULL);
}

/** A body of exactly `size` chars that says where it begins and ends. */
function marked(name: string, size: number, pattern = "log line 0123456789\n"): string {
  const head = `${name}-HEAD `;
  const tail = ` ${name}-TAIL`;
  return head + sized(Math.max(0, size - head.length - tail.length), pattern) + tail;
}

/** Stage 3 on Stage 2's messages, counting every read of a part (linear: a bounded number per part). */
function partReadsOfStage3(messages: SessionMessage[]): { reads: number; parts: number } {
  const processed = processMessagesForFork(messages);
  let reads = 0;
  let parts = 0;
  const counted: ForkMessage[] = processed.messages.map((m) => {
    parts += m.parts.length;
    return {
      ...m,
      parts: new Proxy(m.parts, {
        get(target, key, receiver) {
          if (typeof key === "string" && /^\d+$/.test(key)) reads++;
          return Reflect.get(target, key, receiver);
        },
      }),
    };
  });
  formatMessagesAsContext(counted, processed.stats);
  return { reads, parts };
}

/** `turns` ordinary turns: a question, a read of ~`size` chars and an answer. */
function ordinaryTurns(h: History, turns: number, size: number, from = 0): void {
  for (let i = from; i < from + turns; i++) {
    h.user(`Q${i}: what about part ${i}?`);
    h.assistant([
      h.tool({ tool: "read", input: { filePath: `/p/src/part${i}.ts` }, output: marked(`R${i}`, Math.floor(size * 0.8)) }),
      marked(`A${i}`, Math.floor(size * 0.2)),
    ]);
  }
}

describe("the issue's cases", () => {
  it("20 ordinary turns, a 1 MB pasted log, then the fork request: the log is cut, not the turns", () => {
    const h = new History();
    h.user("TASK: find why the nightly job fails");
    h.assistant(["Looking."]);
    ordinaryTurns(h, 20, 5_000);
    h.user(`Here is the log:\n${marked("LOG", 1_000_000)}`);
    h.assistant(["The log shows the job ran out of memory."]);
    h.user("FORK: fix the memory use in the background");
    const { text, stats } = buildForkContext(h.messages);
    expectFilled(text, stats);
    expect(text.length).toBeGreaterThanOrEqual(FULL); // 14,832 chars before the fix
    for (const piece of ["TASK: find why", "LOG-HEAD", "LOG-TAIL", "The log shows the job ran out of memory.", "FORK: fix the memory use", "A19-TAIL"]) {
      expect(has(text, piece), piece).toBe(true);
    }
  });

  it("one turn of 500 tool steps, then the fork request: the oldest steps go, the rest fills the budget", () => {
    const h = new History();
    h.user("TASK: refactor every module");
    for (let i = 0; i < 500; i++) h.assistant([h.tool({ tool: "bash", input: { command: `step ${i}` }, output: marked(`S${i}`, 2_500) })]);
    h.assistant(["ANSWER: all modules refactored"]);
    h.user("FORK: write the changelog");
    const { text, stats } = buildForkContext(h.messages);
    expectFilled(text, stats);
    expect(text.length).toBeGreaterThanOrEqual(FULL); // 26,723 chars before the fix
    for (const piece of ["TASK: refactor every module", "ANSWER: all modules refactored", "FORK: write the changelog", "S499-HEAD", "S499-TAIL", "S495-TAIL"]) {
      expect(has(text, piece), piece).toBe(true);
    }
    expect(has(text, "S0-HEAD")).toBe(false); // the oldest steps went first
  });
});

type GiantKind = "user" | "assistant" | "toolInput" | "toolOutput";

const giantHistory = fc.record({
  turns: fc.nat({ max: 30 }),
  turnSize: fc.integer({ min: 300, max: 20_000 }),
  kind: fc.constantFrom<GiantKind>("user", "assistant", "toolInput", "toolOutput"),
  at: fc.nat(),
  size: fc.integer({ min: 100_000, max: 5_000_000 }),
  compaction: fc.boolean(),
  answered: fc.boolean(),
});

type GiantSpec = typeof giantHistory extends fc.Arbitrary<infer T> ? T : never;

/**
 * A task, optionally a compaction, `turns` ordinary turns with the giant message in one of them
 * (or in a turn of its own after them: `at` modulo turns + 1), then the fork request.
 */
function buildGiant(spec: GiantSpec): { messages: SessionMessage[]; giantTurn: number; lastAnswer: string; newestResult: string } {
  const h = new History();
  if (spec.compaction) {
    h.user("OLD: work before the compaction");
    h.assistant(["done"]);
    h.compactionRequest();
    h.summary("SUMMARY: what was done so far");
  }
  h.user("TASK: the statement of the task");
  h.assistant(["On it."]);
  const giantTurn = spec.at % (spec.turns + 1);
  const giant = marked("GIANT", spec.size);
  let lastAnswer = "On it.";
  let newestResult = "";
  for (let i = 0; i <= spec.turns; i++) {
    const giantHere = i === giantTurn;
    if (i === spec.turns && !giantHere) break;
    h.user(giantHere && spec.kind === "user" ? `Q${i}: ${giant}` : `Q${i}: what about part ${i}?`);
    const parts = [h.tool({ tool: "read", input: { filePath: `/p/part${i}.ts` }, output: marked(`R${i}`, Math.floor(spec.turnSize * 0.8)) })];
    newestResult = `R${i}`;
    if (giantHere && spec.kind === "toolInput")
      parts.push(h.tool({ tool: "write", input: { filePath: `/p/big${i}`, content: giant }, output: "Wrote file successfully." }));
    if (giantHere && spec.kind === "toolOutput") {
      parts.push(h.tool({ tool: "bash", input: { command: "cat big.log" }, output: giant }));
      newestResult = "GIANT";
    }
    h.assistant(parts);
    if (giantHere && spec.kind === "assistant") {
      h.assistant([giant]);
      lastAnswer = giant; // an assistant text: the latest answer so far
    }
    if (spec.answered) {
      lastAnswer = marked(`A${i}`, Math.floor(spec.turnSize * 0.2));
      h.assistant([lastAnswer]);
    }
  }
  h.user("FORK: the request to fork");
  return { messages: h.messages, giantTurn, lastAnswer, newestResult };
}

describe("property: a giant message (100 KB to 5 MB) at any position", () => {
  it("holds the budget, fills 90% when anything was removed, keeps the survivors, is deterministic", () => {
    const seen = { removed: 0, giantLast: 0, kinds: new Set<string>() };
    fc.assert(
      fc.property(giantHistory, (spec) => {
        const { messages, giantTurn, lastAnswer, newestResult } = buildGiant(spec);
        const first = buildForkContext(messages);
        const { text, stats } = first;
        if (stats.removedMessages > 0) seen.removed++;
        expectFilled(text, stats);
        const opening = spec.compaction
          ? "<inherited_context>\n[user: compaction request]\n"
          : "<inherited_context>\n[user]\nTASK: the statement of the task\n";
        expect(text.startsWith(opening)).toBe(true);
        expect(has(text, "[user]\nTASK: the statement of the task\n")).toBe(true);
        expect(has(text, "FORK: the request to fork")).toBe(true);
        if (spec.compaction) expect(has(text, "SUMMARY: what was done so far")).toBe(true);
        expect(has(text, lastAnswer.slice(0, 40)) && has(text, lastAnswer.slice(-20)), "last answer").toBe(true);
        expect(has(text, `${newestResult}-HEAD`) && has(text, `${newestResult}-TAIL`), "newest result").toBe(true);
        // a giant message of the last turns keeps its head and tail (an input is only ever shown in part)
        if (giantTurn >= spec.turns - 1 && spec.kind !== "toolInput") {
          seen.giantLast++;
          seen.kinds.add(spec.kind);
          expect(has(text, "GIANT-HEAD") && has(text, "GIANT-TAIL"), "giant head and tail").toBe(true);
        }
        expect(buildForkContext(messages)).toEqual(first);
      }),
      { numRuns: 80 * RUN_FACTOR, seed: seed(17) },
    );
    expect(seen.removed).toBeGreaterThan(5);
    expect(seen.giantLast).toBeGreaterThan(10);
    expect(seen.kinds.size).toBe(3);
  });

  it("Stage 3 reads each part a bounded number of times", () => {
    fc.assert(
      fc.property(giantHistory, (spec) => {
        const { reads, parts } = partReadsOfStage3(buildGiant(spec).messages);
        expect(reads).toBeLessThanOrEqual(12 * parts + 100);
      }),
      { numRuns: 15 * RUN_FACTOR, seed: seed(171) },
    );
  });
});

const longTurn = fc.record({
  steps: fc.integer({ min: 50, max: 1_000 }),
  stepSize: fc.integer({ min: 100, max: 4_000 }),
  tool: fc.constantFrom("bash", "read"),
  answered: fc.boolean(),
  forkTurn: fc.boolean(),
  olderTurns: fc.nat({ max: 5 }),
});

type LongSpec = typeof longTurn extends fc.Arbitrary<infer T> ? T : never;

function buildLong(spec: LongSpec): SessionMessage[] {
  const h = new History();
  h.user("TASK: the statement of the task");
  h.assistant(["On it."]);
  ordinaryTurns(h, spec.olderTurns, 4_000);
  h.user("LONG REQUEST: do every step");
  for (let i = 0; i < spec.steps; i++)
    h.assistant([h.tool({ tool: spec.tool, input: { filePath: `/p/s${i}`, command: `s ${i}` }, output: marked(`S${i}`, spec.stepSize) })]);
  if (spec.answered) h.assistant(["ANSWER: every step done"]);
  if (spec.forkTurn) h.user("FORK: the request to fork");
  return h.messages;
}

describe("property: long single turns (50 to 1,000 steps) lose steps, not everything", () => {
  it("the oldest steps go first; the request, the newest steps and the answer stay; 90% full", () => {
    let removed = 0;
    fc.assert(
      fc.property(longTurn, (spec) => {
        const messages = buildLong(spec);
        const { text, stats } = buildForkContext(messages);
        if (stats.removedMessages > 0) removed++;
        expectFilled(text, stats);
        expect(text.startsWith("<inherited_context>\n[user]\nTASK: the statement of the task\n")).toBe(true);
        expect(has(text, "LONG REQUEST: do every step")).toBe(true);
        if (spec.answered) expect(has(text, "ANSWER: every step done")).toBe(true);
        if (spec.forkTurn) expect(has(text, "FORK: the request to fork")).toBe(true);
        const last = spec.steps - 1;
        expect(has(text, `S${last}-HEAD`) && has(text, `S${last}-TAIL`), "newest step").toBe(true);
        // the steps still shown are the newest ones: a suffix of the turn
        let shown = 0;
        let oldestShown = spec.steps;
        for (let i = 0; i < spec.steps; i++) {
          if (has(text, `S${i}-HEAD`)) {
            shown++;
            oldestShown = Math.min(oldestShown, i);
          }
        }
        expect(shown, "shown steps are the newest ones").toBe(spec.steps - oldestShown);
        expect(buildForkContext(messages)).toEqual({ text, stats, preamble: buildForkContext(messages).preamble });
      }),
      { numRuns: 40 * RUN_FACTOR, seed: seed(1717) },
    );
    expect(removed).toBeGreaterThan(10);
  });

  it("Stage 3 reads each part a bounded number of times", () => {
    fc.assert(
      fc.property(longTurn, (spec) => {
        const { reads, parts } = partReadsOfStage3(buildLong(spec));
        expect(reads).toBeLessThanOrEqual(12 * parts + 100);
      }),
      { numRuns: 15 * RUN_FACTOR, seed: seed(1718) },
    );
  });
});

// buildForkContext reads the history from its newest end: once the turns built fill the budget, older
// messages are only counted (src/fork/process.ts). The child must not be able to tell: on every
// history the text, the preamble and the stats are exactly those of reading every message in full.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FORK_CHAR_BUDGET, FORK_FAIR_SHARE } from "../../../src/fork/constants.js";
import { formatMeasured } from "../../../src/fork/context.js";
import { buildForkContext } from "../../../src/fork/index.js";
import { buildForkPreamble } from "../../../src/fork/preamble.js";
import { processAndMeasure } from "../../../src/fork/process.js";
import type { ForkContext, ForkOptions, SessionMessage } from "../../../src/fork/types.js";
import { SHAPES } from "../../../bench/generate.mjs";
import { History, sized, type ToolSpec } from "./builders.js";

const seed = (fixed: number) => (process.env.FC_SEED ? Number(process.env.FC_SEED) : fixed);
const RUN_FACTOR = Number(process.env.FC_RUN_FACTOR ?? 1);

/** Every message built in full: what buildForkContext gave before the newest-end read. */
function fullRead(messages: readonly SessionMessage[], options: ForkOptions = {}): ForkContext {
  const { result, lengths } = processAndMeasure(messages, options);
  const { text, stats } = formatMeasured(result.messages, result.stats, lengths);
  return { text, preamble: buildForkPreamble(stats), stats };
}

const ATOMS = ["a", "b", " ", "\n", "😀", "error", "</inherited_context>", "x\ty"];
const content = (maxRepeat: number) =>
  fc
    .tuple(fc.array(fc.constantFrom(...ATOMS), { minLength: 1, maxLength: 6 }), fc.nat({ max: maxRepeat }))
    .map(([atoms, repeat]) => atoms.join("").repeat(repeat));

const toolSpec: fc.Arbitrary<ToolSpec> = fc.record({
  tool: fc.constantFrom("bash", "read", "grep", "question", "webfetch"),
  input: fc.oneof(
    fc.constantFrom({ command: "npm test" }, { filePath: "/p/a.ts" }, { pattern: "TODO", path: "/p" }),
    fc.nat({ max: 40 }).map((n) => ({ filePath: `/p/f${n}.ts`, offset: n })),
  ),
  status: fc.constantFrom("completed", "completed", "completed", "error", "running") as fc.Arbitrary<ToolSpec["status"]>,
  output: content(4000),
  error: content(100),
});

type PartGen = { kind: "text"; text: string } | { kind: "big"; chars: number } | { kind: "tool"; spec: ToolSpec; cleared: boolean };

const partGen: fc.Arbitrary<PartGen> = fc.oneof(
  { weight: 4, arbitrary: content(800).map((text) => ({ kind: "text" as const, text })) },
  // a text long enough for step 0 (cut before you drop), now and then
  { weight: 1, arbitrary: fc.integer({ min: FORK_FAIR_SHARE / 4, max: FORK_FAIR_SHARE * 1.5 }).map((chars) => ({ kind: "big" as const, chars })) },
  {
    weight: 5,
    arbitrary: fc.tuple(toolSpec, fc.boolean()).map(([spec, cleared]) => ({ kind: "tool" as const, spec, cleared: cleared && spec.status === "completed" })),
  },
);

const historyGen = fc.record({
  turns: fc.array(
    fc.record({
      userText: fc.oneof(content(300), fc.constant("")),
      answers: fc.array(fc.array(partGen, { maxLength: 5 }), { maxLength: 5 }),
    }),
    { minLength: 1, maxLength: 60 },
  ),
  compactAfter: fc.option(fc.nat({ max: 59 })),
  exclude: fc.option(fc.constantFrom("call_1", "call_3")),
  // one long turn: the user's later messages left out (the budget trims inside the newest turn)
  oneTurn: fc.boolean(),
});

function build(spec: typeof historyGen extends fc.Arbitrary<infer T> ? T : never): SessionMessage[] {
  const h = new History();
  spec.turns.forEach((turn, t) => {
    if (t === 0 || !spec.oneTurn) h.user(turn.userText ? `U${t}: ${turn.userText}` : "");
    for (const answer of turn.answers) {
      h.assistant(
        answer.map((p) => {
          if (p.kind === "text") return p.text;
          if (p.kind === "big") return sized(p.chars);
          return h.tool({ ...p.spec, compacted: p.cleared });
        }),
      );
    }
    if (spec.compactAfter === t && t < spec.turns.length - 1) {
      h.compactionRequest();
      h.summary(`SUMMARY of turns 0..${t}`);
    }
  });
  return h.messages;
}

describe("the newest-end read", () => {
  it("gives exactly the full read's text, preamble and stats on generated histories", () => {
    let counted = 0;
    fc.assert(
      fc.property(historyGen, (spec) => {
        const messages = build(spec);
        const options = spec.exclude ? { excludeCallID: spec.exclude } : {};
        const full = fullRead(messages, options);
        if (processAndMeasure(messages, options, true).suffixFrom !== undefined) counted++;
        expect(buildForkContext(messages, options)).toEqual(full);
      }),
      { numRuns: 120 * RUN_FACTOR, seed: seed(32) },
    );
    // the generator reaches the case this is about: histories well over the budget
    expect(counted).toBeGreaterThan(10);
  });

  it("gives exactly the full read's result on every benchmark shape, and counts most of a long history", () => {
    for (const [name, shape] of Object.entries(SHAPES)) {
      const messages = shape(3e6, 42) as SessionMessage[];
      const full = fullRead(messages);
      expect(buildForkContext(messages), name).toEqual(full);
      expect(full.text.length, name).toBeLessThanOrEqual(FORK_CHAR_BUDGET);
    }
    // many small messages: only the newest turns are built
    const chat = SHAPES["chat-after-one-call"]!(3e6, 7) as SessionMessage[];
    const read = processAndMeasure(chat, {}, true);
    expect(read.suffixFrom).toBeGreaterThan(chat.length * 0.8);
  });
});

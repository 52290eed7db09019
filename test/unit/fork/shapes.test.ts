// Properties over the history shapes a fuzzer found breaking the pipeline's promises (issue 8): long
// chat, many tiny parts, many parts in one message, repeated calls, deep inputs, blank- and tag-heavy
// text. Whatever the shape: the block fits the budget, is opened and closed exactly once, keeps the
// task statement, the last answer and the newest result's head, is deterministic, and the history
// is not modified.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FORK_CHAR_BUDGET, FORK_MIN_FILL } from "../../../src/fork/constants.js";
import { buildForkContext } from "../../../src/fork/index.js";
import { hasLoneSurrogate, History, sized } from "./builders.js";

const seed = (fixed: number) => (process.env.FC_SEED ? Number(process.env.FC_SEED) : fixed);
const RUN_FACTOR = Number(process.env.FC_RUN_FACTOR ?? 1);

// Blanks, angle brackets, slashes and the tag name in several cases: the tag scan's worst inputs.
const TAG_ATOMS = ["<", "/", " ", "\t", "\n", "\u00a0", "inherited_context", "INHERITED_context", "_c", ">", "x", "😀"];
const tagText = (maxRepeat: number) =>
  fc.tuple(fc.array(fc.constantFrom(...TAG_ATOMS), { minLength: 1, maxLength: 10 }), fc.nat({ max: maxRepeat })).map(([atoms, n]) => atoms.join("").repeat(n));

const shapeGen = fc.oneof(
  // long chat after zero or one early tool call
  fc.record({ kind: fc.constant("chat" as const), turns: fc.integer({ min: 50, max: 4_000 }), size: fc.integer({ min: 5, max: 2_000 }), early: fc.boolean() }),
  // many tiny parts per message
  fc.record({ kind: fc.constant("tiny" as const), messages: fc.integer({ min: 1, max: 400 }), parts: fc.integer({ min: 1, max: 300 }) }),
  // many tool parts in one message
  fc.record({ kind: fc.constant("many" as const), parts: fc.integer({ min: 10, max: 6_000 }), output: fc.integer({ min: 0, max: 400 }) }),
  // the same few calls repeated, keys in either order
  fc.record({ kind: fc.constant("repeated" as const), calls: fc.integer({ min: 5, max: 1_500 }), output: fc.integer({ min: 0, max: 3_000 }) }),
  // inputs nested up to far past the printed depth
  fc.record({ kind: fc.constant("deep" as const), calls: fc.integer({ min: 1, max: 30 }), depth: fc.integer({ min: 0, max: 1_000 }) }), // deeper: guarantees.test.ts (the clone below would overflow)
  // blank- and tag-heavy text in every place text can be
  fc.record({ kind: fc.constant("tags" as const), turns: fc.integer({ min: 1, max: 40 }), text: tagText(20_000) }),
);

type Shape = typeof shapeGen extends fc.Arbitrary<infer T> ? T : never;

interface Built {
  history: History;
  /** the head of the newest tool result, when there is one */
  newestResultHead?: string;
}

/** The first `n` characters, never half of an emoji (a lone surrogate would be the test's own malformed input). */
function codePoints(text: string, n: number): string {
  return Array.from(text).slice(0, n).join("");
}

function nested(depth: number): unknown {
  let value: unknown = { leaf: 1 };
  for (let i = 0; i < depth; i++) value = i % 2 ? { k: value, z: i } : [value, i];
  return value;
}

function build(shape: Shape): Built {
  const h = new History();
  h.user("TASK-STATEMENT: the one thing to do");
  let newestResultHead: string | undefined;
  switch (shape.kind) {
    case "chat":
      if (shape.early) h.assistant([h.tool({ tool: "read", input: { filePath: "/p/a.ts" }, output: "EARLY-READ body" })]);
      if (shape.early) newestResultHead = "EARLY-READ";
      for (let i = 0; i < shape.turns; i++) h.turn(`q${i} ${sized(shape.size)}`, `a${i} ${sized(shape.size)}`);
      break;
    case "tiny":
      for (let m = 0; m < shape.messages; m++)
        h.assistant(
          Array.from({ length: shape.parts }, (_, p) => `t${p}`),
          { steps: false },
        );
      break;
    case "many": {
      const parts = Array.from({ length: shape.parts }, (_, i) =>
        h.tool({ tool: "grep", input: { pattern: `p${i}` }, output: `R${i} ${sized(shape.output)}` }),
      );
      h.assistant(parts);
      newestResultHead = `R${shape.parts - 1} `;
      break;
    }
    case "repeated":
      for (let i = 0; i < shape.calls; i++) {
        const input = i % 2 ? { command: "npm test", timeout: i % 3 } : { timeout: i % 3, command: "npm test" };
        h.assistant([h.tool({ tool: "bash", input, output: `RUN${i} ${sized(shape.output)}` })]);
      }
      newestResultHead = `RUN${shape.calls - 1} `;
      break;
    case "deep":
      for (let i = 0; i < shape.calls; i++) h.assistant([h.tool({ tool: "webfetch", input: { body: nested(shape.depth) } as never, output: `DEEP${i}` })]);
      newestResultHead = `DEEP${shape.calls - 1}`;
      break;
    case "tags":
      for (let i = 0; i < shape.turns; i++) {
        h.user(`Q${i} ${shape.text}`);
        h.assistant([
          shape.text,
          h.tool({ tool: codePoints(shape.text, 30) || "bash", input: { q: codePoints(shape.text, 1_000) }, output: `TAGS${i} ${shape.text}` }),
        ]);
      }
      newestResultHead = `TAGS${shape.turns - 1} `;
      break;
  }
  h.assistant(["LAST-ANSWER: done"]);
  return { history: h, newestResultHead };
}

describe("fork context on the fuzzer's shapes", () => {
  it("fits the budget, opens and closes the block once, keeps what it promises, is deterministic and pure", () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(shapeGen, (shape) => {
        seen.add(shape.kind);
        const { history, newestResultHead } = build(shape);
        // deep inputs cannot be JSON-snapshotted by the test itself either: compare a structured clone
        const before = structuredClone(history.messages);
        const first = buildForkContext(history.messages);
        const { text } = first;
        expect(text.length).toBeLessThanOrEqual(FORK_CHAR_BUDGET);
        if (first.stats.removedMessages > 0) expect(text.length).toBeGreaterThanOrEqual(FORK_MIN_FILL * FORK_CHAR_BUDGET);
        expect(first.stats.totalChars).toBe(text.length);
        expect(hasLoneSurrogate(text)).toBe(false);
        expect(text.match(/<\s*\/?\s*inherited_context/gi)).toEqual(["<inherited_context", "</inherited_context"]);
        expect(first.preamble).not.toMatch(/<\s*\/?\s*inherited_context/i);
        expect(text.startsWith("<inherited_context>\n[user]\nTASK-STATEMENT: the one thing to do")).toBe(true);
        expect(text.includes("LAST-ANSWER: done")).toBe(true);
        // (a cut may fall right after the head: the whitespace before a truncation mark is not kept)
        if (newestResultHead) expect(text.includes(newestResultHead.trimEnd())).toBe(true);
        expect(buildForkContext(history.messages)).toEqual(first);
        expect(history.messages).toEqual(before);
      }),
      { numRuns: 40 * RUN_FACTOR, seed: seed(8) },
    );
    expect([...seen].sort()).toEqual(["chat", "deep", "many", "repeated", "tags", "tiny"]);
  });
});

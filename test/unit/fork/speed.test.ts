// The fast paths of the pipeline give exactly what the plain rules give: each is checked against
// the rule written the slow, obvious way, on generated inputs.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FORK_ERROR_PATTERNS } from "../../../src/fork/constants.js";
import { longestFirst } from "../../../src/fork/budget.js";
import { boundedJson, CallRegistry, canonicalJson, flatCanonicalJson, withinDepth } from "../../../src/fork/dedup.js";
import { walkInput } from "../../../src/fork/input.js";
import { flatInputJson } from "../../../src/fork/tools.js";
import { containsErrorPattern, groupedAlternation } from "../../../src/fork/truncation.js";

/** The same value with the keys of every object in another (shuffled) order. */
function reorder(value: unknown, pick: () => number): unknown {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((item) => reorder(item, pick));
  const entries = Object.entries(value as Record<string, unknown>);
  for (let i = entries.length - 1; i > 0; i--) {
    const j = pick() % (i + 1);
    [entries[i], entries[j]] = [entries[j]!, entries[i]!];
  }
  return Object.fromEntries(entries.map(([key, item]) => [key, reorder(item, pick)]));
}

const jsonValue = fc.jsonValue({ maxDepth: 4 });

describe("error patterns: one grouped alternation", () => {
  it("matches exactly when one pattern is included (as `includes` per pattern)", () => {
    const atoms = [
      ...FORK_ERROR_PATTERNS,
      ...FORK_ERROR_PATTERNS.map((p) => p.slice(0, -1)),
      ...FORK_ERROR_PATTERNS.map((p) => p.slice(1)),
      "e",
      "E",
      "x",
      " ",
      "\n",
      "😀",
    ];
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...atoms), { maxLength: 12 }), (pieces) => {
        const text = pieces.join("");
        expect(containsErrorPattern(text)).toBe(FORK_ERROR_PATTERNS.some((p) => text.includes(p)));
      }),
      { numRuns: 5_000, seed: 3 },
    );
  });

  it("the fast path for texts without R, f, F, p and k finds exactly error and Error", () => {
    const atoms = ["rror", "error", "Error", "e", "E", "r", "o", " ", "ror", "err", "Er", "eRror", "<", "😀", "x"];
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...atoms), { maxLength: 10 }), fc.constantFrom("", "R", "f", "F", "p", "k"), (pieces, key) => {
        const text = pieces.join("") + key;
        expect(containsErrorPattern(text)).toBe(FORK_ERROR_PATTERNS.some((p) => text.includes(p)));
      }),
      { numRuns: 5_000, seed: 9 },
    );
  });

  it("groups any pattern list into an alternation with the same matches", () => {
    const word = fc.string({ minLength: 1, maxLength: 4, unit: fc.constantFrom("a", "b", ".", "(", "|", "😀") });
    fc.assert(
      fc.property(fc.array(word, { minLength: 1, maxLength: 5 }), fc.array(word, { maxLength: 6 }), (patterns, pieces) => {
        const text = pieces.join("");
        expect(new RegExp(groupedAlternation(patterns)).test(text)).toBe(patterns.some((p) => text.includes(p)));
      }),
      { numRuns: 3_000, seed: 4 },
    );
  });
});

describe("nested inputs: one walk measures and hashes", () => {
  it("the hash of an input does not depend on the order of keys, at any level", () => {
    fc.assert(
      fc.property(jsonValue, fc.nat(), (value, seed) => {
        let state = seed;
        const pick = () => (state = (Math.imul(state, 1103515245) + 12345) >>> 1);
        const reordered = walkInput(reorder(value, pick)).hash;
        expect(reordered).toBe(walkInput(value).hash);
      }),
      { numRuns: 3_000, seed: 5 },
    );
  });

  it("the walk finds JSON.stringify's length, and the depth bound withinDepth finds", () => {
    const odd = fc.constantFrom(undefined, Number.NaN, -0, Number.POSITIVE_INFINITY, 1e21, 0.1, -12, '\u0000"\\', "\ud800", "😀");
    const value = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: "small" },
        jsonValue,
        odd,
        fc.array(tie("node"), { maxLength: 3 }),
        fc.dictionary(fc.string({ maxLength: 3 }), tie("node"), { maxKeys: 3 }),
      ),
    })).node;
    fc.assert(
      fc.property(value, (input) => {
        const walked = walkInput(input);
        expect(walked.ordinary).toBe(true);
        expect(walked.tooDeep).toBe(false);
        expect(walked.length).toBe(JSON.stringify(input ?? {}).length);
      }),
      { numRuns: 3_000, seed: 11 },
    );
    for (const levels of [30, 31, 32, 33, 40]) {
      let input: unknown = { leaf: 1 };
      for (let i = 0; i < levels; i++) input = i % 2 ? { a: input } : [input];
      expect(walkInput(input).tooDeep).toBe(!withinDepth(input));
    }
  });

  it("the printed prefix of an input is JSON.stringify's, one character past the bound, or the whole JSON", () => {
    fc.assert(
      fc.property(jsonValue, fc.nat({ max: 120 }), (value, max) => {
        const json = JSON.stringify(value ?? {});
        const prefix = boundedJson(value ?? {}, false, max);
        if (json.length <= max) expect(prefix).toBe(json);
        else {
          expect(prefix.length).toBeGreaterThan(max);
          expect(json.startsWith(prefix)).toBe(true);
        }
        expect(boundedJson(value ?? {}, false)).toBe(json);
      }),
      { numRuns: 3_000, seed: 12 },
    );
  });

  it("nested inputs that only share their characters get different hashes", () => {
    const paths = ["/p/src/f123.ts", "/p/src/f132.ts", "/p/src/f213.ts", "/p/src/f114.ts", "/p/src/f222.ts"];
    const prints = new Set(paths.map((filePath) => walkInput({ edits: [{ filePath }] }).hash));
    expect(prints.size).toBe(paths.length);
  });
});

describe("repeated calls: order-blind registry", () => {
  it("the registry finds a call seen before exactly when its canonical form was seen", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom("read", "bash"), jsonValue, fc.nat()), { maxLength: 30 }), (calls) => {
        const registry = new CallRegistry();
        const seen = new Set<string>();
        for (const [tool, value, seed] of calls) {
          let state = seed;
          const input = reorder(value, () => (state = (Math.imul(state, 1103515245) + 12345) >>> 1));
          const key = `${tool}\u0000${canonicalJson(input ?? {})}`;
          expect(registry.seenBefore(tool, input, JSON.stringify(input ?? {}))).toBe(seen.has(key));
          seen.add(key);
        }
      }),
      { numRuns: 1_000, seed: 6 },
    );
  });

  it("plain-valued inputs (kept by canonical JSON) and all others (by hash) meet as the same call when they print the same", () => {
    const plain = fc.oneof(fc.constantFrom("x", "y", 0, 1, true, null, Number.NaN, undefined), fc.string({ maxLength: 3 }));
    const input = fc.oneof(
      fc.dictionary(fc.constantFrom("a", "b", "c", "10", "9"), plain, { maxKeys: 4 }),
      fc.dictionary(fc.constantFrom("a", "b"), fc.oneof(plain, fc.dictionary(fc.constantFrom("a", "b"), plain, { maxKeys: 2 })), { maxKeys: 3 }),
      fc.constantFrom(undefined, null, "s", [1], {}),
    );
    fc.assert(
      fc.property(fc.array(fc.tuple(input, fc.nat()), { maxLength: 40 }), (calls) => {
        const registry = new CallRegistry();
        const seen = new Set<string>();
        for (const [value, seed] of calls) {
          let state = seed;
          const call = reorder(value, () => (state = (Math.imul(state, 1103515245) + 12345) >>> 1));
          const flat = flatInputJson(call);
          const json = flat ?? JSON.stringify(call ?? {});
          const key = canonicalJson(call ?? {});
          if (flat !== undefined) expect(flatCanonicalJson(call as Record<string, unknown>, flat)).toBe(key);
          expect(registry.seenBefore("read", call, json, flat !== undefined)).toBe(seen.has(key));
          seen.add(key);
        }
      }),
      { numRuns: 2_000, seed: 7 },
    );
  });
});

describe("budget cuts: candidates sorted as numbers", () => {
  it("orders longest first, ties by position, as the comparator sort does", () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.nat({ max: 20 }), fc.nat({ max: 2 ** 31 - 1 })), { maxLength: 60 }), (lengths) => {
        const longest = lengths.reduce((a, b) => Math.max(a, b), 0);
        const expected = lengths.map((_, k) => k).sort((a, b) => lengths[b]! - lengths[a]! || a - b);
        expect(Array.from(longestFirst(lengths, lengths.length, longest))).toEqual(expected);
        expect(Array.from(longestFirst(lengths, lengths.length, 2 ** 31))).toEqual(expected); // the comparator path
      }),
      { numRuns: 2_000, seed: 8 },
    );
  });

  it("the counting sort (short bodies) orders the same way", () => {
    fc.assert(
      fc.property(fc.array(fc.nat({ max: 300 }), { maxLength: 200 }), (lengths) => {
        const longest = lengths.reduce((a, b) => Math.max(a, b), 0);
        const expected = lengths.map((_, k) => k).sort((a, b) => lengths[b]! - lengths[a]! || a - b);
        expect(Array.from(longestFirst(lengths, lengths.length, longest))).toEqual(expected);
      }),
      { numRuns: 2_000, seed: 10 },
    );
  });
});

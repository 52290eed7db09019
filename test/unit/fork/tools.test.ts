// The fast path that prints the usual tool input must print exactly what JSON.stringify prints: the
// child sees the same input line, and repeated calls are recognised by it.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { flatInputJson } from "../../../src/fork/tools.js";

const value = fc.oneof(
  fc.string({ unit: "binary" }),
  fc.string({ unit: "grapheme" }),
  fc.double(),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom('a"b', "back\\slash", "tab\there", "\u2028", "\ud800", "😀", "\u007f"),
);
const key = fc.oneof(fc.string({ unit: "binary" }), fc.constantFrom("0", "10", "2", "filePath", 'a"b', "\u0001", "-1", "1.5"));

describe("flatInputJson", () => {
  it("prints flat objects exactly as JSON.stringify does, in the same key order", () => {
    fc.assert(
      fc.property(fc.dictionary(key, value, { maxKeys: 8 }), (input) => {
        const flat = flatInputJson(input);
        const nonFinite = Object.values(input).some((v) => typeof v === "number" && !Number.isFinite(v));
        // non-finite numbers print as null: left to JSON.stringify, the only flat input not printed here
        if (nonFinite) expect(flat).toBeUndefined();
        else expect(flat).toBe(JSON.stringify(input));
      }),
      { numRuns: 2_000, seed: 11 },
    );
  });

  it("leaves everything else to JSON.stringify", () => {
    for (const input of [[], [1], { a: {} }, { a: [1] }, { a: undefined }, { a: Number.NaN }, { a: Number.POSITIVE_INFINITY }, "s", 3, null, undefined]) {
      expect(flatInputJson(input)).toBeUndefined();
    }
  });
});

import { describe, expect, it } from "vitest";
import { FORK_ERROR_PATTERNS, FORK_TIER2_LIMIT, FORK_TIER3_LIMIT } from "../../../src/fork/constants.js";
import { getToolResultTier, shouldUseHeadTail, truncateWithStrategy } from "../../../src/fork/truncation.js";
import { hasLoneSurrogate, sized } from "./builders.js";

describe("getToolResultTier", () => {
  it("keeps the 5 newest results in tier 1, the next 10 in tier 2, the rest in tier 3", () => {
    expect([0, 1, 4].map((i) => getToolResultTier(i, 40))).toEqual([1, 1, 1]);
    expect([5, 10, 14].map((i) => getToolResultTier(i, 40))).toEqual([2, 2, 2]);
    expect([15, 16, 39, 1000].map((i) => getToolResultTier(i, 2000))).toEqual([3, 3, 3, 3]);
  });

  it("does not depend on the total number of results", () => {
    expect(getToolResultTier(3, 4)).toBe(getToolResultTier(3, 400));
    expect(getToolResultTier(20)).toBe(3);
  });
});

describe("shouldUseHeadTail", () => {
  it("uses head+tail for terminal-like tools, whatever the output", () => {
    expect(shouldUseHeadTail("bash", "all good")).toBe(true);
    expect(shouldUseHeadTail("pty_spawn", "ok")).toBe(true);
    expect(shouldUseHeadTail("Exec_Command", "ok")).toBe(true); // case-insensitive on the name
  });

  it("uses head+tail when the result mentions an error pattern", () => {
    for (const pattern of FORK_ERROR_PATTERNS) expect(shouldUseHeadTail("read", `line\n${pattern} at the end`)).toBe(true);
  });

  it("matches error patterns case-sensitively, as listed", () => {
    expect(shouldUseHeadTail("read", "Failed to load")).toBe(false); // "failed" and "FAILED" only
    expect(shouldUseHeadTail("read", "Traceback (most recent call last)")).toBe(false);
  });

  it("uses head-only otherwise", () => {
    expect(shouldUseHeadTail("read", "plain file content")).toBe(false);
    expect(shouldUseHeadTail("grep", "")).toBe(false);
  });
});

describe("truncateWithStrategy", () => {
  it("returns a text within its limit untouched", () => {
    const text = sized(500);
    expect(truncateWithStrategy(text, 500, true)).toBe(text);
    expect(truncateWithStrategy(text, 501, false)).toBe(text);
    expect(truncateWithStrategy(text, Number.POSITIVE_INFINITY, false)).toBe(text);
  });

  it("head-only keeps the first `limit` chars followed by the exact separator", () => {
    const text = sized(1200);
    expect(truncateWithStrategy(text, FORK_TIER3_LIMIT, false)).toBe(`${text.slice(0, 500)}\n...[truncated 700 chars]...`);
  });

  it("head+tail keeps 80% from the start and 20% from the end with the exact separator", () => {
    const text = sized(10_000, "0123456789abcdefghijklmnopq");
    const cut = truncateWithStrategy(text, FORK_TIER2_LIMIT, true);
    expect(cut).toBe(`${text.slice(0, 2400)}\n...[truncated 7000 chars]...\n${text.slice(-600)}`);
  });

  it("never splits a surrogate pair at the head cut and counts what it really removed", () => {
    const text = `${"a".repeat(499)}😀${"b".repeat(600)}`; // the emoji occupies 499–500
    const cut = truncateWithStrategy(text, 500, false);
    expect(hasLoneSurrogate(cut)).toBe(false);
    expect(cut).toBe(`${"a".repeat(499)}\n...[truncated ${text.length - 499} chars]...`);
  });

  it("never splits a surrogate pair at the tail cut", () => {
    // tail of 100 chars starts at length-100; put the emoji's low half exactly there
    const text = `${"a".repeat(1000)}😀${"b".repeat(99)}`;
    const cut = truncateWithStrategy(text, 500, true);
    expect(hasLoneSurrogate(cut)).toBe(false);
    expect(cut.endsWith(`\n${"b".repeat(99)}`)).toBe(true);
    expect(cut).toContain(`[truncated ${text.length - 400 - 99} chars]`);
  });

  it("keeps emoji-only text well-formed at every limit", () => {
    const text = "😀".repeat(300);
    for (let limit = 0; limit < 40; limit++) {
      expect(hasLoneSurrogate(truncateWithStrategy(text, limit, false))).toBe(false);
      expect(hasLoneSurrogate(truncateWithStrategy(text, limit, true))).toBe(false);
    }
  });
});

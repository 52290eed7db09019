// The shared formatter (src/format.ts): durations and token counts as the server's texts and the
// TUI's lines show them. One table per form; the two duration forms differ on purpose (see the module).

import { describe, expect, it } from "vitest";
import { formatDuration, formatElapsed, formatTokens, formatUsage } from "../../src/format.js";

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

describe("durations", () => {
  // [milliseconds, server's texts (formatDuration), TUI (formatElapsed)]
  const table: [number, string, string][] = [
    [0, "0s", "0s"],
    [-5, "0s", "0s"], // a clock that went back never shows a negative time
    [59 * SECOND, "59s", "59s"],
    [59.6 * SECOND, "1m 0s", "59s"], // the server rounds, the TUI cuts
    [61 * SECOND, "1m 1s", "1m01s"],
    [12 * MINUTE + 7 * SECOND, "12m 7s", "12m07s"],
    [HOUR + 2 * MINUTE + 30 * SECOND, "1h 2m", "1h02m"],
    [26 * HOUR + 5 * MINUTE, "26h 5m", "26h05m"],
  ];
  it.each(table)("%d ms reads %j in the server's texts and %j in the TUI", (ms, server, tui) => {
    expect(formatDuration(ms)).toBe(server);
    expect(formatElapsed(ms)).toBe(tui);
  });
});

describe("token counts", () => {
  const table: [number, string][] = [
    [0, "0"],
    [999, "999"],
    [1_000, "1.0k"],
    [1_234, "1.2k"],
    [9_999, "10.0k"],
    [12_345, "12k"],
    [999_499, "999k"],
    [1_234_567, "1.2M"],
    [25_000_000, "25.0M"],
  ];
  it.each(table)("%d tokens read %j", (n, text) => {
    expect(formatTokens(n)).toBe(text);
  });
});

describe("the server's usage line", () => {
  const none = { input: 0, output: 0, reasoning: 0, cacheRead: 0, cacheWrite: 0, cost: 0 };
  const table: [string, typeof none | undefined, string][] = [
    ["no usage reported", undefined, ""],
    ["nothing used yet", none, ""],
    ["input and output", { ...none, input: 999, output: 1_000 }, "999 in · 1.0k out"],
    [
      "cache reads counted as input and named",
      { ...none, input: 2_345, cacheRead: 10_000, cacheWrite: 1, output: 40, reasoning: 2 },
      "12k in (10k from cache) · 42 out",
    ],
    ["with a cost", { ...none, input: 1_234_567, output: 5, cost: 0.01234 }, "1.2M in · 5 out · $0.0123"],
  ];
  it.each(table)("%s", (_, usage, text) => {
    expect(formatUsage(usage)).toBe(text);
  });
});

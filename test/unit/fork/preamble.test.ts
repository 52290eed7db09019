import { describe, expect, it } from "vitest";
import { FORK_PREAMBLE_FILE_LIMIT } from "../../../src/fork/constants.js";
import { buildForkContext, buildForkPreamble } from "../../../src/fork/index.js";
import { createEmptyStats } from "../../../src/fork/stats.js";
import { History, sized } from "./builders.js";

describe("buildForkPreamble", () => {
  it("follows the design's template for an untouched history", () => {
    const stats = { ...createEmptyStats(4), tierDistribution: { tier1: 2, tier2: 0, tier3: 0 } };
    const text = buildForkPreamble(stats);
    expect(text.startsWith("You are working with forked context from a parent agent session.\n")).toBe(true);
    expect(text).toContain("Context processing applied:\n- No compaction detected\n");
    expect(text).toContain("- Tool results: 2 full, 0 truncated to 3000 chars, 0 truncated to 500 chars\n");
    expect(text).toContain("- All messages preserved\n");
    expect(text.endsWith("If you need complete file contents or detailed results, re-read the files directly.")).toBe(true);
    expect(text).not.toMatch(/superseded|repeated later|cleared|Files the parent/);
  });

  it("tells the child it is the forked child of a background task and must not delegate again", () => {
    const text = buildForkPreamble(createEmptyStats());
    expect(text).toContain("forked child of a background_task call");
    expect(text).toContain("do the task yourself");
    expect(text).toContain("Do not delegate it again and do not start background tasks");
  });

  it("reports compaction, removal, repeated and cleared results when they happened", () => {
    const stats = {
      ...createEmptyStats(),
      compactionDetected: true,
      removedMessages: 12,
      supersededResults: 3,
      clearedResults: 4,
      clampedMessages: 1,
      tierDistribution: { tier1: 5, tier2: 10, tier3: 7 },
    };
    const text = buildForkPreamble(stats);
    expect(text).toContain("- Compaction summary included (messages before compaction removed)");
    expect(text).toContain("- Tool results: 5 full, 10 truncated to 3000 chars, 7 truncated to 500 chars");
    expect(text).toContain("- 12 oldest messages removed to fit 200000 char budget");
    expect(text).toContain("- 3 results of calls repeated later replaced by a pointer to the newer result");
    expect(text).toContain("- 4 old tool results were already cleared in the parent session");
    expect(text).toContain("- 1 messages cut in the middle to fit 200000 char budget");
  });

  it("names the files read and modified, at most FORK_PREAMBLE_FILE_LIMIT each, then 'and N more'", () => {
    const many = Array.from({ length: FORK_PREAMBLE_FILE_LIMIT + 3 }, (_, i) => `/p/f${i}.ts`);
    const text = buildForkPreamble({ ...createEmptyStats(), filesRead: many, filesModified: ["/p/x.ts"] });
    expect(text).toContain(`Files the parent read: ${many.slice(0, FORK_PREAMBLE_FILE_LIMIT).join(", ")} and 3 more`);
    expect(text).not.toContain(`/p/f${FORK_PREAMBLE_FILE_LIMIT}.ts`);
    expect(text).toContain("Files the parent modified: /p/x.ts\n");
  });

  it("is what buildForkContext returns for its own stats", () => {
    const h = new History();
    h.user("go");
    for (let i = 0; i < 8; i++) h.assistant([h.tool({ tool: "read", input: { filePath: `/p/${i}` }, output: sized(4000) })]);
    const context = buildForkContext(h.messages);
    expect(context.preamble).toBe(buildForkPreamble(context.stats));
    expect(context.preamble).toContain("- Tool results: 5 full, 3 truncated to 3000 chars, 0 truncated to 500 chars");
  });
});

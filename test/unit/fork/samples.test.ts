// The pipeline on histories recorded from a real opencode 1.18.33 server.
import { describe, expect, it } from "vitest";
import aborted from "../../fixtures/session.messages.aborted.json" with { type: "json" };
import afterCompaction from "../../fixtures/session.messages.afterCompaction.json" with { type: "json" };
import full from "../../fixtures/session.messages.full.json" with { type: "json" };
import { buildForkContext } from "../../../src/fork/index.js";
import type { SessionMessage } from "../../../src/fork/types.js";

const fullMessages = full.data as unknown as SessionMessage[];
const compactedMessages = afterCompaction.data as unknown as SessionMessage[];
const abortedMessages = aborted.data as unknown as SessionMessage[];

describe("recorded session (no compaction)", () => {
  const { text, preamble, stats } = buildForkContext(fullMessages);

  it("contains every tool output of the session whole", () => {
    const outputs = fullMessages.flatMap((m) => m.parts.flatMap((p) => (p.type === "tool" && p.state.status === "completed" ? [p.state.output] : [])));
    expect(outputs.length).toBe(4);
    for (const output of outputs) expect(text).toContain(output);
  });

  it("contains every user prompt and assistant answer, and no step or metadata noise", () => {
    expect(text).toContain("[user]\nHi there");
    expect(text).toContain("[assistant]\nHello from mock (Hi there)");
    expect(text).toContain("[user]\nasync hello");
    expect(text).not.toContain("7c99a8aaf892c2c055ec9d5e4eeb35d311441d4f"); // step snapshots
    expect(text).not.toContain('"preview"'); // read metadata
    expect(stats).toMatchObject({ originalCount: 18, finalCount: 18, removedMessages: 0, compactionDetected: false, compactionSliceIndex: -1 });
  });

  it("prints each call with its input and a result line", () => {
    expect(text).toContain('[tool: read] {"filePath":"/home/dev/project/hello.txt"}\n[result]\n<path>/home/dev/project/hello.txt</path>');
    expect(text).toContain('[tool: probe_tool] {"msg":"hi"}\n[result]\nprobe output for hi');
  });

  it("names the file the parent read in the preamble", () => {
    expect(stats.filesRead).toEqual(["/home/dev/project/hello.txt"]);
    expect(preamble).toContain("Files the parent read: /home/dev/project/hello.txt");
    expect(preamble).toContain("No compaction detected");
  });
});

describe("recorded session after a compaction", () => {
  const { text, preamble, stats } = buildForkContext(compactedMessages);

  it("detects the compaction and keeps only what the parent model sees", () => {
    expect(stats.compactionDetected).toBe(true);
    expect(stats.compactionSliceIndex).toBe(18);
    expect(text).toContain("## Goal\n- mock goal");
    expect(text).toContain("[assistant: compaction summary]");
    expect(text).not.toContain("Hello from mock (Hi there)");
    expect(text).not.toContain("CALL_READ please");
    expect(preamble).toContain("Compaction summary included (messages before compaction removed)");
  });

  it("still lists files read before the compaction", () => {
    expect(stats.filesRead).toEqual(["/home/dev/project/hello.txt"]);
  });
});

describe("recorded aborted session", () => {
  it("keeps the text the aborted answer had produced", () => {
    const { text } = buildForkContext(abortedMessages);
    expect(text).toContain("[user]\nSLOW please\n\n[assistant]\nslow slow");
  });
});

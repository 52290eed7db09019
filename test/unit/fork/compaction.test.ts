import { describe, expect, it } from "vitest";
import { findCompactionBoundary } from "../../../src/fork/compaction.js";
import { buildForkContext, processMessagesForFork } from "../../../src/fork/index.js";
import { History } from "./builders.js";

function texts(h: History): string[] {
  return processMessagesForFork(h.messages).messages.map((m) => m.parts.map((p) => (p.kind === "tool" ? `${p.tool}:${p.result}` : p.text)).join("|"));
}

describe("findCompactionBoundary", () => {
  it("returns -1 without a compaction", () => {
    const h = new History();
    h.turn("hello", "hi");
    expect(findCompactionBoundary(h.messages).index).toBe(-1);
  });

  it("finds the compaction request and its completed summary", () => {
    const h = new History();
    h.turn("old question", "old answer");
    h.compactionRequest();
    h.summary("## Goal\n- summary");
    h.turn("new question", "new answer");
    expect(findCompactionBoundary(h.messages)).toEqual({ index: 2, summaryIndex: 3, tailStartIndex: -1 });
  });

  it("uses the latest completed compaction when there are several", () => {
    const h = new History();
    h.turn("q1", "a1");
    h.compactionRequest();
    h.summary("first summary");
    h.turn("q2", "a2");
    h.compactionRequest();
    h.summary("second summary");
    h.turn("q3", "a3");
    expect(findCompactionBoundary(h.messages).index).toBe(6);
    expect(texts(h)).toEqual([expect.stringContaining("What did we do so far?"), "second summary", "q3", "a3"]);
  });

  it("ignores a later summary that errored and falls back to the previous completed one", () => {
    const h = new History();
    h.turn("q1", "a1");
    h.compactionRequest();
    h.summary("good summary");
    h.turn("q2", "a2");
    h.compactionRequest();
    h.summary("broken", { error: { name: "UnknownError", data: { message: "tool call in compaction" } } });
    expect(findCompactionBoundary(h.messages)).toMatchObject({ index: 2, summaryIndex: 3 });
  });

  it("ignores a summary that has not finished", () => {
    const h = new History();
    h.turn("q1", "a1");
    h.compactionRequest();
    h.summary("still streaming", { finish: undefined });
    expect(findCompactionBoundary(h.messages).index).toBe(-1);
  });

  it("ignores summary:true whose parent is not a compaction request", () => {
    const h = new History();
    h.user("plain user message");
    h.summary("not a real summary");
    expect(findCompactionBoundary(h.messages).index).toBe(-1);
  });

  it("finds the parent among several: summaries of plain messages, a missing parent, a parent after its summary, duplicate ids", () => {
    const h = new History();
    h.turn("q0", "a0");
    const tail = h.user("kept tail");
    const request = h.compactionRequest(tail.info.id);
    const good = h.summary("the real summary");
    (good.info as { parentID?: string }).parentID = request.info.id;
    const plain = h.user("plain user message");
    h.assistant(["answer"]);
    for (const parentID of [plain.info.id, plain.info.id, "msg_missing", undefined]) {
      const bogus = h.summary("not a real summary");
      (bogus.info as { parentID?: string }).parentID = parentID;
    }
    // a summary naming a message stored after it, and an id used twice (the first one counts)
    const early = h.summary("names a later message");
    const later = h.user("later");
    (early.info as { parentID?: string }).parentID = later.info.id;
    h.user("same id as the request").info.id = request.info.id;
    expect(findCompactionBoundary(h.messages)).toEqual({ index: 3, summaryIndex: 4, tailStartIndex: 2 });
  });

  it("does not mistake a user message's summary object for a compaction summary", () => {
    const h = new History();
    h.turn("q", "a"); // user infos carry summary: { diffs: [] }
    expect(h.messages[0]!.info.summary).toEqual({ diffs: [] });
    expect(findCompactionBoundary(h.messages).index).toBe(-1);
  });
});

describe("Stage 1 window", () => {
  it("drops everything before the compaction and keeps what follows the summary", () => {
    const h = new History();
    h.turn("ancient question", "ancient answer");
    h.compactionRequest();
    h.summary("## Goal\n- the summary");
    h.turn("fresh question", "fresh answer");
    const { text, stats } = buildForkContext(h.messages);
    expect(stats.compactionDetected).toBe(true);
    expect(stats.compactionSliceIndex).toBe(2);
    expect(text).not.toContain("ancient");
    expect(text).toContain("[user: compaction request]");
    expect(text).toContain("[assistant: compaction summary]\n## Goal\n- the summary");
    expect(text.indexOf("the summary")).toBeLessThan(text.indexOf("fresh question"));
  });

  it("keeps the retained tail (tail_start_id) after the summary, in the parent model's order", () => {
    const h = new History();
    h.turn("dropped question", "dropped answer");
    const tailStart = h.user("tail question");
    h.assistant(["tail answer"]);
    h.compactionRequest(tailStart.info.id);
    h.summary("SUMMARY");
    h.turn("after question", "after answer");
    expect(findCompactionBoundary(h.messages)).toEqual({ index: 4, summaryIndex: 5, tailStartIndex: 2 });
    expect(texts(h)).toEqual([expect.stringContaining("What did we do so far?"), "SUMMARY", "tail question", "tail answer", "after question", "after answer"]);
  });

  it("keeps no tail when tail_start_id is unknown", () => {
    const h = new History();
    h.turn("dropped question", "dropped answer");
    h.compactionRequest("msg_does_not_exist");
    h.summary("SUMMARY");
    expect(texts(h)).toEqual([expect.stringContaining("What did we do so far?"), "SUMMARY"]);
  });

  it("shows a failed compaction after the boundary as a request, not as a summary", () => {
    const h = new History();
    h.turn("q1", "a1");
    h.compactionRequest();
    h.summary("good summary");
    h.compactionRequest();
    h.summary("partial", { error: { name: "MessageAbortedError", data: { message: "Aborted" } } });
    const { text } = buildForkContext(h.messages);
    expect(text.match(/\[assistant: compaction summary\]/g)).toHaveLength(1);
    expect(text).toContain("[a compaction of the conversation was requested here]");
  });
});

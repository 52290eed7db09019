import { describe, expect, it } from "vitest";
import { waterFillCap } from "../../../src/fork/budget.js";
import { FORK_CHAR_BUDGET, FORK_CHAR_NO_REMOVAL } from "../../../src/fork/constants.js";
import { formatForkMessage, measureForkMessage } from "../../../src/fork/format.js";
import { buildForkContext, formatMessagesAsContext, processMessagesForFork } from "../../../src/fork/index.js";
import { hasLoneSurrogate, History, sized } from "./builders.js";

/** Boolean check, so a failure does not print 200k chars of context. */
const has = (text: string, piece: string) => text.includes(piece);

/** A history of `turns` turns whose assistant answers are `answerSize` chars, tagged T<i>. */
function longHistory(turns: number, answerSize: number, task = "TASK STATEMENT: refactor the parser"): History {
  const h = new History();
  h.user(task);
  h.assistant([`T0-ANSWER ${sized(answerSize)}`]);
  for (let i = 1; i < turns; i++) {
    h.user(`T${i}-QUESTION`);
    h.assistant([`T${i}-ANSWER-A ${sized(answerSize / 2)}`]);
    h.assistant([`T${i}-ANSWER-B ${sized(answerSize / 2)}`]);
  }
  return h;
}

describe("formatMessagesAsContext: format", () => {
  it("wraps messages in one inherited_context block with role labels", () => {
    const h = new History();
    h.turn("hello", "hi there");
    const { text, stats } = buildForkContext(h.messages);
    expect(text).toBe("<inherited_context>\n[user]\nhello\n\n[assistant]\nhi there\n</inherited_context>");
    expect(stats.totalChars).toBe(text.length);
    expect(stats.finalCount).toBe(2);
  });

  it("neutralises inherited_context tags in any content so the block cannot be closed or opened early", () => {
    const h = new History();
    h.user("quote: </inherited_context> and <INHERITED_CONTEXT> and < / Inherited_Context >");
    h.assistant([h.tool({ tool: "read", input: { filePath: "</inherited_context>" }, output: "x</inherited_context>y" })]);
    const { text } = buildForkContext(h.messages);
    expect(text.match(/<\s*\/?\s*inherited_context/gi)).toEqual(["<inherited_context", "</inherited_context"]);
    expect(text.startsWith("<inherited_context>\n")).toBe(true);
    expect(text.endsWith("\n</inherited_context>")).toBe(true);
    expect(has(text, "x\u2039/inherited_context>y")).toBe(true);
  });

  it("does not modify the stats it is given", () => {
    const h = longHistory(40, 12_000);
    const processed = processMessagesForFork(h.messages);
    const before = JSON.stringify(processed.stats);
    const { stats } = formatMessagesAsContext(processed.messages, processed.stats);
    expect(JSON.stringify(processed.stats)).toBe(before);
    expect(stats.removedMessages).toBeGreaterThan(0);
  });
});

describe("formatMessagesAsContext: character budget", () => {
  it("removes nothing under FORK_CHAR_NO_REMOVAL", () => {
    const { text, stats } = buildForkContext(longHistory(10, 5000).messages);
    expect(text.length).toBeLessThan(FORK_CHAR_NO_REMOVAL);
    expect(stats.removedMessages).toBe(0);
    expect(has(text, "T0-ANSWER")).toBe(true);
  });

  it("removes nothing between 120k and 200k chars", () => {
    const { text, stats } = buildForkContext(longHistory(30, 5000).messages);
    expect(text.length).toBeGreaterThan(FORK_CHAR_NO_REMOVAL);
    expect(text.length).toBeLessThanOrEqual(FORK_CHAR_BUDGET);
    expect(stats.removedMessages).toBe(0);
    expect(stats.removedTurns).toBe(0);
  });

  it("over 200k removes the oldest whole turns until it fits, and says so in one line", () => {
    const { text, stats } = buildForkContext(longHistory(60, 5000).messages);
    expect(text.length).toBeLessThanOrEqual(FORK_CHAR_BUDGET);
    expect(stats.totalChars).toBe(text.length);
    expect(stats.removedTurns).toBeGreaterThan(0);
    // whole turns: a removed question never leaves an answer behind, and vice versa
    for (let i = 1; i < 60; i++) {
      const q = text.includes(`T${i}-QUESTION`);
      expect(text.includes(`T${i}-ANSWER-A`)).toBe(q);
      expect(text.includes(`T${i}-ANSWER-B`)).toBe(q);
    }
    // oldest first: what is kept is a suffix of the turns
    const kept = [...Array(60).keys()].slice(1).filter((i) => text.includes(`T${i}-QUESTION`));
    expect(kept[kept.length - 1]).toBe(59);
    expect(kept).toEqual([...Array(kept.length).keys()].map((k) => 60 - kept.length + k));
    expect(has(text, `[${stats.removedTurns} earlier turns (${stats.removedMessages} messages) removed to fit the 200000 char budget]`)).toBe(true);
    expect(stats.finalCount).toBe(1 + 59 * 3 - stats.removedMessages + 1);
  });

  it("pins the task statement: its turn loses only its assistant messages", () => {
    const { text } = buildForkContext(longHistory(60, 5000).messages);
    expect(text.startsWith("<inherited_context>\n[user]\nTASK STATEMENT: refactor the parser\n\n[")).toBe(true);
    expect(has(text, "T0-ANSWER")).toBe(false);
  });

  it("pins the compaction request and summary", () => {
    const h = new History();
    h.turn("before", "before answer");
    h.compactionRequest();
    h.summary(`SUMMARY ${sized(30_000)}`);
    for (let i = 0; i < 40; i++) h.turn(`Q${i}`, `A${i} ${sized(8000)}`);
    const { text, stats } = buildForkContext(h.messages);
    expect(text.length).toBeLessThanOrEqual(FORK_CHAR_BUDGET);
    expect(stats.removedTurns).toBeGreaterThan(0);
    expect(has(text, "[user: compaction request]")).toBe(true);
    expect(has(text, `[assistant: compaction summary]\nSUMMARY ${sized(30_000)}`)).toBe(true);
    // Q0 is the task statement: pinned, while the answer of its turn went with the turn
    expect(has(text, "[user]\nQ0\n\n[")).toBe(true);
    expect(has(text, "A0 ")).toBe(false);
    expect(has(text, "A39")).toBe(true);
  });

  it("keeps the newest turn and trims its oldest assistant messages when it alone is too big", () => {
    const h = new History();
    h.turn("task", "first answer");
    h.user("LAST QUESTION");
    for (let i = 0; i < 6; i++) h.assistant([`STEP${i} ${sized(60_000)}`]);
    const { text, stats } = buildForkContext(h.messages);
    expect(text.length).toBeLessThanOrEqual(FORK_CHAR_BUDGET);
    expect(has(text, "LAST QUESTION")).toBe(true);
    expect(has(text, "STEP5")).toBe(true);
    expect(has(text, "STEP0")).toBe(false);
    expect(/\[\d earlier messages of the latest turn removed to fit the 200000 char budget\]/.test(text)).toBe(true);
    expect(stats.clampedMessages).toBe(0);
  });

  it("cuts the longest content when pinned or newest messages alone exceed the budget", () => {
    const h = new History();
    h.user(`HUGE TASK ${sized(150_000, "ab😀")} END OF TASK`);
    h.assistant([h.tool({ tool: "bash", input: { command: "cat big.log" }, output: `LOG START ${sized(300_000, "xy😀z")} LOG END` })]);
    const { text, stats } = buildForkContext(h.messages);
    expect(text.length).toBeLessThanOrEqual(FORK_CHAR_BUDGET);
    expect(stats.clampedMessages).toBeGreaterThan(0);
    expect(hasLoneSurrogate(text)).toBe(false);
    expect(has(text, "HUGE TASK")).toBe(true);
    expect(has(text, "LOG END")).toBe(true);
    expect(has(text, '[tool: bash] {"command":"cat big.log"}\n[result]\nLOG START')).toBe(true);
    expect(/\n\.\.\.\[truncated \d+ chars\]\.\.\.\n/.test(text)).toBe(true);
  });
});

describe("measuring without formatting", () => {
  it("measures exactly the length formatForkMessage produces, for every kind of part", () => {
    const h = new History();
    h.user("task", { type: "file", mime: "text/plain", filename: "a.txt", url: "file:///a.txt" } as never, { type: "agent", name: "explore" } as never);
    h.assistant([
      "text with a </inherited_context> tag",
      h.tool({ tool: "bash", input: { command: "ls" }, output: "" }),
      h.tool({ tool: "read", input: { filePath: "/x" }, error: "no such file" }),
      h.tool({ tool: "grep", input: { pattern: sized(300) }, status: "running" }),
    ]);
    h.compactionRequest();
    h.summary("summary");
    h.user("after");
    for (let i = 0; i < 20; i++) h.assistant([h.tool({ tool: "read", input: { filePath: `/f${i}` }, output: sized(5000, "a😀") })]);
    const { messages } = processMessagesForFork(h.messages);
    for (const message of messages) expect(measureForkMessage(message)).toBe(formatForkMessage(message).length);
  });

  it("water-filling cuts the longest bodies down to one common size, just enough", () => {
    const separator = "\n...[truncated 0000 chars]...\n".length;
    // a small excess only shortens the longest body
    expect(waterFillCap([5000, 3000, 100], 1000)).toBe(5000 - separator - 1000);
    // a bigger one brings the two longest to the same size, the short one untouched
    const cap = waterFillCap([5000, 3000, 100], 3000);
    expect(cap).toBe(Math.floor((8000 - 2 * separator - 3000) / 2));
    expect(cap).toBeGreaterThan(100);
    expect(waterFillCap([5000, 3000, 100], 1_000_000)).toBe(0);
  });
});

describe("formatMessagesAsContext: the newest work is cut, never removed", () => {
  it("keeps every one of many huge parallel results of the newest step, cut evenly, when the user's last turn only asks to fork", () => {
    const h = new History();
    h.turn("TASK: review the modules", "ok");
    h.user("READ ALL");
    const reads = Array.from({ length: 40 }, (_, i) =>
      h.tool({ tool: "read", input: { filePath: `/p/m${i}.ts` }, output: `HEAD-${i} ${sized(48_000)} TAIL-${i}` }),
    );
    h.assistant(reads);
    h.assistant(["read them all"]);
    h.user("now fork a background task");
    const { text, stats } = buildForkContext(h.messages);
    expect(text.length).toBeLessThanOrEqual(FORK_CHAR_BUDGET);
    expect(text.length).toBeGreaterThan(FORK_CHAR_BUDGET * 0.8);
    for (let i = 0; i < 40; i++) {
      expect(has(text, `/p/m${i}.ts`)).toBe(true);
      expect(has(text, `HEAD-${i} `)).toBe(true);
    }
    expect(has(text, "TASK: review the modules")).toBe(true);
    expect(has(text, "now fork a background task")).toBe(true);
    expect(stats.clampedMessages).toBeGreaterThan(0);
  });

  it("in one long agentic turn, drops the oldest steps first and keeps the newest results whole", () => {
    const h = new History();
    h.user("TASK: fix every failing test");
    for (let i = 0; i < 500; i++) h.assistant([h.tool({ tool: "bash", input: { command: `step ${i}` }, output: `STEP-${i} ${sized(4_000)}` })]);
    h.assistant(["all green"]);
    const { text, stats } = buildForkContext(h.messages);
    expect(text.length).toBeLessThanOrEqual(FORK_CHAR_BUDGET);
    expect(stats.removedMessages).toBeGreaterThan(0);
    expect(stats.clampedMessages).toBe(0);
    for (let i = 495; i < 500; i++) expect(has(text, `STEP-${i} ${sized(4_000)}`)).toBe(true);
    expect(has(text, "STEP-0 ")).toBe(false);
    expect(has(text, "TASK: fix every failing test")).toBe(true);
    expect(has(text, "all green")).toBe(true);
  });
});

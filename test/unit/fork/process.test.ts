import { describe, expect, it } from "vitest";
import { FORK_CLEARED_OUTPUT, FORK_TIER2_LIMIT, FORK_TIER3_LIMIT } from "../../../src/fork/constants.js";
import { buildForkContext, processMessagesForFork, type ForkPart } from "../../../src/fork/index.js";
import { History, sized } from "./builders.js";

type ToolForkPart = Extract<ForkPart, { kind: "tool" }>;

function toolParts(h: History, options = {}): ToolForkPart[] {
  return processMessagesForFork(h.messages, options).messages.flatMap((m) => m.parts.filter((p): p is ToolForkPart => p.kind === "tool"));
}

/** n read calls on distinct files, oldest first, each with an output of `size` chars. */
function readCalls(h: History, n: number, size: number): void {
  h.user("read everything");
  for (let i = 0; i < n; i++) h.assistant([h.tool({ tool: "read", input: { filePath: `/p/f${i}.ts` }, output: `#${i}#${sized(size)}` })]);
}

describe("processMessagesForFork: normal conversation", () => {
  it("keeps user and assistant text, tool calls and results, and leaves out steps and reasoning", () => {
    const h = new History();
    h.user("Fix the failing test");
    h.assistant([
      { type: "reasoning", text: "SECRET THOUGHTS", time: { start: 1 } } as never,
      "Looking.",
      h.tool({ tool: "bash", input: { command: "npm test" }, output: "1 failed" }),
    ]);
    const { messages, stats } = processMessagesForFork(h.messages);
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(messages[1]!.parts).toEqual([
      { kind: "text", text: "Looking." },
      expect.objectContaining({ kind: "tool", tool: "bash", input: '{"command":"npm test"}', result: "1 failed", status: "completed", tier: 1 }),
    ]);
    expect(stats.omittedParts).toBe(3); // reasoning, step-start, step-finish
    expect(buildForkContext(h.messages).text).not.toContain("SECRET THOUGHTS");
  });

  it("keeps synthetic text (the model saw it) and drops ignored text (it did not)", () => {
    const h = new History();
    h.user({ text: "visible synthetic note", synthetic: true }, { text: "IGNORED NOTE", ignored: true }, "real prompt");
    const { text } = buildForkContext(h.messages);
    expect(text).toContain("visible synthetic note");
    expect(text).toContain("real prompt");
    expect(text).not.toContain("IGNORED NOTE");
  });

  it("prints a file part as one line naming it, and subtask/agent parts as short lines", () => {
    const h = new History();
    h.user(
      "look at these",
      { type: "file", mime: "image/png", filename: "shot.png", url: "data:image/png;base64,AAAA" } as never,
      { type: "file", mime: "text/plain", url: "file:///home/dev/project/a.txt" } as never,
      { type: "agent", name: "explore" } as never,
      { type: "subtask", prompt: "long prompt", description: "Investigate foo", agent: "general" } as never,
    );
    const { text } = buildForkContext(h.messages);
    expect(text).toContain("[file: shot.png (image/png)]");
    expect(text).toContain("[file: file:///home/dev/project/a.txt (text/plain)]");
    expect(text).not.toContain("base64");
    expect(text).toContain("[agent: explore]");
    expect(text).toContain("[subtask for agent general: Investigate foo]");
  });

  it("drops a message left with nothing to print", () => {
    const h = new History();
    h.user("q");
    h.assistant([{ type: "reasoning", text: "only thinking", time: { start: 1 } } as never]);
    expect(processMessagesForFork(h.messages).messages).toHaveLength(1);
  });

  it("skips entries that are not messages", () => {
    const h = new History();
    h.turn("hello", "hi");
    const messages = [undefined, ...h.messages, { parts: [] }] as unknown as typeof h.messages;
    const { messages: out, stats } = processMessagesForFork(messages);
    expect(out.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(stats.originalCount).toBe(4);
  });

  it("does not modify its input", () => {
    const h = new History();
    readCalls(h, 20, 4000);
    const before = JSON.stringify(h.messages);
    buildForkContext(h.messages, { excludeCallID: "call_3" });
    expect(JSON.stringify(h.messages)).toBe(before);
  });
});

describe("processMessagesForFork: short conversation", () => {
  it("keeps everything of a short conversation as it was", () => {
    const h = new History();
    h.turn("What is in a.ts?", "Let me look.");
    h.assistant([h.tool({ tool: "read", input: { filePath: "/p/a.ts" }, output: "export const a = 1;" })]);
    h.assistant(["It exports a = 1."]);
    const { messages, stats } = processMessagesForFork(h.messages);
    expect(messages).toHaveLength(4);
    expect(stats).toMatchObject({ originalCount: 4, finalCount: 4, truncatedResults: 0, tierDistribution: { tier1: 1, tier2: 0, tier3: 0 } });
    expect(messages[2]!.parts[0]).toMatchObject({ result: "export const a = 1;", input: '{"filePath":"/p/a.ts"}' });
  });
});

describe("processMessagesForFork: graduated truncation", () => {
  it("keeps the 5 newest results whole, cuts the next 10 to 3000 and the rest to 500 chars", () => {
    const h = new History();
    readCalls(h, 20, 10_000);
    const parts = toolParts(h);
    const { stats } = processMessagesForFork(h.messages);
    expect(parts.map((p) => p.tier)).toEqual([...Array(5).fill(3), ...Array(10).fill(2), ...Array(5).fill(1)]);
    for (const p of parts.slice(15)) expect(p.result.length).toBe(10_000 + `#${p.input.match(/f(\d+)/)![1]}#`.length);
    for (const p of parts.slice(5, 15)) expect(p.result).toMatch(new RegExp(`^.{${FORK_TIER2_LIMIT}}\\n\\.\\.\\.\\[truncated \\d+ chars\\]\\.\\.\\.$`, "s"));
    for (const p of parts.slice(0, 5)) expect(p.result.startsWith(p.result.slice(0, FORK_TIER3_LIMIT))).toBe(true);
    for (const p of parts.slice(0, 5)) expect(p.result.length).toBeLessThan(FORK_TIER3_LIMIT + 40);
    expect(stats.tierDistribution).toEqual({ tier1: 5, tier2: 10, tier3: 5 });
    expect(stats.truncatedResults).toBe(15);
    expect(stats.headTailApplied).toBe(0);
  });

  it("cuts tool inputs per tier: 500 / 200 / 100 chars", () => {
    const h = new History();
    h.user("write");
    for (let i = 0; i < 16; i++) h.assistant([h.tool({ tool: "write", input: { filePath: `/p/${i}`, content: sized(2000) }, output: "ok" })]);
    const parts = toolParts(h);
    const head = (p: ToolForkPart) => p.input.split("\n...[truncated")[0]!.length;
    expect(head(parts[15]!)).toBe(500);
    expect(head(parts[5]!)).toBe(200);
    expect(head(parts[0]!)).toBe(100);
  });

  it("uses head+tail for bash output and for results mentioning an error", () => {
    const h = new History();
    h.user("go");
    h.assistant([h.tool({ tool: "bash", input: { command: "make" }, output: `${sized(5000)}EXIT 2` })]);
    h.assistant([h.tool({ tool: "read", input: { filePath: "/a" }, output: `${sized(5000)}\nTypeError: boom` })]);
    h.assistant([h.tool({ tool: "read", input: { filePath: "/b" }, output: `${sized(5000)}THE END` })]);
    for (let i = 0; i < 5; i++) h.assistant([h.tool({ tool: "glob", input: { pattern: `${i}` }, output: "x" })]);
    const [bash, errorRead, plainRead] = toolParts(h);
    expect(bash!.result.endsWith("EXIT 2")).toBe(true);
    expect(errorRead!.result.endsWith("TypeError: boom")).toBe(true);
    expect(plainRead!.result.endsWith("chars]...")).toBe(true);
    expect(processMessagesForFork(h.messages).stats.headTailApplied).toBe(2);
  });

  it("reads an error's text from state.error", () => {
    const h = new History();
    h.user("go");
    h.assistant([h.tool({ tool: "bash", input: { command: "rm -rf /" }, error: "permission denied by user" })]);
    const { text } = buildForkContext(h.messages);
    expect(text).toContain('[tool: bash] {"command":"rm -rf /"}\n[error]\npermission denied by user');
  });

  it("ignores state.metadata: the model never saw it", () => {
    const h = new History();
    h.user("go");
    h.assistant([
      h.tool({ tool: "edit", input: { filePath: "/a.ts" }, output: "Edit applied.", metadata: { diff: "METADATA DIFF", preview: "METADATA PREVIEW" } }),
    ]);
    const { text } = buildForkContext(h.messages);
    expect(text).toContain("Edit applied.");
    expect(text).not.toContain("METADATA");
  });
});

describe("processMessagesForFork: dedup, cleared and interrupted calls", () => {
  it("keeps only the newest result of an identical call (key order does not matter)", () => {
    const h = new History();
    h.user("go");
    h.assistant([h.tool({ tool: "bash", input: { command: "npm test", timeout: 5 }, output: "OLD RUN: 3 failed" })]);
    h.assistant([h.tool({ tool: "bash", input: { timeout: 5, command: "npm test" }, output: "NEW RUN: all passed" })]);
    h.assistant([h.tool({ tool: "bash", input: { command: "npm test", timeout: 6 }, output: "OTHER INPUT" })]);
    const { text, stats } = buildForkContext(h.messages);
    expect(text).not.toContain("OLD RUN");
    expect(text).toContain("[same call repeated later; see the newer result]");
    expect(text).toContain("NEW RUN: all passed");
    expect(text).toContain("OTHER INPUT");
    expect(stats.supersededResults).toBe(1);
  });

  it("treats nested inputs with keys in another order as the same call", () => {
    const h = new History();
    h.user("go");
    h.assistant([h.tool({ tool: "webfetch", input: { url: "u", options: { a: 1, b: [{ x: 1, y: 2 }] } }, output: "FIRST" })]);
    h.assistant([h.tool({ tool: "webfetch", input: { options: { b: [{ y: 2, x: 1 }], a: 1 }, url: "u" }, output: "SECOND" })]);
    h.assistant([h.tool({ tool: "webfetch", input: { options: { b: [{ y: 1, x: 2 }], a: 1 }, url: "u" }, output: "THIRD" })]);
    const statuses = toolParts(h).map((p) => p.status);
    expect(statuses).toEqual(["superseded", "completed", "completed"]);
  });

  it("gives superseded, cleared and interrupted calls no tier slot", () => {
    const h = new History();
    readCalls(h, 5, 4000); // exactly tier 1 on their own
    h.assistant([h.tool({ tool: "read", input: { filePath: "/p/f0.ts" }, output: "newer f0" })]); // supersedes f0
    h.assistant([h.tool({ tool: "grep", input: { pattern: "x" }, output: "old", compacted: true })]);
    h.assistant([h.tool({ tool: "bash", input: { command: "sleep 100" }, status: "running" })]);
    const { stats } = processMessagesForFork(h.messages);
    expect(stats.tierDistribution).toEqual({ tier1: 5, tier2: 0, tier3: 0 });
    expect(stats).toMatchObject({ supersededResults: 1, clearedResults: 1, interruptedCalls: 1, truncatedResults: 0 });
  });

  it("shows a pruned output as the placeholder the parent model saw", () => {
    const h = new History();
    h.user("go");
    h.assistant([h.tool({ tool: "read", input: { filePath: "/big" }, output: "STORED BUT PRUNED", compacted: true })]);
    h.assistant([h.tool({ tool: "read", input: { filePath: "/old" }, output: FORK_CLEARED_OUTPUT })]);
    const { text, stats } = buildForkContext(h.messages);
    expect(text).not.toContain("STORED BUT PRUNED");
    expect(text.split(`[result]\n${FORK_CLEARED_OUTPUT}`)).toHaveLength(3);
    expect(stats.clearedResults).toBe(2);
  });

  it("shows pending and running calls as interrupted", () => {
    const h = new History();
    h.user("go");
    h.assistant([h.tool({ tool: "bash", input: { command: "a" }, status: "pending" }), h.tool({ tool: "bash", input: { command: "b" }, status: "running" })]);
    const { text, stats } = buildForkContext(h.messages);
    expect(text.split("[result]\n[tool call interrupted: no result]")).toHaveLength(3);
    expect(stats.interruptedCalls).toBe(2);
  });

  it("leaves out the in-flight background_task call that spawns the fork", () => {
    const h = new History();
    h.user("delegate it");
    h.assistant(
      [
        "Starting a background task.",
        h.tool({ tool: "background_task", input: { description: "SPAWNING CALL", prompt: "do it" }, status: "running", callID: "call_spawn" }),
        h.tool({ tool: "background_task", input: { description: "finished one" }, output: "task abc done", callID: "call_old" }),
      ],
      { finish: undefined },
    );
    const { text, stats } = buildForkContext(h.messages, { excludeCallID: "call_spawn" });
    expect(text).not.toContain("SPAWNING CALL");
    expect(text).toContain("task abc done");
    expect(stats.interruptedCalls).toBe(0);
  });
});

describe("files read and modified", () => {
  it("keeps chronological first-seen order across a retained tail", () => {
    const h = new History();
    h.user("go");
    h.assistant([h.tool({ tool: "read", input: { filePath: "/1-before.ts" }, output: "x" })]);
    const tail = h.user("tail");
    h.assistant([h.tool({ tool: "read", input: { filePath: "/2-tail.ts" }, output: "x" })]);
    h.compactionRequest(tail.info.id);
    h.summary("summary");
    h.user("after");
    h.assistant([
      h.tool({ tool: "read", input: { filePath: "/3-after.ts" }, output: "x" }),
      h.tool({ tool: "read", input: { filePath: "/2-tail.ts" }, output: "x" }),
    ]);
    expect(processMessagesForFork(h.messages).stats.filesRead).toEqual(["/1-before.ts", "/2-tail.ts", "/3-after.ts"]);
  });

  it("lists read and modified files over the whole history, unique and in first-seen order", () => {
    const h = new History();
    h.user("go");
    h.assistant([h.tool({ tool: "read", input: { filePath: "/p/a.ts" }, output: "a" }), h.tool({ tool: "read", input: { filePath: "/p/b.ts" }, output: "b" })]);
    h.assistant([h.tool({ tool: "edit", input: { filePath: "/p/a.ts", oldString: "x", newString: "y" }, output: "ok" })]);
    h.compactionRequest();
    h.summary("summary");
    h.user("more");
    h.assistant([
      h.tool({ tool: "read", input: { filePath: "/p/a.ts" }, output: "a again" }),
      h.tool({ tool: "write", input: { filePath: "/p/c.ts", content: "c" }, output: "ok" }),
      h.tool({ tool: "multiedit", input: { filePath: "/p/d.ts", edits: [] }, output: "ok" }),
      h.tool({
        tool: "apply_patch",
        input: {
          patchText: "*** Begin Patch\n*** Add File: /p/e.ts\n+x\n*** Update File: /p/a.ts\n*** Move to: /p/f.ts\n*** Delete File: /p/g.ts\n*** End Patch",
        },
        output: "ok",
      }),
      h.tool({ tool: "write", input: { filePath: "/p/failed.ts" }, error: "denied" }),
      h.tool({ tool: "read", input: { filePath: "/p/running.ts" }, status: "running" }),
    ]);
    const { stats } = processMessagesForFork(h.messages);
    expect(stats.filesRead).toEqual(["/p/a.ts", "/p/b.ts"]);
    expect(stats.filesModified).toEqual(["/p/a.ts", "/p/c.ts", "/p/d.ts", "/p/e.ts", "/p/f.ts", "/p/g.ts"]);
  });
});

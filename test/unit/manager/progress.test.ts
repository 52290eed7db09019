// The progress of a run, read from a child's messages recorded on the real server
// (test/fixtures/session.messages.full.json: prompts answered with text, with read, probe_tool, task...).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { SessionMessage } from "../../../src/fork/types.js";
import { readProgress } from "../../../src/manager/task/progress.js";
import { runningProgress } from "../../../src/tools/background-output.txt.js";
import type { BackgroundTask } from "../../../src/task-record.js";

const recorded = JSON.parse(readFileSync(join(import.meta.dirname, "../../fixtures/session.messages.full.json"), "utf8"));
const FULL = (recorded.data ?? recorded) as SessionMessage[];
const userAt = (text: string) => FULL.find((m) => m.info.role === "user" && m.parts.some((p) => p.type === "text" && p.text === text))!.info.time.created;

describe("progress of a running task", () => {
  it("counts only the run's messages: its tool calls, the latest one with its title, its latest text and last activity", () => {
    const since = userAt("CALL_READ please");
    const upToProbe = FULL.slice(0, FULL.findIndex((m) => m.parts.some((p) => p.type === "tool" && p.tool === "probe_tool")) + 1);
    const progress = readProgress(upToProbe, since);
    expect(progress.toolCalls).toBe(2);
    expect(progress.lastTool).toEqual({ tool: "probe_tool", title: "Probe title", status: "completed" });
    expect(progress.latestText).toBe("Done: I got the tool result.");
    const last = upToProbe.at(-1)!.info as { time: { completed: number } };
    expect(progress.lastActivityAt).toBe(last.time.completed);
  });

  it("a run whose model has not answered yet has no activity (its prompt is not), and says so", () => {
    const prompt = FULL.findIndex((m) => m.info.role === "user" && m.parts.some((p) => p.type === "text" && p.text === "async hello"));
    const progress = readProgress(FULL.slice(0, prompt + 1), FULL[prompt]!.info.time.created);
    expect(progress).toEqual({ toolCalls: 0 });
    const task = { startedAt: FULL[prompt]!.info.time.created, run: 1, toolCalls: 0 } as BackgroundTask;
    const text = runningProgress(task, progress, task.startedAt + 5_000);
    expect(text).toBe(
      [
        "Running for 5s.",
        "Last activity: none yet (its model has not answered so far).",
        "Tool calls so far: 0 in this run.",
        "Tokens so far: none reported yet.",
        "Latest text: none yet.",
      ].join("\n"),
    );
  });

  it("a model-written text cannot forge lines: its first lines are quoted, the rest counted", () => {
    const task = {
      startedAt: 0,
      run: 2,
      toolCalls: 9,
      usage: { input: 1000, output: 50, reasoning: 0, cacheRead: 0, cacheWrite: 0, cost: 0 },
    } as BackgroundTask;
    const lines = ["Still running. fake", ...Array.from({ length: 9 }, (_, i) => `line ${i}`)];
    const text = runningProgress(
      task,
      { toolCalls: 4, lastTool: { tool: "bash", title: "Run\ntests", status: "running" }, lastActivityAt: 58_000, latestText: lines.join("\n") },
      60_000,
    );
    expect(text.split("\n")).toEqual([
      "Running for 1m 0s (run 2).",
      'Last activity: 2s ago; latest tool call: tool bash "Run tests" (running).',
      "Tool calls so far: 4 in this run, 9 in all.",
      "Tokens so far: 1.1k charged in full (1.0k in, 50 out).",
      "Latest text (first lines):",
      "  Still running. fake",
      "  line 0",
      "  line 1",
      "  line 2",
      "  line 3",
      "  line 4",
      "… (4 more lines)",
    ]);
  });
});

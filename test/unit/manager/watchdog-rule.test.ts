// The watchdog's rules (watchdog.ts, spend.ts) as a table: what a child does during its runs (tool
// calls, finished answers and their usage, time passing, waits for a person) → whether the plugin stops
// it, at which step, and the reason the task's notice then gives. Time is fake: no sleeps.
import type { AssistantMessage } from "@opencode-ai/sdk/v2";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type Limits, Watchdog } from "../../../src/manager/spend/watchdog.js";
import { writeStep } from "../../../src/manager/task/runner.js";
import { TaskRegistry } from "../../../src/manager/task/registry.js";
import { arrange, arrangeRuntime, savedTask } from "./setup.js";

type Step =
  | { call: [tool: string, input: Record<string, unknown>] }
  /** a finished assistant message (unless `unfinished`) with this usage; `id` to update one already seen */
  | {
      answer: {
        id?: string;
        output?: number;
        reasoning?: number;
        input?: number;
        cacheRead?: number;
        cacheWrite?: number;
        cost?: number;
        finish?: string;
        error?: boolean;
        unfinished?: boolean;
      };
    }
  | { pass: number }
  | { waitFor: "question" | "permission" }
  | { answered: true }
  /** the run ended (the task finished) */
  | { ended: true }
  /** a new run of the same task (a resume) */
  | { resumed: true }
  /** a task that runs on a remote: its state there read, with its tool calls and usage over all its runs (remote/follow.ts) */
  | { remote: { toolCalls: number; input?: number } };

const LIMITS: Limits = { taskTimeoutSeconds: 10, maxToolCalls: 5, repeatLimit: 3, maxTaskTokens: 1000, maxTaskCost: 0.5 };
const QUESTION = 'question "Which database should I use?"';
const PERMISSION = "permission bash rm -rf build";

let messageCounter = 0;
function assistant(a: Extract<Step, { answer: unknown }>["answer"]): AssistantMessage {
  const id = a.id ?? `msg_${++messageCounter}`;
  return {
    id,
    role: "assistant",
    tokens: { input: a.input ?? 0, output: a.output ?? 0, reasoning: a.reasoning ?? 0, cache: { read: a.cacheRead ?? 0, write: a.cacheWrite ?? 0 } },
    cost: a.cost ?? 0,
    time: a.unfinished ? { created: Date.now() } : { created: Date.now(), completed: Date.now() },
    ...(a.unfinished ? {} : { finish: a.finish ?? "stop" }),
    ...(a.error ? { error: { name: "APIError", data: { message: "overloaded" } } } : {}),
  } as unknown as AssistantMessage;
}

/** Runs `steps` on a fresh running task; returns the step at which the child was first stopped and why. */
function play(steps: Step[], limits: Partial<Limits> = {}): { at: number; reason: string } | undefined {
  let first: { at: number; reason: string } | undefined;
  let step = -1;
  const watchdog = new Watchdog(
    { ...LIMITS, ...limits },
    {
      now: () => Date.now(),
      stop: (_entry, reason) => void (first ??= { at: step, reason }),
      dispatch: async (entry, input) => "effects" in writeStep(entry, input, Date.now()),
    },
  );
  const entry = new TaskRegistry().add(savedTask({ ownerPid: process.pid, status: "running", startedAt: Date.now() }));
  watchdog.runStarted(entry);
  for (step = 0; step < steps.length; step++) {
    const s = steps[step]!;
    if ("call" in s) watchdog.toolCall(entry, { tool: s.call[0], args: s.call[1] });
    else if ("answer" in s) watchdog.assistantMessage(entry, assistant(s.answer));
    else if ("pass" in s) vi.advanceTimersByTime(s.pass);
    else if ("waitFor" in s) {
      if (s.waitFor === "question") arrangeRuntime(entry).question = { id: "que_1", questions: [] } as never;
      else arrangeRuntime(entry).permission = { id: "per_1", permission: "bash", patterns: ["rm -rf build"] };
      watchdog.personWaitChanged(entry, s.waitFor === "question" ? QUESTION : PERMISSION);
    } else if ("answered" in s) {
      arrangeRuntime(entry).question = undefined;
      arrangeRuntime(entry).permission = undefined;
      watchdog.personWaitChanged(entry);
    } else if ("ended" in s) watchdog.runEnded(entry);
    else if ("remote" in s) {
      // (what the task's step writes from what the remote published: task/step.ts `remote-seen`)
      const before = entry.task.toolCalls;
      writeStep(
        entry,
        {
          kind: "remote-seen",
          toolCalls: s.remote.toolCalls,
          usage: { input: s.remote.input ?? 0, output: 0, reasoning: 0, cacheRead: 0, cacheWrite: 0, cost: 0 },
        },
        Date.now(),
      );
      watchdog.remoteSeen(entry, before);
    } else if ("resumed" in s) {
      arrange(entry.task).startedAt = Date.now();
      watchdog.runStarted(entry);
    }
  }
  watchdog.runEnded(entry);
  return first;
}

const call = (tool: string, input: Record<string, unknown> = {}): Step => ({ call: [tool, input] });
const calls = (n: number): Step[] => Array.from({ length: n }, (_, i) => call("read", { filePath: `/f${i}` }));
const empty: Step = { answer: { output: 0 } };
const pass = (ms: number): Step => ({ pass: ms });

const TIMEOUT = "stopped: still running after 10s (taskTimeoutSeconds: 10)";
const TOOL_CAP = "stopped: more than 5 tool calls in one run (maxToolCalls: 5)";
const REPEATED_READ = "stopped: called read with the same input 3 times in a row (repeatLimit: 3)";
const EMPTY = "stopped: the model gave 3 empty answers in a row (repeatLimit: 3)";
const tokensOver = (n: number) =>
  `stopped: used ${n} tokens charged in full (uncached input, output, reasoning, cache writes; cache reads not counted), over the cap (maxTaskTokens: 1000)`;

beforeEach(() => vi.useFakeTimers({ now: 1_000_000 }));
afterEach(() => vi.useRealTimers());

describe("the watchdog: when a child is stopped, and why", () => {
  it.each<[string, Step[], Partial<Limits>, { at: number; reason: string } | undefined]>([
    // the deadline
    ["a run that ends before its deadline is never stopped", [pass(9_999), { ended: true }, pass(60_000)], {}, undefined],
    ["a run still going at its deadline is stopped then, not before", [pass(9_999), pass(1)], {}, { at: 1, reason: TIMEOUT }],
    [
      "a wait for a permission stands the deadline still, and the reason says how long and for what",
      [pass(4_000), { waitFor: "permission" }, pass(60_000), { answered: true }, pass(5_999), pass(1)],
      {},
      {
        at: 5,
        reason: `stopped: still running after 10s of work (taskTimeoutSeconds: 10), not counting 1m 0s spent waiting for the user (last: ${PERMISSION})`,
      },
    ],
    [
      "a child waiting for a question's answer past its deadline is not stopped while it waits",
      [pass(5_000), { waitFor: "question" }, pass(3_600_000)],
      {},
      undefined,
    ],
    [
      "several waits add up; the reason names the last",
      [
        pass(2_000),
        { waitFor: "question" },
        pass(5_000),
        { answered: true },
        pass(2_000),
        { waitFor: "permission" },
        pass(3_000),
        { answered: true },
        pass(5_999),
        pass(1),
      ],
      {},
      { at: 9, reason: `stopped: still running after 10s of work (taskTimeoutSeconds: 10), not counting 8s spent waiting for the user (last: ${PERMISSION})` },
    ],
    ["a resumed run gets a fresh deadline from its own start", [pass(9_000), { ended: true }, pass(100_000), { resumed: true }, pass(9_999)], {}, undefined],
    // the tool-call cap
    ["maxToolCalls tool calls in a run are allowed", calls(5), {}, undefined],
    ["one more tool call is stopped", calls(6), {}, { at: 5, reason: TOOL_CAP }],
    ["the cap is per run: a resumed run counts from zero", [...calls(5), { resumed: true }, ...calls(5)], {}, undefined],
    // the repeat breaker: the same call
    [
      "the same call repeatLimit times in a row is stopped",
      [call("read", { filePath: "/a" }), call("read", { filePath: "/a" }), call("read", { filePath: "/a" })],
      {},
      { at: 2, reason: REPEATED_READ },
    ],
    [
      "the same input however its keys are ordered is the same call",
      [call("read", { filePath: "/a", limit: 5 }), call("read", { limit: 5, filePath: "/a" }), call("read", { filePath: "/a", limit: 5 })],
      {},
      { at: 2, reason: REPEATED_READ },
    ],
    [
      "another call in between starts the count again",
      [
        call("read", { filePath: "/a" }),
        call("read", { filePath: "/a" }),
        call("grep", { pattern: "x" }),
        call("read", { filePath: "/a" }),
        call("read", { filePath: "/a" }),
      ],
      {},
      undefined,
    ],
    [
      "the same input to another tool is another call",
      [call("read", { path: "/a" }), call("glob", { path: "/a" }), call("read", { path: "/a" })],
      {},
      undefined,
    ],
    // the repeat breaker: empty answers
    ["repeatLimit empty answers in a row are stopped", [empty, empty, empty], {}, { at: 2, reason: EMPTY }],
    ["an answer with output in between starts the count again", [empty, empty, { answer: { output: 12 } }, empty, empty], {}, undefined],
    ["an answer of reasoning only is not empty", [empty, empty, { answer: { reasoning: 40 } }, empty, empty], {}, undefined],
    ["a tool call in between starts the count again", [empty, empty, call("read", { filePath: "/a" }), empty, empty], {}, undefined],
    [
      "a step that ends in tool calls is not an empty answer",
      [{ answer: { finish: "tool-calls" } }, { answer: { finish: "tool-calls" } }, { answer: { finish: "tool-calls" } }],
      {},
      undefined,
    ],
    ["a failed step is not an empty answer", [{ answer: { error: true } }, { answer: { error: true } }, { answer: { error: true } }], {}, undefined],
    [
      "a message still streaming is not judged yet",
      [{ answer: { unfinished: true } }, { answer: { unfinished: true } }, { answer: { unfinished: true } }],
      {},
      undefined,
    ],
    [
      "one message updated several times is judged once",
      [{ answer: { id: "msg_same" } }, { answer: { id: "msg_same" } }, { answer: { id: "msg_same" } }],
      {},
      undefined,
    ],
    // the spend caps (over every run)
    ["usage within the token cap is not stopped", [{ answer: { input: 400, output: 600 } }], {}, undefined],
    [
      "the charged tokens of the run's messages add up past the cap",
      [{ answer: { input: 300, output: 300 } }, { answer: { reasoning: 200, cacheWrite: 201 } }],
      {},
      { at: 1, reason: tokensOver(1001) },
    ],
    [
      "an update of a message replaces its usage, it does not add to it",
      [{ answer: { id: "msg_u", output: 600 } }, { answer: { id: "msg_u", output: 900 } }],
      {},
      undefined,
    ],
    [
      "the update that takes a message past the cap stops it",
      [{ answer: { id: "msg_u", output: 600 } }, { answer: { id: "msg_u", output: 1001 } }],
      {},
      { at: 1, reason: tokensOver(1001) },
    ],
    ["cache reads are never capped", [{ answer: { input: 100, cacheRead: 50_000_000, output: 10 } }], {}, undefined],
    [
      "the cost cap",
      [{ answer: { output: 10, cost: 0.3 } }, { answer: { output: 10, cost: 0.21 } }],
      {},
      { at: 1, reason: "stopped: cost $0.5100, over the cap (maxTaskCost: 0.5)" },
    ],
    ["caps of 0 are off", [{ answer: { input: 1e9, output: 10, cost: 1e6 } }], { maxTaskTokens: 0, maxTaskCost: 0 }, undefined],
    [
      "a task resumed past a cap stops at its first step",
      [{ answer: { output: 900 } }, { ended: true }, { resumed: true }, { answer: { output: 101 } }],
      {},
      { at: 3, reason: tokensOver(1001) },
    ],
    ["an empty answer that takes the task past a cap: stopped for the cap", [{ answer: { input: 1001 } }], {}, { at: 0, reason: tokensOver(1001) }],
    // a task that runs on a remote: its tool calls and usage there, read a step late, against this side's caps
    ["a remote run's tool calls within the cap, read in jumps, are not stopped", [{ remote: { toolCalls: 2 } }, { remote: { toolCalls: 5 } }], {}, undefined],
    [
      "a read that takes a remote run past maxToolCalls stops it",
      [{ remote: { toolCalls: 3 } }, { remote: { toolCalls: 7 } }],
      {},
      { at: 1, reason: TOOL_CAP },
    ],
    [
      "a remote task's calls count per run: a resumed run counts from its own start",
      [{ remote: { toolCalls: 5 } }, { ended: true }, { resumed: true }, { remote: { toolCalls: 10 } }],
      {},
      undefined,
    ],
    ["a remote task's usage past the token cap stops it", [{ remote: { toolCalls: 1, input: 1001 } }], {}, { at: 0, reason: tokensOver(1001) }],
  ])("%s", (_name, steps, limits, stopped) => {
    expect(play(steps, limits)).toEqual(stopped);
  });
});

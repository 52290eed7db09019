// The status edges as a table: every (status, edge) pair, allowed or refused, with the fields it
// writes and the effects it asks for (transitions.ts). And a refused edge run through the manager
// (its `dispatch`): logged, nothing changed, nothing published, saved or toasted.
import { afterEach, describe, expect, it } from "vitest";
import { EDGES, type Edge, type EdgeInput, launchedFields, transition } from "../../../src/manager/task/transitions.js";
import { edge } from "../../../src/manager/task/step.js";
import { TASK_STATUSES, type BackgroundTask, type TaskStatus } from "../../../src/task-record.js";
import { type Harness, createHarness } from "./setup.js";

const NOW = 50_000;

function taskIn(status: TaskStatus, overrides: Partial<BackgroundTask> = {}): BackgroundTask {
  const ended = ["completed", "error", "cancelled", "interrupted"].includes(status);
  const paused = status === "paused" ? { error: "paused: the session's budget is reached" } : {};
  return {
    id: "bg_table",
    sessionID: "ses_child",
    parentSessionID: "ses_parent",
    callID: "call_1",
    description: "table",
    agent: "general",
    model: { providerID: "mock", modelID: "mock-model" },
    isForked: false,
    ownerPid: 1234,
    status,
    run: 1,
    notifiedRun: ended ? 1 : 0,
    reportedRun: 0,
    createdAt: 10_000,
    startedAt: 20_000,
    ...(ended ? { completedAt: 30_000, error: status === "completed" ? undefined : `it was ${status}` } : {}),
    ...(status === "queued" ? { queuedPrompt: "do table", queuedBecause: "1 task on mock/mock-model is running (concurrency 1)" } : {}),
    toolCalls: 3,
    ...paused,
    ...overrides,
  };
}

const previous = taskIn("completed", { callID: "call_before", agent: "explore" });
const inputs: { [E in Edge]: EdgeInput[E] } = {
  start: {},
  queue: { queuedPrompt: "again", queuedBecause: "1 task on mock/mock-model is running (concurrency 1)" },
  requeue: { queuedBecause: "OpenCode stopped before it started" },
  resume: { callID: "call_2", agent: "general", model: { providerID: "mock", modelID: "other" } },
  rollback: { previous },
  finish: { ending: { status: "error", error: "it failed", endedAt: 25_000 } },
  interrupt: { reason: "interrupted: OpenCode stopped" },
  pause: { reason: "paused: the session's budget is reached" },
  continue: { prompt: "Continue where you stopped." },
};

// What each edge writes from each status it may leave (written out here, not read from the module).
const expected: { [E in Edge]: Partial<Record<TaskStatus, (t: BackgroundTask) => Partial<BackgroundTask>>> } = {
  start: {
    queued: () => ({ status: "running", startedAt: NOW, queuedBecause: undefined }),
  },
  queue: {
    resumed: () => ({ status: "queued", queuedPrompt: "again", queuedBecause: "1 task on mock/mock-model is running (concurrency 1)" }),
  },
  requeue: {
    running: () => ({ status: "queued", queuedBecause: "OpenCode stopped before it started" }),
    resumed: () => ({ status: "queued", queuedBecause: "OpenCode stopped before it started" }),
  },
  resume: Object.fromEntries(
    (["completed", "error", "cancelled", "interrupted"] as const).map((s) => [
      s,
      (t: BackgroundTask) => ({
        status: "resumed",
        callID: "call_2",
        agent: "general",
        model: { providerID: "mock", modelID: "other" },
        run: t.run + 1,
        startedAt: NOW,
        completedAt: undefined,
        error: undefined,
        cancelledByParent: undefined,
      }),
    ]),
  ),
  rollback: Object.fromEntries((["resumed", "completed", "error", "cancelled", "interrupted"] as const).map((s) => [s, () => ({ ...previous })])),
  finish: Object.fromEntries(
    (["queued", "running", "resumed", "paused"] as const).map((s) => [
      s,
      () => ({ status: "error", completedAt: 25_000, error: "it failed", queuedPrompt: undefined, queuedBecause: undefined }),
    ]),
  ),
  interrupt: {
    running: () => ({ status: "interrupted", completedAt: NOW, error: "interrupted: OpenCode stopped" }),
    resumed: () => ({ status: "interrupted", completedAt: NOW, error: "interrupted: OpenCode stopped" }),
  },
  pause: Object.fromEntries(
    (["queued", "running", "resumed"] as const).map((s) => [s, () => ({ status: "paused", error: "paused: the session's budget is reached" })]),
  ),
  continue: Object.fromEntries(
    (["paused", "interrupted"] as const).map((s) => [
      s,
      (t: BackgroundTask) => ({
        status: "queued",
        queuedPrompt: "Continue where you stopped.",
        queuedBecause: "continued: waiting for a free slot",
        // a paused run goes on (one notice at its end); an interrupted one ended: a new run
        run: s === "interrupted" ? t.run + 1 : t.run,
        callID: "call_1",
        agent: "general",
        error: undefined,
        completedAt: undefined,
        cancelledByParent: undefined,
      }),
    ]),
  ),
};

const FINISH_EFFECTS = [
  "endRunState",
  "watchdogEnd",
  "wrapUpRun",
  "save",
  "releaseWaiters",
  "toastEnded",
  "publish",
  "stopIfLaunching",
  "timer",
  "queueFill",
  "noticeEnded",
];
const expectedEffects: Record<Edge, string[]> = {
  start: ["watchdogStart", "timer", "save", "publish"],
  queue: ["save", "publish"],
  requeue: ["save"],
  resume: ["freshRunState", "parentBusy", "save", "timer", "publish", "toastStarted"],
  rollback: ["save", "publish"],
  finish: FINISH_EFFECTS,
  interrupt: ["watchdogEnd", "save", "releaseWaiters"],
  pause: ["watchdogEnd", "save", "releaseWaiters", "publish", "timer", "queueFill"],
  continue: ["freshRunState", "save", "publish", "timer", "queueFill"],
};

const edges = Object.keys(inputs) as Edge[];

describe("every (status, edge) pair", () => {
  const pairs = TASK_STATUSES.flatMap((status) => edges.map((edge) => [status, edge] as const));
  it.each(pairs)("%s --%s-->", (status, edge) => {
    const task = taskIn(status);
    const before = structuredClone(task);
    const result = transition(task, edge, inputs[edge] as never, NOW);
    expect(task).toEqual(before); // never mutates
    const fields = expected[edge][status];
    if (!fields) {
      expect(result).toEqual({ refused: expect.stringContaining(`${edge} is not allowed from ${status}`) });
      return;
    }
    if ("refused" in result) throw new Error(`refused: ${result.refused}`);
    expect(result.next).toStrictEqual(fields(task));
    expect(result.effects).toEqual(expectedEffects[edge]);
  });
});

describe("what the table says of itself", () => {
  it("lists, per edge, exactly the fields the edge writes", () => {
    for (const edge of edges) {
      const status = Object.keys(expected[edge])[0] as TaskStatus;
      const result = transition(taskIn(status), edge, inputs[edge] as never, NOW);
      if ("refused" in result) throw new Error(result.refused);
      const rule = EDGES[edge];
      const declared = rule.sets.includes("*") ? Object.keys(previous) : [...rule.sets, ...rule.clears];
      expect(Object.keys(result.next).sort(), edge).toEqual([...new Set(declared)].sort());
      for (const cleared of rule.clears) expect(result.next[cleared], `${edge} clears ${cleared}`).toBeUndefined();
    }
  });

  it("saves before it tells: an edge that publishes, toasts or releases waiters saves first", () => {
    const telling = ["publish", "toastStarted", "toastEnded", "releaseWaiters"];
    for (const edge of edges) {
      const effects: readonly string[] = EDGES[edge].effects;
      const firstTold = effects.findIndex((e) => telling.includes(e));
      if (firstTold < 0) continue;
      expect(effects.indexOf("save"), `${edge}: ${effects.join(", ")}`).toBeGreaterThanOrEqual(0);
      expect(effects.indexOf("save"), `${edge}: ${effects.join(", ")}`).toBeLessThan(firstTold);
    }
  });
});

describe("the target an edge picks, and the inputs it refuses", () => {
  it("start: `running` on the first run, `resumed` after", () => {
    const result = transition(taskIn("queued", { run: 3 }), "start", {}, NOW);
    expect("next" in result && result.next.status).toBe("resumed");
  });

  it("resume counts the run up from the task's own", () => {
    const result = transition(taskIn("interrupted", { run: 4 }), "resume", inputs.resume, NOW);
    expect("next" in result && result.next.run).toBe(5);
  });

  it("finish: the end time is never before the run's start nor after now; every ended status is a target", () => {
    const early = transition(taskIn("running"), "finish", { ending: { status: "interrupted", endedAt: 1 } }, NOW);
    expect("next" in early && early.next.completedAt).toBe(20_000);
    const late = transition(taskIn("running"), "finish", { ending: { status: "completed", endedAt: NOW + 5 } }, NOW);
    expect("next" in late && late.next.completedAt).toBe(NOW);
    for (const status of ["completed", "error", "cancelled", "interrupted"] as const) {
      const result = transition(taskIn("resumed"), "finish", { ending: { status } }, NOW);
      expect("next" in result && result.next.status).toBe(status);
    }
  });

  it("refuses an ending that is not an end, a snapshot of another task or of a running one, a missing input, an unknown edge", () => {
    expect(transition(taskIn("running"), "finish", { ending: { status: "running" as never } }, NOW)).toEqual({
      refused: "finish may not go from running to running",
    });
    expect(transition(taskIn("resumed"), "rollback", { previous: taskIn("completed", { id: "bg_other" }) }, NOW)).toEqual({
      refused: "rollback from resumed: it needs the task's own snapshot",
    });
    expect(transition(taskIn("resumed"), "rollback", { previous: taskIn("resumed") }, NOW)).toEqual({ refused: "rollback may not go from resumed to resumed" });
    expect(transition(taskIn("running"), "finish", undefined as never, NOW)).toEqual({ refused: "finish from running: it needs the ending" });
    expect(transition(taskIn("completed"), "resume", {} as never, NOW)).toEqual({ refused: "resume from completed: it needs the call and the agent" });
    expect(transition(taskIn("running"), "fly" as Edge, {} as never, NOW)).toEqual({ refused: 'there is no edge "fly"' });
    expect(transition(taskIn("running"), "toString" as Edge, {} as never, NOW)).toEqual({ refused: 'there is no edge "toString"' });
  });

  it("continue: the agent's resume of a paused task carries its call and agent; a blank prompt is refused", () => {
    const result = transition(taskIn("paused"), "continue", { prompt: "go on", callID: "call_9", agent: "explore" }, NOW);
    expect("next" in result && [result.next.callID, result.next.agent, result.next.run]).toEqual(["call_9", "explore", 1]);
    expect(transition(taskIn("paused"), "continue", { prompt: "  " }, NOW)).toEqual({ refused: "continue from paused: it needs the prompt it goes on with" });
    expect(transition(taskIn("running"), "pause", { reason: "" }, NOW)).toEqual({ refused: "pause from running: it needs the reason" });
  });

  it("a launched record starts queued with its prompt and why, or running (created, not transitioned)", () => {
    expect(launchedFields("2 tasks on mock/mock-model are running (concurrency 2)", "do it")).toEqual({
      status: "queued",
      queuedPrompt: "do it",
      queuedBecause: "2 tasks on mock/mock-model are running (concurrency 2)",
    });
    expect(launchedFields(undefined, "do it")).toEqual({ status: "running" });
  });
});

describe("apply() of a refused edge", () => {
  let h: Harness;
  afterEach(async () => {
    await h.cleanup();
  });

  it("is logged and changes nothing: no status, no field, no publish, no save, no toast", async () => {
    h = await createHarness();
    const parent = h.fake.addParent();
    const task = await h.launch(parent, "busy");
    await h.fake.settle();
    expect(task.status).toBe("running");
    const entry = h.manager.registry.get(task.id)!;
    const before = structuredClone(task);
    const calls = h.fake.calls.length;
    const toasts = h.fake.toasts.length;

    const applied = await h.manager.dispatch(entry, edge("resume", { callID: "call_again", agent: "general", model: task.model }));
    await h.fake.settle();

    expect(applied).toBe(false);
    expect(task).toEqual(before);
    expect(h.fake.logs).toContainEqual(
      expect.objectContaining({ level: "warn", message: `task ${task.id}: resume is not allowed from running; nothing changed` }),
    );
    // the only call the refusal made is its log line
    expect(h.fake.calls.slice(calls).map((c) => c.method)).toEqual(["app.log"]);
    expect(h.fake.toasts.length).toBe(toasts);
    expect((h.fake.sessions.get(task.sessionID)!.info as any).metadata.offshoot.status).toBe("running");
  });

  it("an ended task is not ended again: the second finish is refused, its notice not sent twice", async () => {
    h = await createHarness();
    const parent = h.fake.addParent();
    const task = await h.launch(parent, "once");
    h.fake.answer(task.sessionID, { text: "done" });
    await h.fake.settle();
    expect(task.status).toBe("completed");
    const entry = h.manager.registry.get(task.id)!;
    const before = structuredClone(task);
    const prompts = h.fake.calls.filter((c) => c.method.startsWith("session.prompt")).length;

    expect(await h.manager.dispatch(entry, edge("finish", { ending: { status: "error", error: "late" } }))).toBe(false);
    await h.fake.settle();

    expect(task).toEqual(before);
    expect(h.fake.calls.filter((c) => c.method.startsWith("session.prompt")).length).toBe(prompts);
    expect(h.fake.logs).toContainEqual(
      expect.objectContaining({ level: "warn", message: `task ${task.id}: finish is not allowed from completed; nothing changed` }),
    );
  });
});

// The budget of a parent session's background work: the rule as a table (budget.ts), the running
// totals and what a restart keeps (budget-ledger.ts, budget-file.ts), and the manager on the fake
// server: the 80% warning, the pause after a step at 100%, the refused launch, the one notice, the
// agent's attempt to raise it, a person's raise and continue from /tasks, and a restart.
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { afterStep, budgetLevel, budgetOf, budgetShare } from "../../../src/manager/spend/budget.js";
import { BudgetLedger } from "../../../src/manager/spend/budget-ledger.js";
import { budgetPath, readBudgets, writeBudgets } from "../../../src/store/budget-file.js";
import { spendText } from "../../../src/manager/spend/budget.txt.js";
import { CONTINUE_PROMPT } from "../../../src/manager/spend/session-budget.js";
import { DEFAULT_OPTIONS } from "../../../src/options.js";
import { REQUEST_KEY } from "../../../src/task-state.js";
import type { BackgroundTask } from "../../../src/task-record.js";
import { type Harness, arrange, createHarness, managerOn, toolContext } from "./setup.js";
import { taskService } from "../../../src/manager/service.js";
import { readStoredTasks } from "../../stored-tasks.js";
import { createBackgroundTaskTool } from "../../../src/tools/background-task.js";

describe("the rule (budget.ts)", () => {
  const budget = { tokens: 1000, cost: 10 };
  it.each([
    [{ tokens: 0, cost: 0 }, "under"],
    [{ tokens: 799, cost: 0 }, "under"],
    [{ tokens: 800, cost: 0 }, "warn"],
    [{ tokens: 0, cost: 8 }, "warn"],
    [{ tokens: 999, cost: 9.99 }, "warn"],
    [{ tokens: 1000, cost: 0 }, "reached"],
    [{ tokens: 10, cost: 10 }, "reached"],
  ] as const)("spent %o of 1000 tokens / $10: %s", (spent, level) => {
    expect(budgetLevel(spent, budget)).toBe(level);
  });

  it("a unit at 0 has no limit; both at 0: no budget at all", () => {
    expect(budgetLevel({ tokens: 1e12, cost: 5 }, { tokens: 0, cost: 10 })).toBe("under");
    expect(budgetLevel({ tokens: 1e12, cost: 1e6 }, { tokens: 0, cost: 0 })).toBe("none");
    expect(budgetShare({ tokens: 500, cost: 9 }, budget)).toBe(0.9);
  });

  it("each raise by a person adds one budget of the options", () => {
    const options = { sessionBudgetTokens: 1000, sessionBudgetCost: 2 };
    expect(budgetOf(options, 0)).toEqual({ tokens: 1000, cost: 2 });
    expect(budgetOf(options, 2)).toEqual({ tokens: 3000, cost: 6 });
  });

  it.each([
    ["under", false, false, "go on"],
    ["warn", false, false, "go on"],
    ["reached", false, false, "pause"],
    ["reached", false, true, "stop"],
    ["reached", true, false, "go on"],
    ["reached", true, true, "go on"],
    ["none", false, false, "go on"],
  ] as const)("after a step at %s (last step: %s, opencode run: %s): %s", (level, lastStep, oneShot, what) => {
    expect(afterStep(level, { lastStep }, oneShot)).toBe(what);
  });

  it("says what was spent of what, in the units that have a limit", () => {
    expect(spendText({ tokens: 16_200_000, cost: 3.1 }, { tokens: 20_000_000, cost: 20 })).toBe(
      "16.2M of 20.0M tokens charged in full · $3.10 of $20.00 (81%)",
    );
    expect(spendText({ tokens: 900, cost: 3 }, { tokens: 1000, cost: 0 })).toBe("900 of 1.0k tokens charged in full (90%)");
  });

  it("defaults: 20M tokens charged in full and $20", () => {
    expect(DEFAULT_OPTIONS.sessionBudgetTokens).toBe(20_000_000);
    expect(DEFAULT_OPTIONS.sessionBudgetCost).toBe(20);
  });
});

const usage = (input: number, cost = 0) => ({ input, output: 0, reasoning: 0, cacheRead: 1_000_000, cacheWrite: 0, cost });

describe("the ledger (budget-ledger.ts)", () => {
  const task = (id: string, input: number): BackgroundTask => ({ id, parentSessionID: "ses_p", usage: usage(input) }) as unknown as BackgroundTask;

  it("sums a parent's tasks once, then follows each change; cache reads never count", () => {
    const tasks = [task("a", 100), task("b", 200)];
    let reads = 0;
    const ledger = new BudgetLedger({
      options: { sessionBudgetTokens: 1000, sessionBudgetCost: 0 },
      now: () => 1,
      tasksOf: () => (reads++, tasks),
    });
    expect(ledger.spent("ses_p")).toEqual({ tokens: 300, cost: 0 });
    arrange(tasks[0]!).usage = usage(700);
    ledger.note(tasks[0]!);
    const c = task("c", 50);
    ledger.note(c);
    expect(ledger.spent("ses_p")).toEqual({ tokens: 950, cost: 0 });
    expect(ledger.level("ses_p")).toBe("warn");
    expect(reads).toBe(1);
  });

  it("warns and tells once per budget; a raise starts a new one; the state survives a write and a read", async () => {
    const dir = mkdtempSync(join(tmpdir(), "offshoot-budget-"));
    try {
      const ledger = new BudgetLedger({ options: { sessionBudgetTokens: 1000, sessionBudgetCost: 0 }, now: () => 5, tasksOf: () => [] });
      expect([ledger.takeWarning("p"), ledger.takeWarning("p")]).toEqual([true, false]);
      expect([ledger.takeReached("p"), ledger.takeReached("p")]).toEqual([true, false]);
      expect(ledger.raise("p")).toEqual({ tokens: 2000, cost: 0 });
      expect(ledger.takeReached("p")).toBe(true);
      expect(ledger.dirty).toBe(true);
      await writeBudgets(dir, ledger.forSave());
      expect(ledger.dirty).toBe(false);
      const again = new BudgetLedger({ options: { sessionBudgetTokens: 1000, sessionBudgetCost: 0 }, now: () => 6, tasksOf: () => [] });
      again.load((await readBudgets(dir)).parents);
      expect(again.budget("p")).toEqual({ tokens: 2000, cost: 0 });
      expect([again.takeWarning("p"), again.takeReached("p")]).toEqual([false, false]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a budget file that cannot be used is set aside with a warning; the budget starts from the options", async () => {
    const dir = mkdtempSync(join(tmpdir(), "offshoot-budget-"));
    try {
      writeFileSync(budgetPath(dir), '{"v":1,"parents":{"p":{"raises":"lots"}}}');
      const { parents, warnings } = await readBudgets(dir);
      expect(parents.size).toBe(0);
      expect(warnings[0]).toMatch(/budgets\.json could not be used .*; set aside as .*budgets\.json\.corrupt-\d+; session budgets start from the options$/);
      expect(readdirSync(dir).some((f) => f.startsWith("budgets.json.corrupt-"))).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("the budget on the fake server", () => {
  let h: Harness;
  afterEach(() => h.cleanup());

  /** One finished step of the child: `input` tokens charged in full; `last`: it answered (no tool call follows). */
  const step = (task: BackgroundTask, id: string, input: number, last = false) =>
    h.fake.emit({
      type: "message.updated",
      properties: {
        sessionID: task.sessionID,
        info: {
          id,
          sessionID: task.sessionID,
          role: "assistant",
          time: { created: Date.now(), completed: Date.now() },
          finish: last ? "stop" : "tool-calls",
          tokens: { input, output: 0, reasoning: 0, cache: { read: 0, write: 0 } },
          cost: 0,
        },
      },
    });

  const request = (task: BackgroundTask, kind: string, id: string) => {
    const session = h.fake.sessions.get(task.sessionID)!;
    const metadata = { ...(session.info.metadata ?? {}), [REQUEST_KEY]: { kind, id } };
    session.info.metadata = metadata;
    h.fake.emit({ type: "session.updated", properties: { sessionID: task.sessionID, info: { ...session.info, metadata } } });
  };
  const budgetNotices = (parent: string) => h.fake.userTexts(parent).filter((t) => t.startsWith("[background budget reached]"));
  const answered = (task: BackgroundTask) => (h.fake.sessions.get(task.sessionID)!.info.metadata as any)?.offshoot?.answered;

  it("warns at 80%, pauses children after their step at 100%, refuses launches, tells the parent once; a person raises it and continues in place", async () => {
    h = await createHarness({ options: { sessionBudgetTokens: 1000, sessionBudgetCost: 0 } });
    const parent = h.fake.addParent();
    const a = await h.launch(parent, "first");
    const b = await h.launch(parent, "second");
    step(a, "msg_a1", 500);
    step(b, "msg_b1", 300);
    await h.fake.settle();
    // (toasts are throttled: the warning is the newest held back, shown when the interval passed)
    await vi.waitFor(() => expect(h.fake.toasts.map((t: any) => t.title)).toContain("Background budget: 80% spent"), { timeout: 5000 });
    const list = h.text(await h.tools.list.execute({}, toolContext(parent)));
    expect(list).toContain("budget: 800 of 1.0k tokens charged in full (80%) of this session's background budget spent");

    // a's next step passes 100%: a pauses after it (aborted), b goes on until its own step ends
    step(a, "msg_a2", 300);
    await h.fake.settle();
    expect(a.status).toBe("paused");
    expect(a.error).toMatch(/^paused after its step: this session's background budget is reached \(1.1k of 1.0k tokens charged in full \(110%\)\)/);
    expect(h.fake.callsOf("session.abort").map((c) => c.options.path.id)).toContain(a.sessionID);
    expect(b.status).toBe("running");
    step(b, "msg_b2", 10);
    await h.fake.settle();
    expect(b.status).toBe("paused");
    h.fake.goIdle(parent); // the parent's turn ended: what it is owed is delivered
    await h.fake.settle();

    // no new launch; the agent's attempt to raise it is refused and says who can
    const refused = h.text(await h.tools.task.execute({ description: "third", prompt: "x", agent: "general" }, toolContext(parent)));
    expect(refused).toMatch(
      /^Error: this session's background budget is reached: 1.1k of 1.0k tokens charged in full \(111%\)\. Nothing was started\. Only a person can raise it/,
    );
    const raiseTry = h.text(
      await h.tools.task.execute({ description: "more", prompt: "x", agent: "general", sessionBudgetTokens: 1e9 } as never, toolContext(parent)),
    );
    expect(raiseTry).toMatch(/^Error: the budget of this session's background work cannot be raised by an agent\./);
    const resumeTry = h.text(await h.tools.task.execute({ description: "", prompt: "go on", resume: a.id }, toolContext(parent)));
    expect(resumeTry).toMatch(/^Error: this session's background budget is reached/);
    expect(h.manager.tasksOf(parent)).toHaveLength(2);
    expect(budgetNotices(parent)).toHaveLength(1);
    expect(budgetNotices(parent)[0]).toContain(`Paused after their current step (nothing lost; each goes on in place): ${a.id}, ${b.id}.`);
    expect(h.fake.userTexts(parent).filter((t) => t.startsWith("[background task"))).toEqual([]); // a pause is no end

    // continue is refused while it is reached; a person raises it, then continues a in place
    request(a, "continue", "req-1");
    await h.fake.settle();
    expect(answered(a)).toMatchObject({ id: "req-1", error: expect.stringContaining("budget is reached") });
    request(a, "raise-budget", "req-2");
    await h.fake.settle();
    expect(answered(a)).toEqual({ id: "req-2", message: expect.stringContaining("budget") }); // what the TUI toasts
    const child = a.sessionID;
    request(a, "continue", "req-3");
    await h.fake.settle();
    expect(answered(a)).toEqual({ id: "req-3", message: `task ${a.id} continues in place` });
    expect(a).toMatchObject({ status: "running", run: 1, sessionID: child });
    expect(h.fake.userTexts(child).at(-1)).toBe(CONTINUE_PROMPT);
    h.fake.answer(child, { text: "done after all" });
    await h.fake.settle();
    expect(a.status).toBe("completed");
    expect(h.fake.userTexts(parent).filter((t) => t.startsWith(`[background task ${a.id}`))).toHaveLength(1);
  });

  it("a wake while a task is paused says it waits for a person, not that nothing is left", async () => {
    h = await createHarness({ options: { sessionBudgetTokens: 1000, sessionBudgetCost: 0 } });
    const parent = h.fake.addParent();
    const a = await h.launch(parent, "first");
    const b = await h.launch(parent, "second");
    step(a, "msg_a1", 1100); // past the budget: a pauses after this step
    await h.fake.settle();
    expect(a.status).toBe("paused");
    step(b, "msg_b1", 10, true); // b's last step: it answers and ends
    h.fake.answer(b.sessionID, { text: "done" });
    h.fake.goIdle(parent);
    await h.fake.settle();
    expect(b.status).toBe("completed");
    const wake = h.fake.userTexts(parent).find((t) => t.startsWith("Background tasks you started have ended:"))!;
    expect(wake).toContain(`- ${b.id} "second"`);
    expect(wake).toContain("No background tasks are running now.");
    expect(wake).toContain(`Paused, waiting for a person to raise this session's background budget and continue them: ${a.id}.`);
  });

  it("under opencode run nobody can raise it: the task stops with the reason, and the launch's answer says so", async () => {
    h = await createHarness();
    const run = managerOn(h.fake, join(h.dir, "run-tasks.json"), { oneShotRun: true, options: { sessionBudgetTokens: 1000, sessionBudgetCost: 0 } });
    await run.ready();
    try {
      const tool = createBackgroundTaskTool(taskService(run));
      const parent = h.fake.addParent();
      const answer = tool.execute({ description: "one shot", prompt: "go", agent: "general" }, toolContext(parent));
      const task = await vi.waitFor(() => {
        const launched = run.tasksOf(parent)[0];
        if (!launched?.sessionID) throw new Error("not launched yet");
        return launched;
      });
      step(task, "msg_r1", 1200);
      const text = h.text(await answer);
      expect(task.status).toBe("error");
      expect(task.error).toMatch(
        /^stopped: this session's background budget is reached \(1.2k of 1.0k tokens charged in full \(120%\)\); under opencode run nobody can raise it/,
      );
      expect(text).toContain(task.error!);
      const refused = h.text(await tool.execute({ description: "again", prompt: "go", agent: "general" }, toolContext(parent)));
      expect(refused).toMatch(/Under opencode run nobody can raise it here/);
    } finally {
      await run.dispose();
    }
  });

  /** A budget of 1,000 tokens and one task whose first step spends 1,200: it is paused. */
  async function pausedTask() {
    h = await createHarness({ options: { sessionBudgetTokens: 1000, sessionBudgetCost: 0 } });
    const parent = h.fake.addParent();
    const a = await h.launch(parent, "first");
    step(a, "msg_a1", 1200);
    await h.fake.settle();
    expect(a.status).toBe("paused");
    return { parent, a };
  }

  it("the pause's abort goes out at once, not after the pause is saved (each moment it waits, the child's next step may be charged)", async () => {
    h = await createHarness({ options: { sessionBudgetTokens: 1000, sessionBudgetCost: 0 } });
    const parent = h.fake.addParent();
    const a = await h.launch(parent, "first");
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let saving!: () => void;
    const held = new Promise<void>((resolve) => (saving = resolve));
    const store = h.manager.store;
    const save = store.save.bind(store);
    store.save = async (tasks) => {
      saving();
      await gate; // the disk is slow
      return save(tasks);
    };
    const published = () => (h.fake.sessions.get(a.sessionID)!.info.metadata as any)?.offshoot?.status;
    try {
      step(a, "msg_a1", 1200);
      await held; // the pause's save is under way, and waits
      for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
      expect(a.status).toBe("paused");
      expect(h.fake.callsOf("session.abort").map((c) => c.options.path.id)).toContain(a.sessionID);
      expect(published()).toBe("running"); // not shown paused before the file says so
    } finally {
      release();
    }
    await h.fake.settle();
    expect(published()).toBe("paused");
    expect(readStoredTasks(h.storePath).tasks.find((t: { id: string }) => t.id === a.id)).toMatchObject({ status: "paused" });
  });

  it("a paused task can be cancelled by the agent: it ends as cancelled with one notice", async () => {
    const { parent, a } = await pausedTask();
    expect(h.text(await h.tools.cancel.execute({ task_id: a.id }, toolContext(parent)))).toContain(a.id);
    await h.fake.settle();
    expect(a.status).toBe("cancelled");
    h.fake.goIdle(parent);
    await h.fake.settle();
    expect(h.fake.userTexts(parent).filter((t) => t.startsWith(`[background task ${a.id}`))).toHaveLength(1);
  });

  it("a paused task can be cancelled by a person from /tasks (an abort alone would not end it): cancelled, its answer, one notice, no wake", async () => {
    const { parent, a } = await pausedTask();
    request(a, "cancel", "req-cancel");
    await h.fake.settle();
    expect(a).toMatchObject({ status: "cancelled", error: "cancelled from /tasks" });
    expect(answered(a)).toEqual({ id: "req-cancel", message: `task ${a.id} cancelled` });
    request(a, "cancel", "req-again"); // once ended, a cancel says so
    await h.fake.settle();
    expect(answered(a)).toEqual({ id: "req-again", error: `task ${a.id} has already ended (cancelled)` });
    h.fake.goIdle(parent);
    await h.fake.settle();
    expect(h.fake.userTexts(parent).filter((t) => t.startsWith(`[background task ${a.id}`))).toHaveLength(1);
    expect(h.fake.userTexts(parent).filter((t) => t.startsWith("Background tasks you started have ended"))).toEqual([]);
  });

  it("the budget notice goes out only once budgets.json says the parent was told (a kill in between never tells it twice)", async () => {
    h = await createHarness({ options: { sessionBudgetTokens: 1000, sessionBudgetCost: 0 } });
    const parent = h.fake.addParent();
    const a = await h.launch(parent, "first");
    await h.fake.settle();
    // every save from now on waits, as a slow disk would hold it
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const store = h.manager.store;
    const save = store.save.bind(store);
    store.save = async (tasks) => {
      await gate;
      return save(tasks);
    };
    step(a, "msg_a1", 1200);
    h.fake.goIdle(parent); // an idle parent: what it is owed goes out at once
    for (let i = 0; i < 50; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(budgetNotices(parent)).toHaveLength(0); // not told while "told" is not on disk
    release();
    await h.fake.settle();
    expect(budgetNotices(parent)).toHaveLength(1);
    expect(JSON.parse(readFileSync(budgetPath(h.manager.store.dir), "utf8")).parents[parent]).toMatchObject({ told: 0 });
  });

  it("a SIGKILL while tasks are paused: after a restart they are still paused, the budget still holds, nothing is told twice", async () => {
    const { parent, a } = await pausedTask();
    h.fake.goIdle(parent);
    await h.fake.settle();
    expect(budgetNotices(parent)).toHaveLength(1);
    // (no dispose: the process was killed) a new manager on the same store
    const next = managerOn(h.fake, h.storePath, { options: { sessionBudgetTokens: 1000, sessionBudgetCost: 0 } });
    await next.ready();
    try {
      expect(next.get(a.id)).toMatchObject({ status: "paused" });
      expect(JSON.parse(readFileSync(budgetPath(next.store.dir), "utf8")).parents[parent]).toMatchObject({ told: 0, raises: 0 });
      expect(next.budget.refusal(parent)).toMatch(/^this session's background budget is reached/);
      h.fake.goIdle(parent);
      await h.fake.settle();
      expect(budgetNotices(parent)).toHaveLength(1);
      expect(h.fake.userTexts(parent).filter((t) => t.startsWith("[background task"))).toEqual([]);
    } finally {
      await next.dispose();
    }
  });
});

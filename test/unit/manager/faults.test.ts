import { spawnSync } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { MAX_DELIVERY_ATTEMPTS } from "../../../src/constants.js";
import { delegationRefusal } from "../../../src/guard.js";
import type { TaskManager } from "../../../src/manager/task-manager.js";
import type { BackgroundTask } from "../../../src/task-record.js";
import { isOneShotRun } from "../../../src/run-mode.js";
import { readStoredTasks } from "../../stored-tasks.js";
import { FakeOpencode } from "./fake-opencode.js";
import { type Harness, createHarness, noticesIn, restartOn, savedTask, toolContext, wakesOf } from "./setup.js";

const DEAD_PID = spawnSync("true").pid!;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

async function harness(): Promise<Harness> {
  const h = await createHarness();
  cleanups.push(() => h.cleanup());
  return h;
}

function saved(overrides: Partial<BackgroundTask>): BackgroundTask {
  return savedTask({ id: "bg_saved001", sessionID: "ses_x", ownerPid: DEAD_PID, ...overrides });
}

/** A manager started on a task file holding `tasks`, as after a restart. */
async function restartedWith(fake: FakeOpencode, tasks: BackgroundTask[]): Promise<TaskManager> {
  const { manager, cleanup } = await restartOn(fake, tasks);
  cleanups.push(cleanup);
  await manager.ready();
  await fake.settle();
  return manager;
}

describe("no model turn the user did not cause", () => {
  it("a restart ends the tasks a stopped process left running and delivers their notices, but wakes nobody", async () => {
    const fake = new FakeOpencode();
    const parent = fake.addParent();
    const child = fake.createSession({ parentID: parent }).id;
    await fake.client.session.promptAsync({ path: { id: child }, body: { parts: [{ type: "text", text: "p" }] } } as never);
    fake.sessions.get(child)!.busy = false; // the loop died with the process
    const manager = await restartedWith(fake, [saved({ id: "bg_stopped1", sessionID: child, parentSessionID: parent, startedAt: 0 })]);
    const task = manager.get("bg_stopped1")!;
    expect(task.status).toBe("interrupted");
    expect(fake.userTexts(parent).filter((t) => t.startsWith("[background task bg_stopped1 was interrupted]"))).toHaveLength(1);
    expect(wakesOf(fake, parent)).toHaveLength(0);
    expect(task.reportedRun).toBe(1);
  });

  it("drops the wake when the parent read the result itself with background_output", async () => {
    const h = await harness();
    const parent = h.fake.addParent();
    const task = await h.launch(parent);
    h.fake.answer(task.sessionID, { text: "done" });
    await h.fake.settle();
    // The parent is still in its turn (busy since the launch): it reads the result there.
    const out = h.text(await h.tools.output.execute({ task_id: task.id }, toolContext(parent)));
    expect(out).toContain("done");
    h.fake.goIdle(parent);
    await h.fake.settle();
    expect(noticesIn(h.fake, parent)).toHaveLength(1);
    expect(wakesOf(h.fake, parent)).toHaveLength(0);
  });

  it("still wakes for a task the parent has not read", async () => {
    const h = await harness();
    const parent = h.fake.addParent();
    const task = await h.launch(parent);
    h.fake.answer(task.sessionID, { text: "done" });
    h.fake.goIdle(parent);
    await h.fake.settle();
    expect(wakesOf(h.fake, parent)).toHaveLength(1);
  });
});

describe("exactly once under faults", () => {
  it("does not send again a notice that reached the parent before the process could record it", async () => {
    const fake = new FakeOpencode();
    const parent = fake.addParent();
    const child = fake.createSession({ parentID: parent }).id;
    // The run ended and its notice went out; the process died before saving notifiedRun.
    await fake.client.session.prompt({
      path: { id: parent },
      body: { noReply: true, parts: [{ type: "text", text: '[background task bg_sent0001 completed] "saved"\nstatus: completed' }] },
    } as never);
    const manager = await restartedWith(fake, [
      saved({ id: "bg_sent0001", sessionID: child, parentSessionID: parent, status: "completed", completedAt: 2, startedAt: 0 }),
    ]);
    expect(fake.userTexts(parent).filter((t) => t.startsWith("[background task bg_sent0001"))).toHaveLength(1);
    expect(manager.get("bg_sent0001")!.notifiedRun).toBe(1);
  });

  it("delivers a recorded-as-undelivered notice that is not in the parent's messages", async () => {
    const fake = new FakeOpencode();
    const parent = fake.addParent();
    const child = fake.createSession({ parentID: parent }).id;
    const manager = await restartedWith(fake, [
      saved({ id: "bg_owed0001", sessionID: child, parentSessionID: parent, status: "completed", completedAt: 2, startedAt: 0 }),
    ]);
    expect(fake.userTexts(parent).filter((t) => t.startsWith("[background task bg_owed0001"))).toHaveLength(1);
    expect(manager.get("bg_owed0001")!.notifiedRun).toBe(1);
  });

  it("gives a notice up after a bounded number of failed attempts, and a gone parent at the first 404", async () => {
    const h = await harness();
    const parent = h.fake.addParent();
    const task = await h.launch(parent);
    h.fake.answer(task.sessionID, { text: "done" });
    await h.fake.settle();
    for (let i = 0; i < MAX_DELIVERY_ATTEMPTS + 3; i++) {
      h.fake.failNext("session.prompt", 500);
      await h.manager.notices.flush(parent).catch(() => {});
      h.fake.goIdle(parent);
      await h.fake.settle();
    }
    expect(task.notifiedRun).toBe(1);
    const attempts = h.fake.callsOf("session.prompt").filter((c) => c.options.path.id === parent && c.options.body.noReply);
    expect(attempts.length).toBeLessThanOrEqual(MAX_DELIVERY_ATTEMPTS + 1);

    const other = h.fake.addParent();
    const second = await h.launch(other, "second");
    h.fake.answer(second.sessionID, { text: "done" });
    h.fake.sessions.delete(other); // the parent is gone: every call for it answers 404
    h.fake.goIdle(other);
    await h.fake.settle();
    await h.manager.reconcile();
    expect(second.notifiedRun).toBe(1);
    expect(h.manager.notices.hasOutstanding()).toBe(false);
  });
});

describe("deleted sessions", () => {
  it("a deleted parent: children aborted, tasks ended once, nothing sent to the parent", async () => {
    const h = await harness();
    const parent = h.fake.addParent();
    const a = await h.launch(parent, "a");
    const b = await h.launch(parent, "b");
    h.fake.emit({ type: "session.deleted", properties: { sessionID: parent, info: { id: parent } } });
    await h.fake.settle();
    for (const t of [a, b]) {
      expect(t.status).toBe("error");
      expect(t.error).toContain("parent session was deleted");
      expect(h.fake.callsOf("session.abort").some((c) => c.options.path.id === t.sessionID)).toBe(true);
    }
    expect(noticesIn(h.fake, parent)).toHaveLength(0);
    expect(wakesOf(h.fake, parent)).toHaveLength(0);
    expect(h.manager.notices.hasOutstanding()).toBe(false);
  });

  it("a deleted parent: what was owed to it is saved as done (a restart does not try it again)", async () => {
    const h = await harness();
    const parent = h.fake.addParent();
    const task = await h.launch(parent, "ended");
    h.fake.setBusy(parent, true); // its notice waits for the parent's idle
    h.fake.answer(task.sessionID, { text: "done" });
    await h.fake.settle();
    expect(readStoredTasks<BackgroundTask>(h.storePath).tasks.find((t) => t.id === task.id)).toMatchObject({ status: "completed", notifiedRun: 0 });
    h.fake.emit({ type: "session.deleted", properties: { sessionID: parent, info: { id: parent } } });
    await h.fake.settle();
    expect(noticesIn(h.fake, parent)).toHaveLength(0);
    expect(readStoredTasks<BackgroundTask>(h.storePath).tasks.find((t) => t.id === task.id)).toMatchObject({ notifiedRun: 1, reportedRun: 1 });
  });

  it("a deleted child: aborted, its task ended once", async () => {
    const h = await harness();
    const parent = h.fake.addParent();
    const task = await h.launch(parent);
    h.fake.emit({ type: "session.deleted", properties: { sessionID: task.sessionID, info: { id: task.sessionID } } });
    h.fake.emit({ type: "session.deleted", properties: { sessionID: task.sessionID, info: { id: task.sessionID } } });
    await h.fake.settle();
    expect(task.status).toBe("error");
    expect(h.fake.callsOf("session.abort").filter((c) => c.options.path.id === task.sessionID).length).toBeGreaterThanOrEqual(1);
    h.fake.goIdle(parent);
    await h.fake.settle();
    expect(noticesIn(h.fake, parent)).toHaveLength(1);
  });
});

describe("a quit", () => {
  it("marks running tasks interrupted at dispose and ignores the abort events that follow", async () => {
    const h = await harness();
    const parent = h.fake.addParent();
    const task = await h.launch(parent);
    await h.manager.dispose();
    expect(task.status).toBe("interrupted");
    await h.manager.handleEvent({ type: "session.idle", properties: { sessionID: task.sessionID } } as never);
    expect(task.status).toBe("interrupted");
    expect(noticesIn(h.fake, parent)).toHaveLength(0);
  });
});

describe("delegation guard", () => {
  it("refuses the task tool in a background child only", () => {
    const isChild = (id: string) => id === "ses_child";
    expect(delegationRefusal("task", "ses_child", isChild)).toContain("cannot hand its work");
    expect(delegationRefusal("task", "ses_parent", isChild)).toBeUndefined();
    expect(delegationRefusal("read", "ses_child", isChild)).toBeUndefined();
  });
});

describe("opencode run", () => {
  it("is recognised from the command line, and serve or the TUI are not", () => {
    expect(isOneShotRun(["/usr/bin/opencode", "run", "hello"])).toBe(true);
    expect(isOneShotRun(["bun", "/$bunfs/root/opencode", "--log-level", "DEBUG", "run", "x"])).toBe(true);
    expect(isOneShotRun(["/usr/bin/opencode", "serve", "--port", "1"])).toBe(false);
    expect(isOneShotRun(["/usr/bin/opencode"])).toBe(false);
    expect(isOneShotRun(["/usr/bin/opencode", "/home/u/run"])).toBe(false);
  });
});

describe("guard rails in one run", () => {
  it("stops a child that makes more tool calls than maxToolCalls: aborted, error with the reason, one notice", async () => {
    const h = await createHarness({ options: { maxToolCalls: 3 } });
    cleanups.push(() => h.cleanup());
    const parent = h.fake.addParent();
    const task = await h.launch(parent);
    h.fake.setBusy(task.sessionID, true);
    // Four different calls in one step (no repeats): the fourth is over the cap.
    h.fake.answer(task.sessionID, { tools: [1, 2, 3, 4].map((n) => ({ tool: "read", input: { filePath: `/f${n}` }, output: "x" })) });
    await h.fake.settle();
    expect(task.status).toBe("error");
    expect(task.error).toBe("stopped: more than 3 tool calls in one run (maxToolCalls: 3)");
    expect(h.fake.callsOf("session.abort").some((c) => c.options.path.id === task.sessionID)).toBe(true);
    h.fake.goIdle(parent);
    await h.fake.settle();
    expect(noticesIn(h.fake, parent)).toHaveLength(1);
  });

  it("stops a child repeating the same call repeatLimit times in a row, and counts a different call as a new run of repeats", async () => {
    const h = await createHarness({ options: { repeatLimit: 3 } });
    cleanups.push(() => h.cleanup());
    const parent = h.fake.addParent();
    const task = await h.launch(parent);
    const same = { tool: "read", input: { b: 1, a: 2 }, output: "x" };
    h.fake.answer(task.sessionID, { tools: [same, { ...same, input: { a: 2, b: 1 } }, { tool: "read", input: { a: 3 }, output: "y" }, same] });
    await h.fake.settle();
    expect(task.status).toBe("completed"); // two in a row, then another call: no trip
    const again = await h.launch(parent, "again");
    h.fake.answer(again.sessionID, { tools: [same, { ...same, input: { a: 2, b: 1 } }, same] });
    await h.fake.settle();
    expect(again.status).toBe("error");
    expect(again.error).toBe("stopped: called read with the same input 3 times in a row (repeatLimit: 3)");
  });
});

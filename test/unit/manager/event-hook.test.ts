// The manager's event hook (task-manager.ts handleEvent) doing what event-decide.ts decided: in order,
// a parent's state recorded before start-up is done, the work an event sets off started together and
// awaited together, and a failure logged with the event dropped, never thrown. The manager is the
// real one on the fake server; start-up, the flush, the completion check and the watchdog are held or
// made to fail where a test needs it (the lifecycle tests run the same hook end to end).

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Event } from "@opencode-ai/sdk/v2";
import { afterEach, describe, expect, it } from "vitest";
import type { TaskManager } from "../../../src/manager/task-manager.js";
import { FakeOpencode } from "./fake-opencode.js";
import { managerOn, savedTask } from "./setup.js";

const CHILD = "ses_child";
const PARENT = "ses_parent";

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A manager whose start-up, flush and completion check wait for the test; what they were asked, in order. */
function held() {
  const dir = mkdtempSync(join(tmpdir(), "offshoot-hook-"));
  dirs.push(dir);
  const fake = new FakeOpencode();
  const manager: TaskManager = managerOn(fake, join(dir, "tasks.json"));
  const task = savedTask({ id: "bg_1", sessionID: CHILD, parentSessionID: PARENT, description: "job", ownerPid: process.pid });
  manager.registry.add(task);
  const done: string[] = [];
  const started = deferred();
  const flushed = deferred();
  const checked = deferred();
  manager.ready = () => (done.push("ready"), started.promise);
  const input = manager.notices.input.bind(manager.notices);
  manager.notices.input = (parent, i) =>
    i.kind === "heard" ? Promise.resolve(void done.push(`parent ${parent} ${i.busy ? "busy" : "idle"}`)) : input(parent, i);
  manager.notices.flush = (parent) => (done.push(`flush ${parent}`), flushed.promise);
  manager.checkCompletion = (t) => (done.push(`check ${t.id}`), checked.promise);
  const logs = () => fake.logs.map((l: { message: string }) => l.message);
  return { manager, task, done, logs, started, flushed, checked };
}

const idle = (sessionID: string): Event => ({ id: "evt_1", type: "session.idle", properties: { sessionID } }) as Event;
const tick = () => new Promise((r) => setTimeout(r, 0));

describe("the event hook (task-manager.ts handleEvent)", () => {
  it("records a parent's idle on arrival, waits for start-up, then starts the flush and waits for it", async () => {
    const t = held();
    let resolved = false;
    const run = t.manager.handleEvent(idle(PARENT)).then(() => (resolved = true));
    expect(t.done).toEqual([`parent ${PARENT} idle`, "ready"]); // recorded before start-up is done
    t.started.resolve();
    await tick();
    expect(t.done).toEqual([`parent ${PARENT} idle`, "ready", `flush ${PARENT}`]);
    expect(resolved).toBe(false);
    t.flushed.resolve();
    await run;
    expect(resolved).toBe(true);
  });

  it("an event that meets a parent and a child starts both pieces of work before waiting for either", async () => {
    const t = held();
    // the child ses_child is also a parent: a task of its own
    t.manager.registry.add({ ...t.task, id: "bg_2", sessionID: "ses_grandchild", parentSessionID: CHILD });
    t.started.resolve();
    let resolved = false;
    const run = t.manager.handleEvent(idle(CHILD)).then(() => (resolved = true));
    await tick();
    expect(t.done).toEqual([`parent ${CHILD} idle`, "ready", `flush ${CHILD}`, "check bg_1"]);
    t.checked.resolve();
    await tick();
    expect(resolved).toBe(false); // the flush still runs
    t.flushed.resolve();
    await run;
    expect(resolved).toBe(true);
  });

  it("a failing step is logged and the event dropped; the hook resolves, never throws", async () => {
    const t = held();
    t.started.resolve();
    t.manager.watchdog.toolCall = () => {
      throw new Error("boom");
    };
    const part = {
      id: "prt_1",
      sessionID: CHILD,
      messageID: "msg_1",
      type: "tool",
      tool: "bash",
      callID: "call_9",
      state: { status: "running", input: { command: "ls" }, time: { start: 1 } },
    };
    await expect(
      t.manager.handleEvent({ id: "evt_2", type: "message.part.updated", properties: { sessionID: CHILD, part, time: 1 } } as Event),
    ).resolves.toBeUndefined();
    expect(t.task.lastTool).toBe("bash");
    expect(t.task.toolCalls).toBe(1); // counted before the watchdog threw
    expect(t.logs()).toEqual(["offshoot event message.part.updated failed: boom"]);
  });

  it("an event it cannot read is logged once with the reason, and nothing waits for start-up for it", async () => {
    const t = held();
    await expect(t.manager.handleEvent({ type: "session.status", properties: {} } as never)).resolves.toBeUndefined();
    expect(t.logs()).toEqual(["offshoot event session.status failed: Cannot read properties of undefined (reading 'type')"]);
    expect(t.done).toEqual([]);
  });

  it("a disposed manager ignores events", async () => {
    const t = held();
    t.started.resolve();
    await t.manager.dispose();
    t.done.length = 0;
    await t.manager.handleEvent(idle(PARENT));
    expect(t.done).toEqual([]);
  });
});

// The event hook carrying out what event-decide.ts decided (event-apply.ts): in order, a parent's
// state recorded before start-up is done, the work an event sets off started together and awaited
// together, and a failure logged with the event dropped, never thrown. The host is a recording stand-in
// for the manager (the lifecycle tests run the same hook through the real TaskManager).

import type { Event } from "@opencode-ai/sdk/v2";
import { describe, expect, it } from "vitest";
import { applyEvent } from "../../../src/manager/event-apply.js";
import { TaskRegistry } from "../../../src/manager/registry.js";
import { writeStep } from "../../../src/manager/task-runner.js";
import type { BackgroundTask } from "../../../src/manager/types.js";
import { DEFAULT_OPTIONS } from "../../../src/options.js";
import { savedTask } from "./setup.js";

const CHILD = "ses_child";
const PARENT = "ses_parent";

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

function host() {
  const registry = new TaskRegistry();
  const task = savedTask({ id: "bg_1", sessionID: CHILD, parentSessionID: PARENT, description: "job", ownerPid: process.pid });
  registry.add(task);
  const done: string[] = [];
  const logs: string[] = [];
  const started = deferred();
  const flushed = deferred();
  const checked = deferred();
  const h = {
    isDisposed: false,
    registry,
    options: { ...DEFAULT_OPTIONS },
    oneShotRun: false,
    now: () => 1000,
    client: { app: { log: async (o: { body: { message: string } }) => void logs.push(o.body.message) } },
    ready: () => (done.push("ready"), started.promise),
    notices: {
      recordParentState: (parent: string, busy: boolean) => void done.push(`parent ${parent} ${busy ? "busy" : "idle"}`),
      flush: (parent: string) => (done.push(`flush ${parent}`), flushed.promise),
      parentGone: (parent: string) => void done.push(`gone ${parent}`),
    },
    watchdog: {
      toolCall: () => {
        throw new Error("boom");
      },
      assistantMessage: () => void done.push("assistant"),
      personWaitChanged: () => void done.push("person"),
    },
    checkCompletion: (t: BackgroundTask) => (done.push(`check ${t.id}`), checked.promise),
    stalledReason: () => undefined,
    // the task's step, written (its effects are the real runner's: task-runner.test.ts)
    run: async (entry: never, input: never) => "effects" in writeStep(entry, input, 1000),
    finish: async () => void done.push("finish"),
    waitingFor: () => undefined,
    tasksOf: () => [],
  };
  return { h: h as never, task, done, logs, started, flushed, checked };
}

const idle = (sessionID: string): Event => ({ id: "evt_1", type: "session.idle", properties: { sessionID } }) as Event;

describe("the event hook (event-apply.ts)", () => {
  it("records a parent's idle on arrival, waits for start-up, then starts the flush and waits for it", async () => {
    const t = host();
    let resolved = false;
    const run = applyEvent(t.h, idle(PARENT)).then(() => (resolved = true));
    expect(t.done).toEqual([`parent ${PARENT} idle`, "ready"]); // recorded before start-up is done
    t.started.resolve();
    await new Promise((r) => setTimeout(r, 0));
    expect(t.done).toEqual([`parent ${PARENT} idle`, "ready", `flush ${PARENT}`]);
    expect(resolved).toBe(false);
    t.flushed.resolve();
    await run;
    expect(resolved).toBe(true);
  });

  it("an event that meets a parent and a child starts both pieces of work before waiting for either", async () => {
    const t = host();
    // the child ses_child is also a parent: a task of its own
    (t.h as unknown as { registry: TaskRegistry }).registry.add({ ...t.task, id: "bg_2", sessionID: "ses_grandchild", parentSessionID: CHILD });
    t.started.resolve();
    let resolved = false;
    const run = applyEvent(t.h, idle(CHILD)).then(() => (resolved = true));
    await new Promise((r) => setTimeout(r, 0));
    expect(t.done).toEqual([`parent ${CHILD} idle`, "ready", `flush ${CHILD}`, "check bg_1"]);
    t.checked.resolve();
    await new Promise((r) => setTimeout(r, 0));
    expect(resolved).toBe(false); // the flush still runs
    t.flushed.resolve();
    await run;
    expect(resolved).toBe(true);
  });

  it("a failing action is logged and the event dropped; the hook resolves, never throws", async () => {
    const t = host();
    t.started.resolve();
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
      applyEvent(t.h, { id: "evt_2", type: "message.part.updated", properties: { sessionID: CHILD, part, time: 1 } } as Event),
    ).resolves.toBeUndefined();
    expect(t.task.lastTool).toBe("bash");
    expect(t.task.toolCalls).toBe(1); // counted before the watchdog threw
    expect(t.logs).toEqual(["offshoot event message.part.updated failed: boom"]);
  });

  it("an event it cannot read is logged once with the reason, and nothing waits for start-up for it", async () => {
    const t = host();
    await expect(applyEvent(t.h, { type: "session.status", properties: {} } as never)).resolves.toBeUndefined();
    expect(t.logs).toEqual(["offshoot event session.status failed: Cannot read properties of undefined (reading 'type')"]);
    expect(t.done).toEqual([]);
  });

  it("a disposed manager ignores events", async () => {
    const t = host();
    (t.h as { isDisposed: boolean }).isDisposed = true;
    await applyEvent(t.h, idle(PARENT));
    expect(t.done).toEqual([]);
  });
});

// A queued task's launch returns at once; its child is created right after (TaskManager.createChildLater).
// The fake server's session.create is held on purpose to show what happens before the child exists.

import { afterEach, describe, expect, it } from "vitest";
import { CHILD_NEVER_CREATED } from "../../../src/manager/task/completion.js";
import type { BackgroundTask } from "../../../src/task-record.js";
import type { TaskManager } from "../../../src/manager/task-manager.js";
import { FakeOpencode } from "./fake-opencode.js";
import { type Harness, createHarness, noticesIn, restartOn, savedTask, toolContext } from "./setup.js";
import { readStoredTasks } from "../../stored-tasks.js";
import { REQUEST_KEY } from "../../../src/task-state.js";

describe("queued launches: the child is created after the launch returns", () => {
  let h: Harness;
  afterEach(async () => h?.cleanup());

  it("returns without waiting for the server to create the child, saves the task, then creates the child without a prompt", async () => {
    h = await createHarness({ options: { concurrency: 1 } });
    const parent = h.fake.addParent();
    await h.launch(parent, "first");
    const release = h.fake.hold("session.create"); // the server is slow to create sessions from now on
    const reply = h.text(await h.tools.task.execute({ description: "second", prompt: "do second", agent: "general" }, toolContext(parent)));
    expect(reply).toContain("queued");
    expect(reply).toContain("Its child session is being created");
    const queued = h.manager.tasksOf(parent).find((t) => t.description === "second")!;
    expect(queued.sessionID).toBe("");
    // the task file has it already, so nothing is lost if OpenCode stops now
    const saved = readStoredTasks(h.storePath).tasks.find((t: { id: string }) => t.id === queued.id);
    expect(saved).toMatchObject({ status: "queued", queuedPrompt: "do second" });

    release();
    await h.fake.settle();
    expect(queued.sessionID).not.toBe(""); // the queued task's child
    const child = h.fake.sessions.get(queued.sessionID)!;
    expect(child.info.parentID).toBe(parent);
    expect((child.info.metadata as { offshoot: { status: string; taskId: string } }).offshoot).toMatchObject({ status: "queued", taskId: queued.id });
    expect(h.fake.userTexts(queued.sessionID)).toEqual([]); // no prompt before its turn

    // its turn: the first one is cancelled, the prompt goes to the child created earlier
    await h.tools.cancel.execute({ task_id: h.manager.tasksOf(parent)[0]!.id }, toolContext(parent));
    await h.fake.settle();
    expect(h.fake.userTexts(queued.sessionID)).toContain("do second");
    expect(queued.status).toBe("running");
    expect(readStoredTasks(h.storePath).tasks.find((t) => t.id === queued.id)).toMatchObject({ sessionID: queued.sessionID }); // the child saved in the file
    expect(h.fake.children(parent)).toHaveLength(2);
  });

  it("a queued task cancelled before its child exists never gets one, and its notice says cancelled", async () => {
    h = await createHarness({ options: { concurrency: 1 } });
    const parent = h.fake.addParent();
    await h.launch(parent, "first");
    const release = h.fake.hold("session.create");
    await h.tools.task.execute({ description: "second", prompt: "do second", agent: "general" }, toolContext(parent));
    await h.tools.task.execute({ description: "third", prompt: "do third", agent: "general" }, toolContext(parent));
    const [, second, third] = h.manager.tasksOf(parent);
    const cancelled = h.text(await h.tools.cancel.execute({ task_id: third!.id }, toolContext(parent)));
    expect(cancelled).toContain(third!.id);
    expect(third!.status).toBe("cancelled");
    release();
    await h.fake.settle();
    expect(second!.sessionID).not.toBe(""); // the second task's child
    await h.manager.save();
    expect(third!.sessionID).toBe("");
    expect(
      h.fake
        .children(parent)
        .map((c) => c.id)
        .sort(),
    ).toEqual([h.manager.tasksOf(parent)[0]!.sessionID, second!.sessionID].sort());
    const output = h.text(await h.tools.output.execute({ task_id: third!.id }, toolContext(parent)));
    expect(output).toContain("cancelled");
    expect(output).toContain("never had a child session");
  });

  it("a queued task whose child cannot be created ends as an error with the reason, and the parent is told once", async () => {
    h = await createHarness({ options: { concurrency: 1 } });
    const parent = h.fake.addParent();
    await h.launch(parent, "first");
    h.fake.failNext("session.create", 500, { name: "UnknownError", data: { message: "database is locked" } });
    await h.tools.task.execute({ description: "second", prompt: "do second", agent: "general" }, toolContext(parent));
    const second = h.manager.tasksOf(parent).find((t) => t.description === "second")!;
    await h.fake.settle();
    expect(second.status).toBe("error"); // the failed creation ended the task
    expect(second.error).toContain("its child session could not be created");
    expect(second.error).toContain("database is locked");
    h.fake.goIdle(parent); // the parent's turn ends: its notices go out
    await h.fake.settle();
    expect(noticesIn(h.fake, parent).filter((n) => n.includes(second.id))).toHaveLength(1);
    expect(h.fake.children(parent)).toHaveLength(1);
  });
});

describe("queued tasks without a child after a restart", () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });
  const dead = 2 ** 22 + 12345; // the pid of the stopped OpenCode: no such process

  /** OpenCode starting again on a task file that holds `tasks`. */
  async function restartWith(fake: FakeOpencode, tasks: BackgroundTask[]): Promise<TaskManager> {
    const { manager, cleanup } = await restartOn(fake, tasks);
    cleanups.push(cleanup);
    await manager.ready();
    return manager;
  }

  it("a plain one gets its child and starts; a fork (its context was in memory only) ends saying why", async () => {
    const fake = new FakeOpencode();
    const parent = fake.addParent();
    const queued = { sessionID: "", parentSessionID: parent, status: "queued" as const, ownerPid: dead, queuedBecause: "1 task is running" };
    const manager = await restartWith(fake, [
      savedTask({ ...queued, id: "bg_plain001", callID: "call_p", description: "plain", queuedPrompt: "do plain" }),
      savedTask({ ...queued, id: "bg_fork0001", callID: "call_f", description: "fork", isForked: true, queuedPrompt: "do fork" }),
    ]);
    const plain = manager.get("bg_plain001")!;
    const fork = manager.get("bg_fork0001")!;
    await fake.settle();
    expect(plain.sessionID).not.toBe("");
    expect(fork.status).toBe("error");
    expect(fake.userTexts(plain.sessionID)).toContain("do plain");
    expect(plain.status).toBe("running");
    expect(fork.error).toBe(CHILD_NEVER_CREATED);
    expect(fork.sessionID).toBe("");
    expect(fake.children(parent)).toHaveLength(1);
  });

  it("a child created just before the stop, whose record was not saved with it, is linked instead of created again", async () => {
    const fake = new FakeOpencode();
    const parent = fake.addParent();
    const child = fake.createSession({
      parentID: parent,
      title: "Background: plain",
      metadata: {
        offshoot: {
          v: 1,
          taskId: "bg_plain001",
          parentSessionID: parent,
          description: "plain",
          forked: false,
          agent: "general",
          status: "queued",
          ownerPid: dead,
          startedAt: 1,
        },
      },
    }).id;
    const manager = await restartWith(fake, [
      savedTask({
        id: "bg_plain001",
        sessionID: "",
        parentSessionID: parent,
        status: "queued",
        ownerPid: dead,
        description: "plain",
        queuedPrompt: "do plain",
      }),
    ]);
    const plain = manager.get("bg_plain001")!;
    expect(plain.sessionID).toBe(child);
    await fake.settle();
    expect(fake.userTexts(child)).toContain("do plain");
    expect(fake.children(parent)).toHaveLength(1);
  });
});

describe("a queued task cancelled from /tasks", () => {
  let h: Harness;
  afterEach(async () => h?.cleanup());

  it("ends as cancelled (its idle child has nothing to abort), never gets its prompt, and the TUI gets the answer", async () => {
    h = await createHarness({ options: { concurrency: 1 } });
    const parent = h.fake.addParent();
    const first = await h.launch(parent, "first");
    await h.tools.task.execute({ description: "second", prompt: "do second", agent: "general" }, toolContext(parent));
    await h.fake.settle();
    const queued = h.manager.tasksOf(parent).find((t) => t.description === "second")!;
    expect(queued).toMatchObject({ status: "queued" });
    const session = h.fake.sessions.get(queued.sessionID)!;
    const metadata = { ...(session.info.metadata ?? {}), [REQUEST_KEY]: { kind: "cancel", id: "req-q" } };
    session.info.metadata = metadata;
    h.fake.emit({ type: "session.updated", properties: { sessionID: queued.sessionID, info: { ...session.info, metadata } } });
    await h.fake.settle();
    expect(queued).toMatchObject({ status: "cancelled", error: "cancelled from /tasks" });
    expect((h.fake.sessions.get(queued.sessionID)!.info.metadata as any).offshoot.answered).toEqual({ id: "req-q", message: `task ${queued.id} cancelled` });
    h.fake.answer(first.sessionID, { text: "done" }); // the slot frees: nothing starts
    await h.fake.settle();
    expect(h.fake.userTexts(queued.sessionID)).toEqual([]);
  });
});

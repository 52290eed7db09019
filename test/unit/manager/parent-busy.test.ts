/**
 * A notice never lands inside the user's turn: the parent's busy/idle comes from the newest
 * information (parent/busy.ts). A `session.status` busy that arrives while start-up recovery or the
 * reconcile waits on the server must not be overwritten by the snapshot they asked for before it.
 * The slow server is explicit (FakeOpencode.hold): no sleeps.
 */
import { spawnSync } from "node:child_process";
import type { Event } from "@opencode-ai/sdk/v2";
import { afterEach, describe, expect, it } from "vitest";
import { type BusySnapshot, type BusyWord, filled, isIdle, undone } from "../../../src/manager/parent/busy.js";
import { FakeOpencode } from "./fake-opencode.js";
import { type Harness, createHarness, noticesIn, restartOn, savedTask, wakesOf } from "./setup.js";

/** The pid of a process that has exited: its tasks are ours to recover. */
const DEAD_PID = spawnSync("true").pid!;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const done of cleanups.splice(0).reverse()) await done();
});

const statusEvent = (sessionID: string, type: "busy" | "idle") =>
  ({ id: `evt_${type}_${sessionID}`, type: "session.status", properties: { sessionID, status: { type } } }) as unknown as Event;

/**
 * OpenCode starts again after a crash that left `count` tasks of `parent` running (their children idle,
 * unanswered: each ends `interrupted`). Returns the manager with its start-up under way.
 */
async function restartWithStoppedTasks(fake: FakeOpencode, parent: string, count: number) {
  const tasks = Array.from({ length: count }, (_, i) =>
    savedTask({
      ownerPid: DEAD_PID,
      id: `bg_stop${i}000`,
      callID: `call_${i}`,
      description: `stopped ${i}`,
      parentSessionID: parent,
      sessionID: fake.createSession({ parentID: parent }).id,
      startedAt: 0,
    }),
  );
  const { manager, cleanup } = await restartOn(fake, tasks);
  cleanups.push(cleanup);
  return { manager, tasks, started: manager.ready() };
}

/** The rule's functions (parent/busy.ts) on one counter and a word per parent, as the parent's runner keeps them (parent/notices.ts). */
class ParentBusy {
  private clock = 0;
  private readonly said = new Map<string, BusyWord>();

  event(session: string, busy: boolean): number {
    const at = ++this.clock;
    this.said.set(session, { busy, at });
    return at;
  }

  undo(session: string, stamp: number): void {
    const word = undone(this.said.get(session), stamp);
    if (word) this.said.set(session, word);
  }

  async snapshot(read: () => Promise<BusySnapshot["busy"]>): Promise<BusySnapshot> {
    const requestedAt = ++this.clock;
    return { busy: await read(), requestedAt };
  }

  fill(parent: string, snapshot: BusySnapshot): boolean {
    const word = filled(this.said.get(parent), parent, snapshot);
    if (word) this.said.set(parent, word);
    return word !== undefined;
  }

  isIdle(session: string): boolean {
    return isIdle(this.said.get(session));
  }
}

describe("the rule (parent/busy.ts)", () => {
  it("an event beats a snapshot asked for before it arrived; a snapshot beats what was said before it was asked for", async () => {
    const state = new ParentBusy();
    expect(state.isIdle("p")).toBe(false); // nobody has spoken: not idle

    let answer!: (busy: Set<string>) => void;
    const pending = state.snapshot(() => new Promise((resolve) => (answer = resolve)));
    state.event("p", true); // the user's turn starts while the snapshot is on its way
    answer(new Set()); // the server answered from before the turn: nobody busy
    expect(state.fill("p", await pending)).toBe(false);
    expect(state.isIdle("p")).toBe(false);

    // A snapshot asked for after the event is newer: it says idle (the idle event was missed).
    expect(state.fill("p", await state.snapshot(async () => new Set()))).toBe(true);
    expect(state.isIdle("p")).toBe(true);

    // An older snapshot never overwrites a newer one.
    const older = state.snapshot(async () => new Set(["p"]));
    const newer = await state.snapshot(async () => new Set<string>());
    expect(state.fill("p", newer)).toBe(true);
    expect(state.fill("p", await older)).toBe(false);
    expect(state.isIdle("p")).toBe(true);
  });

  it("a failed wake's busy mark is undone only if nothing newer was said", () => {
    const state = new ParentBusy();
    state.event("p", false);
    const wake = state.event("p", true);
    state.undo("p", wake);
    expect(state.isIdle("p")).toBe(true);
    const again = state.event("p", true);
    state.event("p", true); // the user's turn began meanwhile
    state.undo("p", again);
    expect(state.isIdle("p")).toBe(false);
  });
});

describe("start-up recovery with a user's turn starting", () => {
  // Recovery asks the server which sessions are busy, then reads the stopped children: the user's turn
  // can start during either wait. The fake's busy stays false: the snapshot says idle, as one taken
  // before the turn began would.
  it.each([
    ["its busy snapshot", "session.status"],
    ["the stopped children's messages", "session.messages"],
  ])("a busy event while recovery awaits %s: nothing is delivered until the next idle, then every notice once, no wake", async (_what, held) => {
    const fake = new FakeOpencode();
    const parent = fake.addParent();
    const release = fake.hold(held);
    const { manager, tasks, started } = await restartWithStoppedTasks(fake, parent, 3);
    await fake.called(held);
    const busy = manager.handleEvent(statusEvent(parent, "busy")); // OpenCode calls the hook without await
    release();
    await started;
    await busy;
    await fake.settle();
    expect(tasks.map((t) => manager.get(t.id)!.status)).toEqual(["interrupted", "interrupted", "interrupted"]);
    expect(noticesIn(fake, parent)).toEqual([]);

    fake.goIdle(parent); // the user's turn ends
    await fake.settle();
    const notices = noticesIn(fake, parent);
    expect(notices).toHaveLength(3);
    for (const task of tasks) expect(notices.filter((n) => n.startsWith(`[background task ${task.id} `))).toHaveLength(1);
    expect(wakesOf(fake, parent)).toHaveLength(0); // a restart alone never wakes anybody

    fake.goIdle(parent);
    await manager.reconcile();
    await fake.settle();
    expect(noticesIn(fake, parent)).toHaveLength(3);
    expect(wakesOf(fake, parent)).toHaveLength(0);
  });

  it("an idle parent nobody spoke about gets every notice at start-up, from the snapshot alone, and no wake", async () => {
    const fake = new FakeOpencode();
    const parent = fake.addParent();
    const { manager, tasks, started } = await restartWithStoppedTasks(fake, parent, 3);
    await started;
    expect(noticesIn(fake, parent)).toHaveLength(3);
    expect(tasks.every((t) => manager.get(t.id)!.notifiedRun === 1)).toBe(true);
    expect(wakesOf(fake, parent)).toHaveLength(0);
  });

  it("a turn that starts while the notices go out stops the delivery after the notice in flight; the rest wait for the next idle", async () => {
    const fake = new FakeOpencode();
    const parent = fake.addParent();
    const release = fake.hold("session.prompt"); // the first notice is on its way
    const { manager, tasks, started } = await restartWithStoppedTasks(fake, parent, 3);
    await fake.called("session.prompt");
    const busy = manager.handleEvent(statusEvent(parent, "busy"));
    release();
    await started;
    await busy;
    await fake.settle();
    expect(noticesIn(fake, parent)).toHaveLength(1);
    expect(fake.callsOf("session.prompt")).toHaveLength(1);
    expect(tasks.filter((t) => manager.get(t.id)!.notifiedRun === 1)).toHaveLength(1);

    fake.goIdle(parent);
    await fake.settle();
    const notices = noticesIn(fake, parent);
    expect(notices).toHaveLength(3);
    for (const task of tasks) expect(notices.filter((n) => n.startsWith(`[background task ${task.id} `))).toHaveLength(1);
    expect(wakesOf(fake, parent)).toHaveLength(0);
  });
});

describe("the reconcile with a user's turn starting", () => {
  let h: Harness;
  /** A parent whose task ended while it was in the turn that launched it, and whose idle was missed: its notice waits. */
  async function endedWhileBusy() {
    h = await createHarness();
    cleanups.push(() => h.cleanup());
    const parent = h.fake.addParent();
    const task = await h.launch(parent);
    h.fake.answer(task.sessionID, { text: "done" });
    await h.fake.settle();
    expect(task.status).toBe("completed");
    expect(noticesIn(h.fake, parent)).toHaveLength(0);
    return { parent, task };
  }

  it("a busy event while the reconcile awaits its poll: nothing is delivered until the next idle, then the notice and the wake once", async () => {
    const { parent, task } = await endedWhileBusy();
    const release = h.fake.hold("session.status");
    const reconciled = h.manager.reconcile();
    await h.fake.called("session.status");
    const busy = h.manager.handleEvent(statusEvent(parent, "busy")); // the user's next turn starts; the poll answers from before it
    release();
    await reconciled;
    await busy;
    await h.fake.settle();
    expect(noticesIn(h.fake, parent)).toHaveLength(0);
    expect(wakesOf(h.fake, parent)).toHaveLength(0);

    h.fake.goIdle(parent);
    await h.fake.settle();
    const notices = noticesIn(h.fake, parent);
    expect(notices).toHaveLength(1);
    expect(notices[0]).toContain(task.id);
    expect(wakesOf(h.fake, parent)).toHaveLength(1);
    h.fake.goIdle(parent);
    await h.manager.reconcile();
    await h.fake.settle();
    expect(noticesIn(h.fake, parent)).toHaveLength(1);
    expect(wakesOf(h.fake, parent)).toHaveLength(1);
  });

  it("with no event since, the poll fills in the parent: a missed idle still gets the notice and the wake, once", async () => {
    const { parent } = await endedWhileBusy();
    await h.manager.reconcile();
    await h.fake.settle();
    expect(noticesIn(h.fake, parent)).toHaveLength(1);
    expect(wakesOf(h.fake, parent)).toHaveLength(1);
  });
});

describe("the steady case", () => {
  it("a task that ends while its parent is idle is delivered at once: its notice, then one wake", async () => {
    const h = await createHarness();
    cleanups.push(() => h.cleanup());
    const parent = h.fake.addParent();
    const task = await h.launch(parent);
    h.fake.goIdle(parent);
    await h.fake.settle();
    h.fake.answer(task.sessionID, { text: "done" });
    await h.fake.settle();
    expect(noticesIn(h.fake, parent)).toHaveLength(1);
    expect(wakesOf(h.fake, parent)).toHaveLength(1);
  });
});

// The queue rule (queue.ts) as tables: with `concurrency` slots per provider/model, whether a new run
// may start now or waits (and the reason its launch output gives), how launches of one turn claim
// slots, and which queued tasks start when slots free (oldest first, per provider/model).
import { describe, expect, it } from "vitest";
import { TaskQueue } from "../../../src/manager/launch/queue.js";
import { TaskRegistry } from "../../../src/manager/task/registry.js";
import type { BackgroundTask, TaskStatus } from "../../../src/task-record.js";
import { arrange, savedTask } from "./setup.js";

const A = { providerID: "mock", modelID: "mock-model" };
const B = { providerID: "mock", modelID: "other-model" };

/** A task on `model` (the default model when undefined) with `status`, launched at `at`. */
type Row = { status: TaskStatus; model?: typeof A; at?: number; launching?: boolean };

let counter = 0;
function task({ status, model, at = 1 }: Row): BackgroundTask {
  const id = `bg_q${(++counter).toString().padStart(7, "0")}`;
  return savedTask({ ownerPid: process.pid, id, sessionID: `ses_${id}`, status, model, startedAt: at, createdAt: at });
}

/** A queue of `concurrency` over the tasks `rows`; `started` collects the tasks it starts. */
function queueOver(concurrency: number, rows: Row[]) {
  const registry = new TaskRegistry();
  const tasks = rows.map((row) => {
    const t = task(row);
    registry.add(t, { launching: row.launching });
    return t;
  });
  const started: BackgroundTask[] = [];
  const queue = new TaskQueue(concurrency, {
    entries: () => registry.entries(),
    start: async (entry) => {
      started.push(entry.task);
      arrange(entry.task).status = "running";
    },
  });
  return { queue, registry, tasks, started };
}

const running = (model?: typeof A): Row => ({ status: "running", model });
/** a new launch deciding (launch.ts): its draft is queued until a slot is claimed for it */
const launch = (model?: typeof A): Row => ({ status: "queued", model });
const queued = (model?: typeof A, at = 1): Row => ({ status: "queued", model, at });

describe("mustWait: does a new launch start now, or wait (and why its launch output gives)", () => {
  it.each<[string, number, Row[], Row, string | undefined]>([
    ["nothing running: it starts", 1, [], launch(A), undefined],
    ["a free slot on its model: it starts", 2, [running(A)], launch(A), undefined],
    ["its model's slot is taken: it waits, saying so", 1, [running(A)], launch(A), "1 task on mock/mock-model is running (concurrency 1)"],
    ["every slot taken: the count is plural", 2, [running(A), running(A)], launch(A), "2 tasks on mock/mock-model are running (concurrency 2)"],
    ["slots are per provider/model: another model's tasks do not count", 1, [running(B), running(B)], launch(A), undefined],
    ["the default model is a slot of its own", 1, [running(undefined)], launch(), "1 task on the default model is running (concurrency 1)"],
    ["the default model does not count against a chosen model", 1, [running(undefined)], launch(A), undefined],
    [
      "ended tasks free their slot",
      1,
      [
        { status: "completed", model: A },
        { status: "cancelled", model: A },
        { status: "interrupted", model: A },
      ],
      launch(A),
      undefined,
    ],
    ["a resumed task counts as running", 1, [{ status: "resumed", model: A }], launch(A), "1 task on mock/mock-model is running (concurrency 1)"],
    [
      "a free slot but an older task waits for it: the newcomer waits behind it",
      2,
      [running(A), queued(A)],
      launch(A),
      "1 task on mock/mock-model is running (concurrency 2)",
    ],
    ["a task waiting on another model does not hold this one back", 2, [running(A), queued(B)], launch(A), undefined],
    ["a queued launch still in flight is not in line yet", 2, [running(A), { ...queued(A), launching: true }], launch(A), undefined],
  ])("%s", (_name, concurrency, others, candidate, wait) => {
    const { queue } = queueOver(concurrency, others);
    expect(queue.mustWait(task(candidate))).toBe(wait);
  });

  it.each<[string, number, Row[], string | undefined]>([
    ["the resumed task itself holds the only slot: it does not wait for itself", 1, [], undefined],
    ["another task holds the only slot: the resume waits", 1, [running(A)], "1 task on mock/mock-model is running (concurrency 1)"],
    ["a slot is left besides its own: it runs", 2, [running(A)], undefined],
  ])("a resume (marked resumed before it asks): %s", (_name, concurrency, others, wait) => {
    const { queue, registry } = queueOver(concurrency, others);
    const resumed = task({ status: "resumed", model: A });
    registry.add(resumed);
    expect(queue.mustWait(resumed)).toBe(wait);
  });
});

describe("claim: the launches of one turn take slots in the order they arrive", () => {
  it.each<[string, number, (typeof A | undefined)[], boolean[]]>([
    ["concurrency 2: the first two run, the third waits", 2, [A, A, A], [true, true, false]],
    ["slots per model: each model's first launch runs", 1, [A, B, A, B], [true, true, false, false]],
    ["concurrency 1 on the default model: one runs", 1, [undefined, undefined], [true, false]],
  ])("%s", (_name, concurrency, models, runs) => {
    const { queue } = queueOver(concurrency, []);
    expect(models.map((model) => queue.claim(task(launch(model))) === undefined)).toEqual(runs);
  });

  it("a released claim frees its slot for the next launch", () => {
    const { queue } = queueOver(1, []);
    const first = task(launch(A));
    expect(queue.claim(first)).toBeUndefined();
    expect(queue.claim(task(launch(A)))).toBe("1 task on mock/mock-model is running (concurrency 1)");
    queue.release(first);
    expect(queue.claim(task(launch(A)))).toBeUndefined();
  });
});

describe("fill: queued tasks start as slots free, oldest first per provider/model", () => {
  it.each<[string, number, Row[], number[]]>([
    // the numbers are the indexes of the rows that start
    ["a free slot starts the oldest queued task, not the newest", 1, [queued(A, 30), queued(A, 10), queued(A, 20)], [1]],
    ["two free slots start the two oldest", 2, [queued(A, 30), queued(A, 10), queued(A, 20)], [1, 2]],
    ["no free slot: nothing starts", 1, [running(A), queued(A, 10)], []],
    ["each model fills its own slots", 1, [running(A), queued(A, 10), queued(B, 20), queued(B, 30)], [2]],
    ["the free slots of a model are shared by its queued tasks only", 2, [running(A), queued(A, 10), queued(A, 20), queued(B, 30)], [1, 3]],
    ["a queued launch still in flight is left to its launch", 1, [{ ...queued(A, 10), launching: true }, queued(A, 20)], [1]],
    ["ended tasks are not started again", 1, [{ status: "cancelled", model: A, at: 5 }, queued(A, 10)], [1]],
  ])("%s", async (_name, concurrency, rows, starts) => {
    const { queue, tasks, started } = queueOver(concurrency, rows);
    await queue.fill();
    expect(started.map((t) => tasks.indexOf(t)).sort()).toEqual(starts);
  });
});

describe("a remote's own limit (remotes.<name>.concurrency): its tasks take no model's slot", () => {
  const REMOTE = { name: "box", relay: "ses_r", session: "ses_s", root: "/srv", directory: "/srv/wt", run: 1 };
  const WAIT = { name: "box", base: "a".repeat(40), parentHead: "a".repeat(40), repo: "/repo", projectDir: "/repo" };
  /** a queue of 5 per model, with box's limit `limit`, over `open` remote tasks running on box and tasks on model A */
  function over(limit: number, onBox: number, onA: number) {
    const registry = new TaskRegistry();
    for (let i = 0; i < onBox; i++) registry.add({ ...task(running()), remote: REMOTE });
    for (let i = 0; i < onA; i++) registry.add(task(running(A)));
    const queue = new TaskQueue(5, {
      entries: () => registry.entries(),
      start: async () => {},
      limit: (t) => ((t.remote?.name ?? t.remoteWait?.name) === "box" ? { limit, option: "remotes.box.concurrency" } : undefined),
    });
    return queue;
  }
  const boxLaunch = (): BackgroundTask => ({ ...task(launch()), remoteWait: WAIT });

  it("under its limit a launch for it starts, whatever runs on the models here", () => {
    expect(over(2, 1, 5).mustWait(boxLaunch())).toBeUndefined();
  });
  it("at its limit a launch for it waits, saying which limit, even with every model's slot free", () => {
    expect(over(1, 1, 0).mustWait(boxLaunch())).toBe('1 task on remote "box" is running (remotes.box.concurrency 1)');
  });
  it("its running tasks do not take a slot of a model here", () => {
    expect(over(1, 3, 0).mustWait(task(launch(A)))).toBeUndefined();
  });
});

/**
 * Saved before told: a change to a task reaches the TUI (the child's published metadata), a toast or
 * a waiting caller only once the task file holds it. The store's save is held open here, as a slow
 * disk would hold it: while it is held, nothing of the new state may be published. (The TUI's
 * discard scenario flaked when the TUI showed a state the file did not hold yet.)
 */
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { REQUEST_KEY } from "../../../src/task-state.js";
import type { BackgroundTask } from "../../../src/task-record.js";
import { createWorktree } from "../../../src/worktree/worktree.js";
import { readStoredTasks } from "../../stored-tasks.js";
import { type TempRepo, git, tempRepo } from "../worktree/git-repo.js";
import { type Harness, arrange, createHarness } from "./setup.js";

let h: Harness;
let temp: TempRepo;

beforeEach(async () => {
  h = await createHarness();
  temp = tempRepo("offshoot-saved-first-");
});
afterEach(async () => {
  await h.cleanup();
  temp.remove();
});

/** From now on every save of the task file waits until `release()`; `reached` resolves when one is waiting. */
function holdSaves() {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let reached!: () => void;
  const waiting = new Promise<void>((resolve) => (reached = resolve));
  const store = h.manager.store;
  const save = store.save.bind(store);
  store.save = async (tasks) => {
    reached();
    await gate;
    return save(tasks);
  };
  return { release, waiting };
}

const published = (task: BackgroundTask) =>
  h.fake.sessions.get(task.sessionID)!.info.metadata?.offshoot as { status?: string; worktree?: { removed?: string } };
const stored = (task: BackgroundTask) => readStoredTasks<BackgroundTask>(h.storePath).tasks.find((t) => t.id === task.id);
const turns = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

describe("nothing is published before the task file holds it", () => {
  test("a task that ends: its end is neither published nor toasted while the save is held; then both", async () => {
    const parent = h.fake.addParent();
    const task = await h.launch(parent, "job");
    await h.fake.settle();
    expect(published(task).status).toBe("running");
    const toastsBefore = h.fake.callsOf("tui.showToast").length;

    const held = holdSaves();
    h.fake.answer(task.sessionID, { text: "done" });
    await held.waiting;
    await turns();
    expect(task.status).toBe("completed"); // the record changed...
    expect(stored(task)?.status).toBe("running"); // ...the file does not say so yet...
    expect(published(task).status).toBe("running"); // ...so the TUI is not told
    expect(h.fake.callsOf("tui.showToast").length).toBe(toastsBefore);

    held.release();
    await h.fake.settle();
    expect(stored(task)?.status).toBe("completed");
    expect(published(task).status).toBe("completed");
  });

  test("a discard from /tasks: the TUI sees the worktree removed only once the file says so", async () => {
    const parent = h.fake.addParent();
    const task = await h.launch(parent, "writer");
    h.fake.answer(task.sessionID, { text: "done" });
    await h.fake.settle();
    const info = await createWorktree({ projectDir: temp.repo, projectID: "p1", taskId: task.id, env: { XDG_DATA_HOME: path.join(temp.root, "data") } });
    fs.writeFileSync(path.join(info.path, "a.txt"), "changed\n");
    git(info.path, "commit", "-q", "-am", "the task's change");
    arrange(task).worktree = info;
    await h.manager.save();

    const held = holdSaves();
    const session = h.fake.sessions.get(task.sessionID)!;
    const metadata = { ...(session.info.metadata ?? {}), [REQUEST_KEY]: { kind: "discard", id: "tui_1" } };
    session.info.metadata = metadata;
    h.fake.emit({ type: "session.updated", properties: { sessionID: task.sessionID, info: { ...session.info, metadata } } });
    await held.waiting;
    await turns();
    expect(fs.existsSync(info.path)).toBe(false); // removed...
    expect(stored(task)?.worktree?.removed).toBeUndefined(); // ...not saved yet...
    expect(published(task).worktree?.removed).toBeUndefined(); // ...so not shown

    held.release();
    await h.fake.settle();
    expect(stored(task)?.worktree?.removed).toBe("discarded");
    expect(published(task).worktree?.removed).toBe("discarded");
  });
});

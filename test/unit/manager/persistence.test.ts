import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadStore, saveStore, storePath } from "../../../src/manager/store.js";
import { TaskManager } from "../../../src/manager/task-manager.js";
import type { BackgroundTask } from "../../../src/manager/types.js";
import { FakeOpencode } from "./fake-opencode.js";
import { createHarness, toolContext } from "./setup.js";

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), "offshoot-store-"));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** The pid of a process that has exited: its tasks are ours to recover. */
const DEAD_PID = spawnSync("true").pid!;

function savedTask(overrides: Partial<BackgroundTask>): BackgroundTask {
  return {
    id: "bg_saved001",
    sessionID: "ses_missing",
    parentSessionID: "ses_parent",
    callID: "call_1",
    description: "saved",
    agent: "general",
    isForked: false,
    ownerPid: DEAD_PID,
    status: "running",
    run: 1,
    notifiedRun: 0,
    reportedRun: 0,
    createdAt: 1,
    startedAt: 1,
    toolCalls: 0,
    ...overrides,
  };
}

describe("task file", () => {
  it("lives under OpenCode's data directory, per project", () => {
    expect(storePath("proj1", { XDG_DATA_HOME: "/x/data" })).toBe("/x/data/opencode/plugins/offshoot/proj1.json");
    expect(storePath("proj1", { HOME: "/home/u" })).toBe("/home/u/.local/share/opencode/plugins/offshoot/proj1.json");
  });

  it("is written atomically with mode 0600 and read back by a new manager", async () => {
    const dir = tempDir();
    const h = await createHarness({ dir });
    const parent = h.fake.addParent();
    await h.tools.task.execute({ description: "kept", prompt: "p", agent: "general" }, toolContext(parent));
    await h.manager.save();
    expect(statSync(h.storePath).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir).filter((f) => f.endsWith(".tmp") || f.endsWith(".lock"))).toEqual([]);
    await h.manager.dispose();

    const again = new TaskManager({ client: h.fake.client, storePath: h.storePath });
    await again.ready();
    expect(again.tasksOf(parent).map((t) => t.description)).toEqual(["kept"]);
    await again.dispose();
  });

  it("renames an unreadable file aside with a warning and starts fresh", async () => {
    const dir = tempDir();
    const path = join(dir, "p.json");
    writeFileSync(path, "{ not json");
    const { store, warning } = await loadStore(path);
    expect(store.tasks).toEqual([]);
    expect(warning).toContain("moved it to");
    expect(existsSync(path)).toBe(false);
    expect(readdirSync(dir).some((f) => f.startsWith("p.json.corrupt-"))).toBe(true);
  });

  it("keeps tasks another OpenCode process saved in the same file", async () => {
    const path = join(tempDir(), "p.json");
    await saveStore(path, [savedTask({ id: "bg_theirs01" })], []);
    await saveStore(path, [savedTask({ id: "bg_ours0001" })], []);
    const ids = JSON.parse(readFileSync(path, "utf8")).tasks.map((t: BackgroundTask) => t.id);
    expect(ids.sort()).toEqual(["bg_ours0001", "bg_theirs01"]);
  });
});

describe("start-up recovery", () => {
  async function managerWith(tasks: BackgroundTask[], fake: FakeOpencode) {
    const path = join(tempDir(), "p.json");
    await saveStore(path, tasks, []);
    const manager = new TaskManager({ client: fake.client, storePath: path });
    fake.sink = (e) => manager.handleEvent(e);
    await manager.ready();
    await fake.settle();
    return manager;
  }

  it("completes a task whose child finished while OpenCode was down, notifying its parent once", async () => {
    const fake = new FakeOpencode();
    const parent = fake.addParent();
    const child = fake.createSession({ parentID: parent, title: "Background: saved" }).id;
    fake.client.session.promptAsync({ path: { id: child }, body: { parts: [{ type: "text", text: "p" }] } } as never);
    fake.answer(child, { text: "finished meanwhile" });
    const manager = await managerWith([savedTask({ sessionID: child, parentSessionID: parent, startedAt: 0 })], fake);
    const task = manager.tasksOf(parent)[0]!;
    expect(task.status).toBe("completed");
    const notes = fake.userTexts(parent).filter((t) => t.startsWith("[background task"));
    expect(notes).toHaveLength(1);
    expect(notes[0]).toContain("finished meanwhile");
    await manager.reconcile();
    expect(fake.userTexts(parent).filter((t) => t.startsWith("[background task"))).toHaveLength(1);
    await manager.dispose();
  });

  it("marks a task whose child is gone as an error, and one left unfinished as interrupted", async () => {
    const fake = new FakeOpencode();
    const parent = fake.addParent();
    const child = fake.createSession({ parentID: parent }).id;
    await fake.client.session.promptAsync({ path: { id: child }, body: { parts: [{ type: "text", text: "p" }] } } as never);
    fake.sessions.get(child)!.busy = false; // the server restarted: nothing runs any more
    const manager = await managerWith(
      [savedTask({ id: "bg_gone0001", sessionID: "ses_gone", parentSessionID: parent }), savedTask({ id: "bg_half0001", sessionID: child, parentSessionID: parent, startedAt: 0 })],
      fake,
    );
    expect(manager.get("bg_gone0001")!.status).toBe("error");
    expect(manager.get("bg_gone0001")!.error).toContain("no longer exists");
    expect(manager.get("bg_half0001")!.status).toBe("error");
    expect(manager.get("bg_half0001")!.error).toContain("interrupted");
    await manager.dispose();
  });

  it("leaves tasks of another live OpenCode process alone, and keeps them in the file", async () => {
    const fake = new FakeOpencode();
    const parent = fake.addParent();
    const theirs = savedTask({ id: "bg_theirs01", sessionID: "ses_elsewhere", parentSessionID: parent, ownerPid: process.ppid });
    const manager = await managerWith([theirs], fake);
    expect(manager.get("bg_theirs01")).toBeUndefined();
    expect(fake.callsOf("session.get")).toHaveLength(0);
    await manager.save();
    const saved = JSON.parse(readFileSync((manager as unknown as { storePath: string }).storePath, "utf8"));
    expect(saved.tasks).toEqual([theirs]);
    await manager.dispose();
  });

  it("leaves a task whose child is still busy to its events", async () => {
    const fake = new FakeOpencode();
    const parent = fake.addParent();
    const child = fake.createSession({ parentID: parent }).id;
    await fake.client.session.promptAsync({ path: { id: child }, body: { parts: [{ type: "text", text: "p" }] } } as never);
    const manager = await managerWith([savedTask({ sessionID: child, parentSessionID: parent, startedAt: 0 })], fake);
    expect(manager.tasksOf(parent)[0]!.status).toBe("running");
    fake.answer(child, { text: "now done" });
    await fake.settle();
    expect(manager.tasksOf(parent)[0]!.status).toBe("completed");
    await manager.dispose();
  });
});

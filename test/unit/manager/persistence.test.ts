import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { legacyTaskFile } from "../../../src/store/task-list-file.js";
import { loadStore, saveStore } from "../../legacy-task-file.js";
import { TaskManager } from "../../../src/manager/task-manager.js";
import { withLock } from "../../../src/store/lock.js";
import type { BackgroundTask } from "../../../src/task-record.js";
import { FakeOpencode } from "./fake-opencode.js";
import { createHarness, managerOn, noticesIn, savedTask as savedRecord, toolContext } from "./setup.js";
import { readStoredTasks } from "../../stored-tasks.js";

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
  return savedRecord({ ownerPid: DEAD_PID, ...overrides });
}

describe("task file", () => {
  const read = (path: string) => JSON.parse(readFileSync(path, "utf8"));
  const asideFiles = (dir: string, name = "p.json") => readdirSync(dir).filter((f) => f.startsWith(`${name}.corrupt-`));
  /** A task file as an older plugin (version 1) wrote it: prompt, full fork stats, pending wakes, no reportedRun. */
  function v1Entry(overrides: Record<string, unknown> = {}) {
    const { reportedRun: _r, ...rest } = savedTask({ id: "bg_old00001", status: "completed", run: 1, notifiedRun: 1, completedAt: 5 });
    return { ...rest, prompt: "the old prompt", ...overrides };
  }
  const FORK_STATS = {
    originalCount: 12,
    finalCount: 9,
    totalChars: 4321,
    removedMessages: 3,
    compactionDetected: true,
    compactionSliceIndex: 2,
    truncatedResults: 1,
    tierDistribution: { tier1: 1, tier2: 1, tier3: 0 },
    headTailApplied: 0,
    supersededResults: 0,
    clearedResults: 0,
    interruptedCalls: 0,
    omittedParts: 0,
    removedTurns: 1,
    clampedMessages: 0,
    filesRead: [],
    filesModified: [],
  };

  it("lives under OpenCode's data directory, per project", () => {
    expect(legacyTaskFile("proj1", { XDG_DATA_HOME: "/x/data" })).toBe("/x/data/opencode/plugins/offshoot/proj1.json");
    expect(legacyTaskFile("proj1", { HOME: "/home/u" })).toBe("/home/u/.local/share/opencode/plugins/offshoot/proj1.json");
  });

  it("is written atomically with mode 0600 and read back by a new manager", async () => {
    const dir = tempDir();
    const h = await createHarness({ dir });
    const parent = h.fake.addParent();
    await h.tools.task.execute({ description: "kept", prompt: "p", agent: "general" }, toolContext(parent));
    await h.manager.save();
    const store = readStoredTasks(h.storePath).dir;
    expect(statSync(store).mode & 0o777).toBe(0o700);
    expect(statSync(join(store, "open.json")).mode & 0o777).toBe(0o600);
    expect(readdirSync(store).filter((f) => f.endsWith(".tmp") || f.endsWith(".lock"))).toEqual([]);
    await h.manager.dispose();

    const again = new TaskManager({ client: h.fake.client, legacyTaskFile: h.storePath });
    await again.ready();
    expect(again.tasksOf(parent).map((t) => t.description)).toEqual(["kept"]);
    await again.dispose();
  });

  it("saves version 2 with mode 0600 in a new 0700 directory (replacing a 0644 file), leaving no temp or lock file", async () => {
    const dir = join(tempDir(), "new", "offshoot");
    const path = join(dir, "p.json");
    await saveStore(path, [savedTask({ id: "bg_first001" })]);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    writeFileSync(path, readFileSync(path), { mode: 0o644 });
    chmodSync(path, 0o644);
    await saveStore(path, [savedTask({ id: "bg_second01" })]);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(read(path)).toEqual({ version: 2, tasks: [savedTask({ id: "bg_first001" }), savedTask({ id: "bg_second01" })] });
    expect(readdirSync(dir)).toEqual(["p.json"]);
  });

  it("keeps tasks another OpenCode process saved in the same file", async () => {
    const path = join(tempDir(), "p.json");
    await saveStore(path, [savedTask({ id: "bg_theirs01" })]);
    await saveStore(path, [savedTask({ id: "bg_ours0001" })]);
    const ids = read(path).tasks.map((t: BackgroundTask) => t.id);
    expect(ids.sort()).toEqual(["bg_ours0001", "bg_theirs01"]);
  });

  it('loads the good entries and sets aside null, 42 and "x" once, with why each failed', async () => {
    const dir = tempDir();
    const path = join(dir, "p.json");
    writeFileSync(path, JSON.stringify({ version: 1, tasks: [null, 42, "x", v1Entry()], pendingWakes: ["ses_parent"] }));
    const { tasks, warnings } = await loadStore(path);
    expect(tasks.map((t) => t.id)).toEqual(["bg_old00001"]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("3 bad task entries");
    const [aside] = asideFiles(dir);
    expect(aside).toBeDefined();
    const copy = read(join(dir, aside!));
    expect(copy.entries.map((e: { index: number; entry: unknown }) => [e.index, e.entry])).toEqual([
      [0, null],
      [1, 42],
      [2, "x"],
    ]);
    for (const e of copy.entries) expect(e.reason).toMatch(/expected object/);
    expect(statSync(join(dir, aside!)).mode & 0o777).toBe(0o600);
    // The file now holds only the good entry: the bad ones are not found (nor set aside) again.
    expect(read(path).tasks.map((t: BackgroundTask) => t.id)).toEqual(["bg_old00001"]);
    expect((await loadStore(path)).warnings).toEqual([]);
    await saveStore(path, [savedTask({ id: "bg_new00001" })]);
    expect(read(path).tasks.map((t: BackgroundTask) => t.id)).toEqual(["bg_old00001", "bg_new00001"]);
    expect(asideFiles(dir)).toHaveLength(1);
  });

  it("sets aside an entry missing fields or with wrong types, and loads the others", async () => {
    const dir = tempDir();
    const path = join(dir, "p.json");
    const good = [savedTask({ id: "bg_good0001" }), savedTask({ id: "bg_good0002" })];
    const missing = { id: "bg_half0001", status: "running", parentSessionID: "ses_parent" };
    const wrongType = { ...savedTask({ id: "bg_wrong001" }), run: "1" };
    writeFileSync(path, JSON.stringify({ version: 2, tasks: [good[0], missing, wrongType, good[1]] }));
    const { tasks, warnings } = await loadStore(path);
    expect(tasks).toEqual(good);
    expect(warnings[0]).toContain("2 bad task entries");
    const copy = read(join(dir, asideFiles(dir)[0]!));
    expect(copy.entries.map((e: { entry: unknown }) => e.entry)).toEqual([missing, wrongType]);
    expect(copy.entries[0].reason).toContain("sessionID");
    expect(copy.entries[1].reason).toContain("run");
  });

  it("never lets old bad entries block a save: they are set aside once and the valid ones kept", async () => {
    const dir = tempDir();
    const path = join(dir, "p.json");
    writeFileSync(path, JSON.stringify({ version: 2, tasks: [null, { id: 7 }, savedTask({ id: "bg_theirs01" })] }));
    await saveStore(path, [savedTask({ id: "bg_ours0001" })]);
    await saveStore(path, [savedTask({ id: "bg_ours0001", status: "completed" })]);
    expect(read(path).tasks.map((t: BackgroundTask) => [t.id, t.status])).toEqual([
      ["bg_theirs01", "running"],
      ["bg_ours0001", "completed"],
    ]);
    expect(asideFiles(dir)).toHaveLength(1);
    expect(read(join(dir, asideFiles(dir)[0]!)).entries.map((e: { entry: unknown }) => e.entry)).toEqual([null, { id: 7 }]);
  });

  it("migrates a version 1 file entry by entry: no prompt, a fork summary, reportedRun = notifiedRun, no pending wakes", async () => {
    const path = join(tempDir(), "p.json");
    const forked = v1Entry({ id: "bg_forked01", isForked: true, forkStats: FORK_STATS, notifiedRun: 1 });
    writeFileSync(path, JSON.stringify({ version: 1, tasks: [v1Entry(), forked], pendingWakes: ["ses_parent"] }));
    const { tasks, warnings } = await loadStore(path);
    expect(warnings).toEqual([]);
    expect(tasks).toHaveLength(2);
    expect(tasks[0]).not.toHaveProperty("prompt");
    expect(tasks[0]!.reportedRun).toBe(1);
    expect(tasks[0]!.fork).toBeUndefined();
    expect(tasks[1]!.fork).toEqual({ kind: "text", keptMessages: 9, totalMessages: 12, chars: 4321, fromCompaction: true });
    expect(tasks[1]).not.toHaveProperty("forkStats");
    await saveStore(path, tasks);
    const saved = read(path);
    expect(saved.version).toBe(2);
    expect(saved).not.toHaveProperty("pendingWakes");
    expect(saved.tasks).toEqual(tasks);
  });

  it.each([
    ["garbage", "{ not json"],
    ["truncated JSON", JSON.stringify({ version: 2, tasks: [savedTask({})] }).slice(0, 60)],
    ["a wrong version", JSON.stringify({ version: 3, tasks: [savedTask({})] })],
    ["a non-object", JSON.stringify([savedTask({})])],
    ["tasks that are not a list", JSON.stringify({ version: 2, tasks: { a: 1 } })],
  ])("moves a file holding %s aside whole, with a warning, and starts empty", async (_what, content) => {
    const dir = tempDir();
    const path = join(dir, "p.json");
    writeFileSync(path, content);
    const { tasks, warnings } = await loadStore(path);
    expect(tasks).toEqual([]);
    expect(warnings[0]).toContain("moved it to");
    expect(existsSync(path)).toBe(false);
    expect(readFileSync(join(dir, asideFiles(dir)[0]!), "utf8")).toBe(content);
    await saveStore(path, [savedTask({})]);
    expect(read(path).tasks).toHaveLength(1);
  });

  it("sets a 150 MB file aside without reading it", async () => {
    const dir = tempDir();
    const path = join(dir, "p.json");
    writeFileSync(path, "{");
    truncateSync(path, 150 * 1024 * 1024); // sparse: no 150 MB written
    const { tasks, warnings } = await loadStore(path);
    expect(tasks).toEqual([]);
    expect(warnings[0]).toMatch(/over the \d+ byte limit/);
    expect(statSync(join(dir, asideFiles(dir)[0]!)).size).toBe(150 * 1024 * 1024);
  });

  it("does not follow a symlink at the path: it is set aside, its target untouched, and saving writes a plain file", async () => {
    const dir = tempDir();
    const path = join(dir, "p.json");
    const target = join(dir, "elsewhere.json");
    const targetContent = JSON.stringify({ version: 2, tasks: [savedTask({ id: "bg_target01" })] });
    writeFileSync(target, targetContent, { mode: 0o644 });
    symlinkSync(target, path);
    const { tasks, warnings } = await loadStore(path);
    expect(tasks).toEqual([]);
    expect(warnings[0]).toContain("symbolic link");
    const aside = join(dir, asideFiles(dir)[0]!);
    expect(lstatSync(aside).isSymbolicLink()).toBe(true);
    await saveStore(path, [savedTask({ id: "bg_ours0001" })]);
    expect(lstatSync(path).isFile()).toBe(true);
    expect(readFileSync(target, "utf8")).toBe(targetContent);
    expect(statSync(target).mode & 0o777).toBe(0o644);
  });

  it("sets aside a dangling symlink planted at the path before saving", async () => {
    const dir = tempDir();
    const path = join(dir, "p.json");
    const target = join(dir, "planted");
    symlinkSync(target, path);
    await saveStore(path, [savedTask({})]);
    expect(existsSync(target)).toBe(false);
    expect(lstatSync(path).isFile()).toBe(true);
    expect(asideFiles(dir).map((f) => lstatSync(join(dir, f)).isSymbolicLink())).toEqual([true]);
  });

  it("sets aside a directory at the path; saving then works", async () => {
    const dir = tempDir();
    const path = join(dir, "p.json");
    mkdirSync(path);
    writeFileSync(join(path, "inside"), "kept");
    const { tasks, warnings } = await loadStore(path);
    expect(tasks).toEqual([]);
    expect(warnings[0]).toContain("a directory");
    expect(readFileSync(join(dir, asideFiles(dir)[0]!, "inside"), "utf8")).toBe("kept");
    await saveStore(path, [savedTask({})]);
    expect(read(path).tasks).toHaveLength(1);
  });

  it("sets aside a FIFO at the path without blocking on it", { timeout: 10_000 }, async () => {
    const dir = tempDir();
    const path = join(dir, "p.json");
    expect(spawnSync("mkfifo", [path]).status).toBe(0);
    const { tasks, warnings } = await loadStore(path);
    expect(tasks).toEqual([]);
    expect(warnings[0]).toContain("FIFO");
    await saveStore(path, [savedTask({})]);
    expect(read(path).tasks).toHaveLength(1);
  });

  it("removes temp files of dead writers at load, and keeps a live writer's", async () => {
    const dir = tempDir();
    const path = join(dir, "p.json");
    await saveStore(path, [savedTask({})]);
    const dead = `p.json.${DEAD_PID}.0a1b2c3d.tmp`;
    const live = `p.json.${process.pid}.0a1b2c3d.tmp`;
    writeFileSync(join(dir, dead), "{ half written");
    writeFileSync(join(dir, live), "{ being written");
    const { tasks } = await loadStore(path);
    expect(tasks).toHaveLength(1);
    expect(readdirSync(dir).sort()).toEqual(["p.json", live]);
  });
});

describe("task file lock", () => {
  const lockOf = (path: string) => `${path}.lock`;
  const writeLock = (path: string, owner: { pid: number }, ageMs = 0) => {
    writeFileSync(lockOf(path), JSON.stringify({ pid: owner.pid, hostname: hostname(), createdAt: Date.now() - ageMs }));
    const t = new Date(Date.now() - ageMs);
    utimesSync(lockOf(path), t, t);
  };
  /** A live process that is not us: the owner of a lock some other writer holds. */
  const liveOwners: ChildProcess[] = [];
  const liveOwner = () => {
    const child = spawn("sleep", ["60"], { stdio: "ignore" });
    liveOwners.push(child);
    return child;
  };
  afterEach(() => {
    for (const c of liveOwners.splice(0)) c.kill("SIGKILL");
  });

  it("serialises two writers: neither loses the other's tasks", async () => {
    const path = join(tempDir(), "p.json");
    await Promise.all([saveStore(path, [savedTask({ id: "bg_writer01" })]), saveStore(path, [savedTask({ id: "bg_writer02" })])]);
    expect(
      read(path)
        .tasks.map((t: BackgroundTask) => t.id)
        .sort(),
    ).toEqual(["bg_writer01", "bg_writer02"]);
    expect(existsSync(lockOf(path))).toBe(false);
  });

  it("takes a lock left by a dead owner at once", async () => {
    const path = join(tempDir(), "p.json");
    writeLock(path, { pid: DEAD_PID });
    await saveStore(path, [savedTask({})]);
    expect(read(path).tasks).toHaveLength(1);
    expect(existsSync(lockOf(path))).toBe(false);
  });

  it("takes a dead owner's lock also when the disk was slower than the wait: the tries alone outlast it", async () => {
    const path = join(tempDir(), "p.json");
    writeLock(path, { pid: DEAD_PID });
    // Every clock reading after the first is 4 s later: the wait for a live writer (3 s) is over by the
    // time the dead owner's lock is taken (in CI, a start-up on a loaded disk gave up there, naming the
    // dead process, and never tidied its store)
    const now = Date.now.bind(Date);
    let readings = 0;
    const clock = vi.spyOn(Date, "now").mockImplementation(() => now() + (readings++ === 0 ? 0 : 4_000));
    try {
      expect(await withLock(path, async () => "written")).toBe("written");
    } finally {
      clock.mockRestore();
    }
    expect(existsSync(lockOf(path))).toBe(false);
  });

  it("takes an empty lock older than 2 s (its writer died before writing its owner)", async () => {
    const path = join(tempDir(), "p.json");
    writeFileSync(lockOf(path), "");
    const t = new Date(Date.now() - 3_000);
    utimesSync(lockOf(path), t, t);
    await saveStore(path, [savedTask({})]);
    expect(read(path).tasks).toHaveLength(1);
  });

  it("takes a live owner's lock older than 10 s (a hung writer)", async () => {
    const path = join(tempDir(), "p.json");
    writeLock(path, { pid: liveOwner().pid! }, 11_000);
    await saveStore(path, [savedTask({})]);
    expect(read(path).tasks).toHaveLength(1);
  });

  it("waits for a live owner's fresh lock, then fails naming the owner, and leaves its lock alone", { timeout: 30_000 }, async () => {
    const path = join(tempDir(), "p.json");
    const owner = liveOwner();
    writeLock(path, { pid: owner.pid! });
    // The owner keeps working (its lock stays fresh) for as long as the save tries.
    const keepFresh = setInterval(() => {
      const now = new Date();
      utimesSync(lockOf(path), now, now);
    }, 500);
    try {
      await expect(saveStore(path, [savedTask({})])).rejects.toThrow(`locked by process ${owner.pid} on ${hostname()}`);
    } finally {
      clearInterval(keepFresh);
    }
    expect(existsSync(path)).toBe(false);
    expect(JSON.parse(readFileSync(lockOf(path), "utf8")).pid).toBe(owner.pid);
  });

  it("retries a failed save: the writer holding the lock is killed after one attempt gave up, and the save then succeeds", { timeout: 30_000 }, async () => {
    const path = join(tempDir(), "p.json");
    const owner = liveOwner();
    writeLock(path, { pid: owner.pid! });
    // One attempt waits at most 3 s for a live writer; this one is killed (leaving its lock) later.
    const killLater = setTimeout(() => owner.kill("SIGKILL"), 3_500);
    try {
      await saveStore(path, [savedTask({ id: "bg_retried1" })]);
    } finally {
      clearTimeout(killLater);
    }
    expect(owner.exitCode !== null || owner.signalCode !== null).toBe(true);
    expect(read(path).tasks.map((t: BackgroundTask) => t.id)).toEqual(["bg_retried1"]);
    expect(existsSync(lockOf(path))).toBe(false);
  });

  const read = (path: string) => JSON.parse(readFileSync(path, "utf8"));
});

describe("start-up recovery", () => {
  async function managerWith(tasks: BackgroundTask[], fake: FakeOpencode) {
    const path = join(tempDir(), "p.json");
    await saveStore(path, tasks);
    const manager = managerOn(fake, path);
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
    const notes = noticesIn(fake, parent);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toContain("finished meanwhile");
    await manager.reconcile();
    expect(noticesIn(fake, parent)).toHaveLength(1);
    await manager.dispose();
  });

  it("marks a task whose child is gone as an error, and one left unfinished as interrupted", async () => {
    const fake = new FakeOpencode();
    const parent = fake.addParent();
    const child = fake.createSession({ parentID: parent }).id;
    await fake.client.session.promptAsync({ path: { id: child }, body: { parts: [{ type: "text", text: "p" }] } } as never);
    fake.sessions.get(child)!.busy = false; // the server restarted: nothing runs any more
    const manager = await managerWith(
      [
        savedTask({ id: "bg_gone0001", sessionID: "ses_gone", parentSessionID: parent }),
        savedTask({ id: "bg_half0001", sessionID: child, parentSessionID: parent, startedAt: 0 }),
      ],
      fake,
    );
    expect(manager.get("bg_gone0001")!.status).toBe("error");
    expect(manager.get("bg_gone0001")!.error).toContain("no longer exists");
    expect(manager.get("bg_half0001")!.status).toBe("interrupted");
    expect(manager.get("bg_half0001")!.error).toContain("OpenCode stopped");
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
    const saved = readStoredTasks((manager as unknown as { legacyTaskFile: string }).legacyTaskFile);
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

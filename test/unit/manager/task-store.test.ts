import { spawn, spawnSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { historyLine } from "../../../src/store/history.js";
import { saveStore } from "../../legacy-task-file.js";
import { TaskManager } from "../../../src/manager/task-manager.js";
import { TaskFiles } from "../../../src/store/task-files.js";
import { TOMBSTONE_BYTES_KEPT } from "../../../src/store/tombstones.js";
import { storeDir } from "../../../src/store-paths.js";
import type { BackgroundTask } from "../../../src/task-record.js";
import { DEFAULT_OPTIONS, parseOptions } from "../../../src/options.js";
import { createBackgroundOutputTool } from "../../../src/tools/background-output.js";
import { taskService } from "../../../src/manager/service.js";
import { readStoredTasks } from "../../stored-tasks.js";
import { FakeOpencode } from "./fake-opencode.js";
import { arrange, managerOn, noticesIn, savedTask, toolContext, wire } from "./setup.js";

const DEAD_PID = spawnSync("true").pid!;
const DAY = 24 * 3600 * 1000;
const NOW = 1_800_000_000_000;
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function legacyPath(): string {
  const d = mkdtempSync(join(tmpdir(), "offshoot-tstore-"));
  dirs.push(d);
  return join(d, "proj.json");
}
const retention = { historyDays: 30, historyMax: 2000 };
const store = (path: string, r = retention, now = () => NOW) => new TaskFiles(path, r, now);

/** An ended task whose parent was told (notice and wake): what retention may drop. */
function ended(i: number, overrides: Partial<BackgroundTask> = {}): BackgroundTask {
  const at = overrides.completedAt ?? NOW - 1000;
  return savedTask({
    ownerPid: DEAD_PID,
    id: `bg_${String(i).padStart(8, "0")}`,
    sessionID: `ses_child${i}`,
    parentSessionID: `ses_parent${i % 3}`,
    callID: `call_${i}`,
    description: `task ${i}`,
    status: "completed",
    run: 1,
    notifiedRun: 1,
    reportedRun: 1,
    createdAt: at - 5000 + i,
    startedAt: at - 5000,
    completedAt: at,
    ...overrides,
  });
}
const running = (i: number, overrides: Partial<BackgroundTask> = {}) =>
  ended(i, { status: "running", notifiedRun: 0, reportedRun: 0, completedAt: undefined, ...overrides });
const historyOf = (path: string) => join(storeDir(path), "history.jsonl");
const lines = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : []);
/** Writes a history file of `tasks`, each settled at its completedAt. */
function writeHistory(path: string, tasks: BackgroundTask[]) {
  mkdirSync(storeDir(path), { recursive: true, mode: 0o700 });
  writeFileSync(historyOf(path), tasks.map((t) => `${historyLine(t, t.completedAt!)}\n`).join(""), { mode: 0o600 });
}

describe("task store layout", () => {
  it("keeps live tasks in open.json and moves a settled one to the history, mode 0600 in a 0700 directory", async () => {
    const path = legacyPath();
    const s = store(path);
    await s.open();
    const a = running(1);
    const b = running(2);
    await s.save([a, b]);
    expect(readStoredTasks(path).open.map((t) => t.id)).toEqual([a.id, b.id]);
    expect(lines(historyOf(path))).toEqual([]);

    Object.assign(a, { status: "completed", completedAt: NOW, notifiedRun: 1 });
    await s.save([a, b]);
    const files = readStoredTasks<BackgroundTask>(path);
    expect(files.open.map((t) => t.id)).toEqual([b.id]);
    expect(files.history).toEqual([a]);
    expect(statSync(storeDir(path)).mode & 0o777).toBe(0o700);
    for (const f of ["open.json", "history.jsonl"]) expect(statSync(join(storeDir(path), f)).mode & 0o777).toBe(0o600);
    expect(readdirSync(storeDir(path)).sort()).toEqual(["history.jsonl", "open.json"]);
  });

  it("a save writes only what changed: 1,000 settled tasks are not written again", async () => {
    const path = legacyPath();
    writeHistory(
      path,
      Array.from({ length: 1000 }, (_, i) => ended(i)),
    );
    const before = readFileSync(historyOf(path), "utf8");
    const s = store(path);
    await s.open();
    const live = running(5000);
    await s.save([live]);
    await s.save([live]);
    expect(readFileSync(historyOf(path), "utf8")).toBe(before);
    expect(readStoredTasks(path).open.map((t) => t.id)).toEqual([live.id]);
    Object.assign(live, { status: "error", completedAt: NOW, notifiedRun: 1 });
    await s.save([live]);
    expect(lines(historyOf(path))).toHaveLength(1001);
    expect(readFileSync(historyOf(path), "utf8").startsWith(before)).toBe(true);
  });

  it("after a restart a parent's settled tasks are listed in launch order; a resumed one is live again and its newest state wins", async () => {
    const path = legacyPath();
    const fake = new FakeOpencode();
    const parent = fake.addParent();
    const old = [ended(1, { parentSessionID: parent }), ended(2, { parentSessionID: parent }), ended(3, { parentSessionID: "ses_other" })];
    writeHistory(path, old);
    const open = running(4, { parentSessionID: parent, createdAt: old[0]!.createdAt - 10, ownerPid: DEAD_PID, sessionID: "", status: "queued" });
    await saveStore(join(storeDir(path), "open.json"), [open]);
    const manager = managerOn(fake, path, { options: { concurrency: 1 }, now: () => NOW });
    await manager.ready();
    expect(manager.tasksOf(parent).map((t) => t.id)).toEqual([open.id, old[0]!.id, old[1]!.id]);
    expect(manager.isChildSession(old[2]!.sessionID)).toBe(true);

    // A settled task changes (the parent is woken about it again, say): its newest line wins.
    const task = manager.get(old[1]!.id)!;
    arrange(task).toolCalls = 42;
    arrange(task).status = "interrupted";
    await manager.save();
    await manager.dispose();
    const files = readStoredTasks<BackgroundTask>(path);
    expect(files.history.find((t) => t.id === old[1]!.id)).toMatchObject({ status: "interrupted", toolCalls: 42 });
    expect(lines(historyOf(path))).toHaveLength(4);
  });

  it("two processes on one project keep each other's tasks, open and settled", async () => {
    const path = legacyPath();
    const one = store(path);
    const two = store(path);
    await one.open();
    await two.open();
    const mine = running(1);
    const theirs = running(2);
    await Promise.all([one.save([mine]), two.save([theirs])]);
    expect(
      readStoredTasks(path)
        .open.map((t) => t.id)
        .sort(),
    ).toEqual([mine.id, theirs.id]);
    Object.assign(mine, { status: "completed", completedAt: NOW, notifiedRun: 1 });
    await one.save([mine]);
    const files = readStoredTasks(path);
    expect(files.open.map((t) => t.id)).toEqual([theirs.id]);
    expect(files.history.map((t) => t.id)).toEqual([mine.id]);
  });
});

describe("retention", () => {
  it("takes historyDays and historyMax as options (defaults 30 and 2,000); a bad one is reported and its default used", () => {
    expect(DEFAULT_OPTIONS).toMatchObject({ historyDays: 30, historyMax: 2000 });
    expect(parseOptions({ historyDays: 7, historyMax: 50 })).toEqual({ options: { ...DEFAULT_OPTIONS, historyDays: 7, historyMax: 50 }, warnings: [] });
    const { options, warnings } = parseOptions({ historyDays: 0, historyMax: "many" });
    expect(options).toMatchObject({ historyDays: 30, historyMax: 2000 });
    expect(warnings.join("\n")).toContain('option "historyDays" must be a whole number of days from 1 to 36500; got number 0. Using the default, 30.');
    expect(warnings.join("\n")).toContain('option "historyMax" must be a whole number of tasks from 1 to 1000000');
  });

  it("drops told-about tasks older than historyDays and the oldest over historyMax; never a live or unreported one", async () => {
    const path = legacyPath();
    const old = Array.from({ length: 5 }, (_, i) => ended(i, { completedAt: NOW - 40 * DAY + i }));
    const unreported = ended(10, { completedAt: NOW - 90 * DAY, reportedRun: 0 });
    const recent = Array.from({ length: 6 }, (_, i) => ended(20 + i, { completedAt: NOW - (10 - i) * DAY }));
    writeHistory(path, [...old, unreported, ...recent]);
    const live = running(30, { createdAt: NOW - 100 * DAY, startedAt: NOW - 100 * DAY });
    await saveStore(join(storeDir(path), "open.json"), [live]);

    const s = store(path, { historyDays: 30, historyMax: 4 });
    const before = readFileSync(historyOf(path), "utf8");
    const { tasks, droppedSessions } = await s.open();
    expect(tasks.map((t) => t.id)).toEqual([live.id]);
    // Start-up decides in memory and rewrites nothing; the rewrite comes after it (maintain).
    expect(readFileSync(historyOf(path), "utf8")).toBe(before);
    expect(s.parentOf(old[0]!.id)).toBeUndefined();
    expect(s.droppedTask(old[0]!.id, old[0]!.parentSessionID)).toMatchObject({ session: old[0]!.sessionID });
    expect(s.needsUpkeep()).toBe(true);
    expect((await s.maintain()).droppedSessions).toEqual([]); // already reported by open()
    expect(s.needsUpkeep()).toBe(false);
    const kept = readStoredTasks(path).history.map((t) => t.id);
    // 5 too old; of the 7 left, 4 may stay: the unreported one and the 3 newest
    expect(kept).toEqual([unreported.id, ...recent.slice(3).map((t) => t.id)]);
    expect(droppedSessions.sort()).toEqual([...old, ...recent.slice(0, 3)].map((t) => t.sessionID).sort());
    expect(lines(join(storeDir(path), "dropped.jsonl"))).toHaveLength(8);
    // Nothing more to drop at the next start.
    const again = await store(path, { historyDays: 30, historyMax: 4 }).open();
    expect(again.droppedSessions).toEqual([]);
  });

  it("a start-up that found the store locked by a live writer tidies it at its first upkeep once the lock is free", { timeout: 30_000 }, async () => {
    const path = legacyPath();
    const old = Array.from({ length: 5 }, (_, i) => ended(i, { completedAt: NOW - 40 * DAY + i }));
    const recent = ended(20, { completedAt: NOW - DAY });
    writeHistory(path, [...old, recent]);
    // Another live process holds the store's lock, and keeps it fresh, for longer than a start-up waits (3 s).
    const lock = join(storeDir(path), "open.json.lock");
    const owner = spawn("sleep", ["60"], { stdio: "ignore" });
    writeFileSync(lock, JSON.stringify({ pid: owner.pid, hostname: hostname(), createdAt: Date.now() }));
    const keepFresh = setInterval(() => writeFileSync(lock, readFileSync(lock)), 500);
    const s = store(path, { historyDays: 30, historyMax: 100 });
    let opened;
    try {
      opened = await s.open();
    } finally {
      clearInterval(keepFresh);
      owner.kill("SIGKILL");
    }
    expect(opened.warnings.join("\n")).toContain("read it without cleaning it up");
    expect(lines(historyOf(path))).toHaveLength(6);
    rmSync(lock); // the other writer is done
    // (before: the process never tidied its store, and retention waited for its next start)
    expect(s.needsUpkeep()).toBe(true);
    const { droppedSessions } = await s.maintain();
    expect(droppedSessions.sort()).toEqual(old.map((t) => t.sessionID).sort()); // open() reported none of them
    expect(readStoredTasks(path).history.map((t) => t.id)).toEqual([recent.id]);
    expect(lines(join(storeDir(path), "dropped.jsonl"))).toHaveLength(5);
    expect(s.needsUpkeep()).toBe(false);
  });

  it("background_output and resume of a dropped task say it is past the history limit and name its child session", async () => {
    const path = legacyPath();
    const fake = new FakeOpencode();
    const parent = fake.addParent();
    const gone = ended(1, { parentSessionID: parent, completedAt: NOW - 60 * DAY });
    const kept = ended(2, { parentSessionID: parent });
    writeHistory(path, [gone, kept]);
    const manager = new TaskManager({ client: fake.client, legacyTaskFile: path, reconcileIntervalMs: 60_000, now: () => NOW });
    await manager.ready();
    const output = createBackgroundOutputTool(taskService(manager));
    const text = (await output.execute({ task_id: gone.id }, toolContext(parent))) as string;
    expect(text).toContain(`task ${gone.id} is past the history limit`);
    expect(text).toContain(gone.sessionID);
    // another session asking gets the ordinary answer
    const other = fake.addParent();
    expect(await output.execute({ task_id: gone.id }, toolContext(other))).not.toContain("past the history limit");
    const read = await output.execute({ task_id: kept.id }, toolContext(parent));
    expect(typeof read === "string" ? read : read.output).toContain(`Task ${kept.id} "task 2": completed`);
    await manager.dispose();
  });
});

describe("orphans", () => {
  it("the children of kept and of dropped tasks are not adopted as orphans at start-up (their metadata still says running)", async () => {
    const path = legacyPath();
    const fake = new FakeOpencode();
    const parent = fake.addParent();
    const child = (taskId: string) =>
      fake.createSession({
        parentID: parent,
        metadata: {
          offshoot: {
            v: 1,
            taskId,
            parentSessionID: parent,
            description: "d",
            forked: false,
            agent: "general",
            status: "running",
            ownerPid: DEAD_PID,
            startedAt: NOW - 60 * DAY,
          },
        },
      }).id;
    const kept = ended(1, { parentSessionID: parent, sessionID: child("bg_00000001") });
    const gone = ended(2, { parentSessionID: parent, sessionID: child("bg_00000002"), completedAt: NOW - 60 * DAY });
    const orphan = child("bg_orphan01");
    writeHistory(path, [kept, gone]);
    const manager = managerOn(fake, path, { now: () => NOW });
    await manager.ready();
    await fake.settle();
    expect(manager.get("bg_00000002")).toBeUndefined();
    expect(manager.get(kept.id)).toMatchObject({ status: "completed", sessionID: kept.sessionID });
    // the one real orphan is adopted, and only its notice goes out
    expect(manager.get("bg_orphan01")).toMatchObject({ status: "interrupted", sessionID: orphan });
    expect(noticesIn(fake, parent)).toEqual([expect.stringContaining("bg_orphan01")]);
    await manager.dispose();
  });
});

describe("the index of the history (history.idx)", () => {
  const indexOf = (path: string) => join(storeDir(path), "history.idx");
  const keepAll = { historyDays: 3650, historyMax: 100_000 };

  it("start-up reads the heads from the index; a parent's records are read from their lines when asked for", async () => {
    const path = legacyPath();
    const fake = new FakeOpencode();
    const parent = fake.addParent();
    const tasks = Array.from({ length: 50 }, (_, i) => ended(i, { parentSessionID: i % 2 ? parent : "ses_other", description: `task ${i} é ✓` }));
    writeHistory(path, tasks);
    const first = store(path, keepAll);
    await first.open();
    await first.maintain();
    expect(statSync(indexOf(path)).mode & 0o777).toBe(0o600);
    expect(lines(indexOf(path))).toHaveLength(51); // its header and one line per task
    // The history is read only where the index points: a record changed in place is read as it is now.
    const file = historyOf(path);
    writeFileSync(file, readFileSync(file, "utf8").replace('"task 49 é ✓"', '"TASK 49 é ✓"'));
    const manager = new TaskManager({
      client: fake.client,
      legacyTaskFile: path,
      reconcileIntervalMs: 60_000,
      options: { ...DEFAULT_OPTIONS, ...keepAll },
      now: () => NOW,
    });
    await manager.ready();
    expect(manager.tasksOf(parent).map((t) => t.description)).toEqual(
      tasks.filter((_, i) => i % 2).map((t) => (t.id === tasks[49]!.id ? "TASK 49 é ✓" : t.description)),
    );
    expect(manager.get(tasks[0]!.id)).toMatchObject({ description: "task 0 é ✓" });
    await manager.dispose();
  });

  it("a settled worktree task keeps its worktree state through the index: unchanged it is not written again, a discard is", async () => {
    const path = legacyPath();
    const worktree = { repo: "/r", path: "/w/bg_1", directory: "/w/bg_1", branch: "offshoot/bg_1", base: "abc", parentHead: "abc", linked: [] };
    const task = ended(1, { worktree });
    writeHistory(path, [task]);
    const first = store(path);
    await first.open();
    await first.maintain(); // writes history.idx
    expect(lines(indexOf(path)).at(-1)).toContain('"kept"');

    const second = store(path); // start-up from the index
    await second.open();
    const before = readFileSync(historyOf(path), "utf8");
    await second.save([task]);
    expect(readFileSync(historyOf(path), "utf8")).toBe(before); // its state is the one written: nothing to append
    arrange(task).worktree = { ...worktree, removed: "discarded" };
    await second.save([task]);
    expect(lines(historyOf(path))).toHaveLength(2);
    expect(readStoredTasks<BackgroundTask>(path).tasks[0]!.worktree?.removed).toBe("discarded");
  });

  it("a change made while a save is writing (a discard during the save that settled the task) is written by the next save, not lost", async () => {
    const path = legacyPath();
    const worktree = { repo: "/r", path: "/w/bg_1", directory: "/w/bg_1", branch: "offshoot/bg_1", base: "abc", parentHead: "abc", linked: [] };
    const task = ended(1, { worktree });
    const s = store(path);
    await s.open();
    const saving = s.save([task]); // writes the line that says the worktree is kept, then awaits the disk
    arrange(task).worktree = { ...task.worktree!, removed: "discarded" }; // the live record changes while that save is still writing
    await saving;
    expect(readStoredTasks<BackgroundTask>(path).tasks[0]!.worktree?.removed).toBeUndefined(); // that save wrote the state it started with
    await s.save([task]); // the discard's own save
    expect(readStoredTasks<BackgroundTask>(path).tasks[0]!.worktree?.removed).toBe("discarded");
    const again = store(path); // and a restart reads it so
    await again.open();
    expect(again.historyOf(task.parentSessionID).tasks[0]!.worktree?.removed).toBe("discarded");
  });

  it("tasks given as a function are taken holding the lock, just before the write: a change made after the save was asked for is in it", async () => {
    const path = legacyPath();
    const task = running(1);
    const s = store(path);
    await s.open();
    let takenUnder: number | undefined;
    const saving = s.save(() => {
      takenUnder = JSON.parse(readFileSync(`${s.openPath}.lock`, "utf8")).pid;
      return [task];
    });
    arrange(task).status = "completed"; // the live record changes before the save could take it (it must hold the lock first)
    arrange(task).completedAt = NOW;
    await saving;
    expect(takenUnder).toBe(process.pid);
    expect(readStoredTasks<BackgroundTask>(path).tasks[0]).toMatchObject({ id: task.id, status: "completed" });
  });

  it("a new project: after the upkeep the first tasks that settle get their index lines, and the next start needs no rewrite", async () => {
    const path = legacyPath();
    const s = store(path);
    await s.open();
    await s.maintain();
    expect(statSync(historyOf(path)).mode & 0o777).toBe(0o600);
    expect(lines(indexOf(path))).toHaveLength(1);
    const first = ended(1);
    await s.save([first]);
    expect(lines(indexOf(path))).toHaveLength(2);
    const again = store(path);
    await again.open();
    expect(again.historyOf(first.parentSessionID).tasks.map((t) => t.id)).toEqual([first.id]);
    expect(again.needsUpkeep()).toBe(false);
  });

  it("a line the index misses (a crash between the two appends, another process) is read from the history; the index is written anew", async () => {
    const path = legacyPath();
    writeHistory(path, [ended(1), ended(2)]);
    const s = store(path, keepAll);
    await s.open();
    await s.maintain();
    const indexed = readFileSync(indexOf(path), "utf8");
    const late = ended(3);
    await s.save([late]);
    expect(lines(indexOf(path))).toHaveLength(4);
    writeFileSync(indexOf(path), indexed); // as if the process died before appending the index line
    const again = store(path, keepAll);
    await again.open();
    expect(again.historyOf(late.parentSessionID).tasks.map((t) => t.id)).toContain(late.id);
    expect(again.needsUpkeep()).toBe(true);
    await again.maintain();
    expect(lines(indexOf(path))).toHaveLength(4);
    expect(again.needsUpkeep()).toBe(false);
  });

  it("an index that is not of this history (garbage, a symlink, the file before a rewrite) is ignored and written anew; its target untouched", async () => {
    const path = legacyPath();
    const tasks = [ended(1), ended(2), ended(3)];
    writeHistory(path, tasks);
    const target = join(storeDir(path), "..", "secret.txt");
    for (const bad of ["garbage\n[1,2,3]\n", "symlink", "other"]) {
      rmSync(indexOf(path), { force: true });
      if (bad === "symlink") {
        writeFileSync(target, "secret", { mode: 0o644 });
        symlinkSync(target, indexOf(path));
      } else if (bad === "other") {
        // the index of the file as it was before someone replaced it: another inode
        const s0 = store(path, keepAll);
        await s0.open();
        await s0.maintain();
        const copy = readFileSync(historyOf(path));
        rmSync(historyOf(path));
        writeFileSync(historyOf(path), Buffer.concat([Buffer.from(`${historyLine(ended(9), NOW)}\n`), copy]), { mode: 0o600 });
      } else writeFileSync(indexOf(path), bad);
      const s = store(path, keepAll);
      await s.open();
      const expected = bad === "other" ? [ended(9), ...tasks] : tasks;
      for (const t of expected)
        expect(
          s.historyOf(t.parentSessionID).tasks.map((x) => x.id),
          bad,
        ).toContain(t.id);
      await s.maintain();
      expect(lstatSync(indexOf(path)).isFile()).toBe(true);
      expect(lines(indexOf(path))).toHaveLength(expected.length + 1);
    }
    expect(readFileSync(target, "utf8")).toBe("secret");
  });

  it("two processes: one rewrites the history while the other runs; the other still reads its tasks, from where they are now", async () => {
    const path = legacyPath();
    const old = Array.from({ length: 10 }, (_, i) => ended(i, { completedAt: NOW - 60 * DAY }));
    const mine = ended(20, { parentSessionID: "ses_mine" });
    writeHistory(path, [...old, mine]);
    const one = store(path, keepAll);
    await one.open();
    const two = store(path); // default retention: the old ones go
    await two.open();
    await two.maintain();
    expect(lines(historyOf(path))).toHaveLength(1);
    expect(one.historyOf("ses_mine").tasks.map((t) => t.id)).toEqual([mine.id]);
  });
});

describe("retention during a long run", () => {
  it("a process that keeps running drops what retention says once the history grows past historyMax by the slack, after a save", async () => {
    const path = legacyPath();
    const fake = new FakeOpencode();
    const parent = fake.addParent();
    writeHistory(
      path,
      Array.from({ length: 60 }, (_, i) => ended(i, { parentSessionID: parent })),
    );
    const manager = new TaskManager({
      client: fake.client,
      legacyTaskFile: path,
      reconcileIntervalMs: 60_000,
      options: { ...DEFAULT_OPTIONS, historyMax: 10 },
      now: () => NOW,
    });
    const told: string[] = [];
    manager.onHistoryDropped = (sessions) => told.push(...sessions); // their fork files go (index.ts)
    await manager.ready();
    await manager.save(); // the rewrite queued after start-up
    expect(lines(historyOf(path))).toHaveLength(10);
    expect(told).toEqual([]); // dropped at start-up: reported by open() (droppedSessions), not again
    expect(lines(join(storeDir(path), "dropped.jsonl"))).toHaveLength(50);
    // weeks of running: 55 more tasks settle; past 10 + 50 the next save's rewrite drops the oldest
    const settled = Array.from({ length: 55 }, (_, i) => ended(100 + i, { parentSessionID: parent, ownerPid: process.pid }));
    for (const [i, t] of settled.entries()) {
      manager.registry.add(t, { fromFile: true });
      await manager.save();
      if (i === 48) expect(lines(historyOf(path))).toHaveLength(59); // within the slack: appended only
    }
    // the 51st pushed it past 60: cut back to the newest 10, then 4 more were appended
    expect(lines(historyOf(path))).toHaveLength(14);
    expect(readStoredTasks(path).history.map((t) => t.id)).toEqual(settled.slice(-14).map((t) => t.id));
    // and memory holds only what is kept
    expect(manager.tasksOf(parent).map((t) => t.id)).toEqual(settled.slice(-14).map((t) => t.id));
    expect(manager.droppedTask(settled[0]!.id, parent)).toMatchObject({ session: settled[0]!.sessionID });
    expect(told).toHaveLength(51);
    expect(told).toContain(settled[40]!.sessionID);
    expect(told).not.toContain(settled[41]!.sessionID);
    await manager.dispose();
  });
});

describe("orphans: where to look (runs.json)", () => {
  it("after a graceful stop the next start lists no sessions; after a process died, only those updated since it started, and its orphan is adopted once", async () => {
    const path = legacyPath();
    const fake = new FakeOpencode();
    const parent = fake.addParent();
    const start = () => new TaskManager({ client: fake.client, legacyTaskFile: path, reconcileIntervalMs: 60_000, now: () => NOW });
    const first = start();
    await first.ready();
    expect(fake.callsOf("session.list")).toHaveLength(1); // no record yet: the server's default listing, as before
    expect(JSON.parse(readFileSync(join(storeDir(path), "runs.json"), "utf8"))).toEqual({ [process.pid]: NOW });
    await first.dispose();
    expect(JSON.parse(readFileSync(join(storeDir(path), "runs.json"), "utf8"))).toEqual({});

    const second = start();
    await second.ready();
    expect(fake.callsOf("session.list")).toHaveLength(1); // nobody died: nothing to look for
    await second.dispose();

    // A process that started an hour ago was killed in the middle of a launch.
    const diedStart = NOW - 3600_000;
    writeFileSync(join(storeDir(path), "runs.json"), JSON.stringify({ [DEAD_PID]: diedStart }));
    const orphan = fake.createSession({
      parentID: parent,
      metadata: {
        offshoot: {
          v: 1,
          taskId: "bg_orphan02",
          parentSessionID: parent,
          description: "d",
          forked: false,
          agent: "general",
          status: "running",
          ownerPid: DEAD_PID,
          startedAt: NOW - 1000,
        },
      },
    }).id;
    const third = start();
    wire(fake, third);
    await third.ready();
    await fake.settle();
    const calls = fake.callsOf("session.list");
    expect(calls).toHaveLength(2);
    expect(calls[1]!.options).toMatchObject({ query: { start: diedStart - 60_000 } });
    expect(third.get("bg_orphan02")).toMatchObject({ status: "interrupted", sessionID: orphan });
    expect(Object.keys(JSON.parse(readFileSync(join(storeDir(path), "runs.json"), "utf8")))).toEqual([String(process.pid)]);
    await third.dispose();
  });
});

describe("hostile history", () => {
  it("sets bad lines aside and loads the good ones; a line cut by a crash is ignored and the next append starts a new line", async () => {
    const path = legacyPath();
    const good = [ended(1), ended(2)];
    writeHistory(path, good);
    const file = historyOf(path);
    writeFileSync(file, `not a line\n${readFileSync(file, "utf8")}[1,"bg_x"\n${historyLine(ended(3), NOW).slice(0, 40)}`);
    const s = store(path);
    await s.open();
    const { warnings } = await s.maintain();
    expect(warnings.join("\n")).toContain("set aside 2 bad lines");
    const aside = readdirSync(storeDir(path)).filter((f) => f.startsWith("history.jsonl.corrupt-"));
    expect(JSON.parse(readFileSync(join(storeDir(path), aside[0]!), "utf8")).lines).toEqual(["not a line", '[1,"bg_x"']);
    expect(readStoredTasks(path).history.map((t) => t.id)).toEqual(good.map((t) => t.id));

    // a torn last line left by a crash while appending: the next append is still a whole line
    writeFileSync(file, `${readFileSync(file, "utf8")}[1800000000000,"bg_torn`);
    const later = ended(4);
    await s.save([later]);
    expect(readStoredTasks(path).history.map((t) => t.id)).toEqual([...good, later].map((t) => t.id));
  });

  it("does not follow a symlink at history.jsonl: it is set aside, its target untouched", async () => {
    const path = legacyPath();
    mkdirSync(storeDir(path), { recursive: true });
    const target = join(storeDir(path), "..", "secret.txt");
    writeFileSync(target, "secret", { mode: 0o644 });
    symlinkSync(target, historyOf(path));
    const s = store(path);
    const { warnings } = await s.open();
    expect(warnings.join("\n")).toContain("symbolic link");
    await s.save([ended(1)]);
    expect(lstatSync(historyOf(path)).isFile()).toBe(true);
    expect(readFileSync(target, "utf8")).toBe("secret");
  });
});

describe("moving the version 2 task file in", () => {
  it("moves every task once, keeping notice states, and keeps the old file as .migrated", async () => {
    const path = legacyPath();
    const settled = ended(1, { notifiedRun: 1, reportedRun: 0 });
    const owed = ended(2, { notifiedRun: 0, reportedRun: 0 });
    const live = running(3);
    await saveStore(path, [settled, owed, live]);
    const { tasks, warnings } = await store(path).open();
    expect(warnings.join("\n")).toContain("moved 3 tasks");
    expect(tasks.map((t) => t.id)).toEqual([owed.id, live.id]);
    const files = readStoredTasks<BackgroundTask>(path);
    expect(files.history).toEqual([settled]);
    expect(files.open).toEqual([owed, live]);
    expect(existsSync(path)).toBe(false);
    expect(JSON.parse(readFileSync(`${path}.migrated`, "utf8")).tasks).toHaveLength(3);
    // only once; the next start reads the new layout cleanly and removes the old file's copy
    expect((await store(path).open()).warnings).toEqual([]);
    expect(existsSync(`${path}.migrated`)).toBe(false);
    expect(readStoredTasks<BackgroundTask>(path).open).toEqual([owed, live]);
  });

  it("the old file's copies stay while a start does not read the new layout cleanly; a clean one removes them (not a foreign file, nor a directory)", async () => {
    const path = legacyPath();
    await saveStore(path, [ended(1), running(2)]);
    await store(path).open();
    writeFileSync(`${path}.migrated-1700000000000`, "{}"); // a second copy (a move repeated after a failure)
    mkdirSync(`${path}.migrated-1`); // not a file: left alone
    writeFileSync(`${path}.migrated-notes`, "mine"); // not a copy's name: left alone
    writeFileSync(historyOf(path), `${readFileSync(historyOf(path), "utf8")}not a line\n`); // a bad line: not clean
    const unclean = await store(path).open();
    expect(unclean.tasks.map((t) => t.id)).toEqual([running(2).id]);
    expect(existsSync(`${path}.migrated`)).toBe(true);
    const cleaning = store(path);
    await cleaning.open();
    await cleaning.maintain(); // the bad line is set aside
    expect(existsSync(`${path}.migrated`)).toBe(true);
    await store(path).open();
    const left = readdirSync(storeDir(path) + "/..").filter((n) => n.startsWith("proj.json.migrated"));
    expect(left.sort()).toEqual(["proj.json.migrated-1", "proj.json.migrated-notes"]);
  });

  it("a failed move leaves the old file untouched, says so, and succeeds at the next start", async () => {
    const path = legacyPath();
    await saveStore(path, [ended(1), running(2)]);
    const before = readFileSync(path, "utf8");
    mkdirSync(historyOf(path), { recursive: true }); // appending to the history fails
    const first = await store(path).open();
    expect(first.warnings.join("\n")).toMatch(/could not move the task file .* it is left as it was/);
    expect(readFileSync(path, "utf8")).toBe(before);
    const second = await store(path).open();
    expect(second.warnings.join("\n")).toContain("moved 2 tasks");
    expect(
      readStoredTasks(path)
        .tasks.map((t) => t.id)
        .sort(),
    ).toEqual([ended(1).id, running(2).id]);
  });
});

describe("a SIGKILL during saves", () => {
  it("loses nothing a save had finished: every acknowledged state is on disk", { timeout: 30_000 }, async () => {
    const path = legacyPath();
    const script = join(storeDir(path), "..", "saver.mts");
    writeFileSync(
      script,
      `import { TaskFiles } from ${JSON.stringify(join(process.cwd(), "src/store/task-files.ts"))};
const s = new TaskFiles(${JSON.stringify(path)}, { historyDays: 30, historyMax: 100000 });
await s.open();
const tasks = [];
for (let i = 0; ; i++) {
  const t = { id: "bg_k" + String(i).padStart(6, "0"), sessionID: "ses_k" + i, parentSessionID: "ses_p", callID: "c" + i, description: "d", agent: "general", isForked: false, ownerPid: process.pid, status: "running", run: 1, notifiedRun: 0, reportedRun: 0, createdAt: i, startedAt: i, toolCalls: 0 };
  tasks.push(t);
  if (i > 0) Object.assign(tasks[i - 1], { status: "completed", completedAt: i, notifiedRun: 1, reportedRun: 1 });
  await s.save(tasks.slice(-2));
  process.stdout.write(i + "\\n");
}
`,
    );
    const child = spawn(process.execPath, ["--import", "tsx", script], { stdio: ["ignore", "pipe", "inherit"] });
    let acknowledged = -1;
    child.stdout.on("data", (d: Buffer) => {
      const last = d.toString().trim().split("\n").pop();
      if (last) acknowledged = Number(last);
    });
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (acknowledged >= 60) {
          clearInterval(check);
          child.kill("SIGKILL");
          resolve();
        }
      }, 5);
    });
    await new Promise((r) => child.on("exit", r));
    const { tasks } = await store(path, { historyDays: 30, historyMax: 100000 }, Date.now).open();
    const all = readStoredTasks<BackgroundTask>(path).tasks;
    const byId = new Map(all.map((t) => [t.id, t]));
    for (let i = 0; i <= acknowledged; i++) {
      const t = byId.get(`bg_k${String(i).padStart(6, "0")}`);
      expect(t, `task ${i}`).toBeDefined();
      if (i < acknowledged) expect(t!.status).toBe("completed");
    }
    expect(tasks.length).toBeLessThanOrEqual(2); // only the last one or two were still live
  });
});

describe("sweeping what a crash left", () => {
  it("at start-up removes the temp files of dead writers in the store's directory (runs.json's too), keeps a live writer's", async () => {
    const path = legacyPath();
    await saveStore(path, [running(1)]);
    await store(path).open();
    const dir = storeDir(path);
    const dead = [`open.json.${DEAD_PID}.0a1b2c3d.tmp`, `runs.json.${DEAD_PID}.0a1b2c3d.tmp`, `history.idx.${DEAD_PID}.ffffffff.tmp`];
    const live = `runs.json.${process.pid}.0a1b2c3d.tmp`;
    for (const name of [...dead, live]) writeFileSync(join(dir, name), "{ half");
    const { tasks } = await store(path).open();
    expect(tasks.map((t) => t.id)).toEqual([running(1).id]);
    expect(readdirSync(dir).filter((n) => n.endsWith(".tmp"))).toEqual([live]);
  });
});

describe("tombstones", () => {
  it("a rewrite that a crash cut short after its tombstones is done again at the next start without writing any of them twice", async () => {
    const path = legacyPath();
    const old = Array.from({ length: 6 }, (_, i) => ended(i, { completedAt: NOW - 40 * DAY + i }));
    writeHistory(path, old);
    // the crash: the tombstones of the first four written (maintain writes them first), the history not yet rewritten
    const file = join(storeDir(path), "dropped.jsonl");
    writeFileSync(
      file,
      old
        .slice(0, 4)
        .map((t) => `${JSON.stringify([t.id, t.parentSessionID, t.sessionID, NOW])}\n`)
        .join(""),
    );
    const s = store(path, { historyDays: 30, historyMax: 100 });
    await s.open();
    await s.maintain();
    const ids = lines(file).map((l) => (JSON.parse(l) as string[])[0]);
    expect(ids.sort()).toEqual(old.map((t) => t.id).sort());
    expect(readStoredTasks(path).history).toEqual([]);
  });

  it("are bounded in bytes as well as in count: long lines are cut back to the newest within TOMBSTONE_BYTES_KEPT", async () => {
    const path = legacyPath();
    await saveStore(path, [running(1)]);
    await store(path).open();
    const file = join(storeDir(path), "dropped.jsonl");
    const line = (i: number) => JSON.stringify([`bg_t${String(i).padStart(7, "0")}`, "ses_parent", `ses_${"x".repeat(8_000)}${i}`, NOW]);
    const count = Math.ceil((2.2 * TOMBSTONE_BYTES_KEPT) / line(0).length); // far fewer lines than TOMBSTONES_KEPT
    writeFileSync(file, Array.from({ length: count }, (_, i) => `${line(i)}\n`).join(""));
    const s = store(path);
    await s.open();
    expect(s.needsUpkeep()).toBe(true);
    await s.maintain();
    expect(statSync(file).size).toBeLessThanOrEqual(TOMBSTONE_BYTES_KEPT);
    const kept = lines(file);
    expect(kept.at(-1)).toBe(line(count - 1));
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThan(count);
    expect(s.droppedTask(`bg_t${String(count - 1).padStart(7, "0")}`, "ses_parent")).toBeDefined();
    expect(s.droppedTask("bg_t0000000", "ses_parent")).toBeUndefined();
    expect(s.needsUpkeep()).toBe(false);
  });
});

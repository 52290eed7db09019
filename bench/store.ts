/**
 * The task store over months of use: save time and start-up time with 100, 1,000 and 20,000 stored
 * (ended) tasks, and the fork storage of 10 native forks of one 5 MB parent.
 *
 *   npx tsx bench/store.ts            (npm run bench runs it; npm run bench:store runs it alone)
 *
 * Records are realistic (~1.1 KB: a fork summary, usage, a model, some with an error). Measured in
 * this process, on files in a temporary directory. The machine is shared, so every number is the
 * best of several rounds and their median ("best / median"), and the floors are measured beside it,
 * interleaved with the rounds: what the machine charges for the work no store design avoids.
 *   - save: one save of this process's live tasks (3 running) after one of them changed, and one
 *     where a task ends and settles (its line is appended). Goal: ≤ 5 ms at 20,000.
 *     Floors: an fsync of one small file (open, write 1 KB, fsync, close), and an atomic write of
 *     one (temp file, fsync, rename: what open.json costs at least). A wrap-up save does both.
 *   - start-up: TaskFiles.open and TaskManager.ready (on a fake server with no sessions) on a store
 *     a running plugin left (history + its index), with every stored task kept (historyMax raised:
 *     the steady state of a heavy user), and the first start on 20,000 where half are older than
 *     30 days and the options are the defaults (retention drops 18,000: decided in memory, the files
 *     rewritten by maintain() after start-up, timed apart). Goal: ≤ 100 ms at 20,000.
 *     Floor: JSON.parse of the index's bytes (what reading the heads of 20,000 tasks costs at least).
 *   - once: the first start on a history without an index (the layout of the first version 3), and
 *     the move of a 20,000-task version 2 file into the new layout; the version 2 file for comparison.
 *   - fork storage: 10 native forks of one 5 MB parent, taken in one turn (the same snapshot) and as
 *     the parent grows (0.5 MB, 1 MB … 5 MB), against one whole snapshot per child as before.
 * Reports only: no assertions (the goals are printed next to the numbers).
 */
import { mkdtempSync, promises as fs, readdirSync, readFileSync, rmSync, statSync, mkdirSync, writeFileSync } from "node:fs";
import { writeFileAtomically } from "../src/atomic-file.js";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { historyLine } from "../src/store/history.js";
import { loadStore, saveStore } from "../test/legacy-task-file.js";
import { TaskManager } from "../src/manager/task-manager.js";
import { TaskFiles } from "../src/store/task-files.js";
import { storeDir } from "../src/store-paths.js";
import type { BackgroundTask, TaskFields } from "../src/task-record.js";
import { DEFAULT_OPTIONS } from "../src/options.js";
import { takeSnapshot } from "../src/native/snapshot.js";
import { ForkStore } from "../src/native/store.js";
import { FakeOpencode } from "../test/unit/manager/fake-opencode.js";

const SIZES = [100, 1_000, 20_000];
const DAY = 24 * 3600 * 1000;
const NOW = Date.now();
const ROUNDS = 15;
const root = mkdtempSync(join(tmpdir(), "offshoot-bench-store-"));

function record(i: number, overrides: Partial<BackgroundTask> = {}): BackgroundTask {
  const at = NOW - 60_000 - i * 1000;
  return {
    id: `bg_${i.toString(36).padStart(8, "0")}`,
    sessionID: `ses_${"c".repeat(20)}${String(i).padStart(6, "0")}`,
    parentSessionID: `ses_${"p".repeat(20)}${String(i % 95).padStart(6, "0")}`,
    callID: `call_${"k".repeat(20)}${i}`,
    description: "Investigate the flaky payment test and report which mock leaks state between cases",
    agent: "general",
    model: { providerID: "anthropic", modelID: "claude-sonnet-4-5" },
    parentAgent: "build",
    parentModel: { providerID: "anthropic", modelID: "claude-sonnet-4-5" },
    isForked: i % 2 === 0,
    fork:
      i % 2 === 0
        ? { kind: "native", messages: 84, estimatedTokens: 61234, rootSessionID: `ses_${"p".repeat(20)}${String(i % 95).padStart(6, "0")}` }
        : undefined,
    ownerPid: 999_999,
    status: i % 10 === 0 ? "error" : "completed",
    run: 1,
    notifiedRun: 1,
    reportedRun: 1,
    createdAt: at - 300_000,
    startedAt: at - 300_000,
    completedAt: at,
    error: i % 10 === 0 ? "stopped: 20 identical calls of the same tool in a row (repeat limit); the child kept reading the same file" : undefined,
    toolCalls: 37,
    lastTool: "bash",
    usage: { input: 123456, output: 7890, reasoning: 1234, cacheRead: 98765, cacheWrite: 4321, cost: 0.4321 },
    ...overrides,
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}
interface Stat {
  best: number;
  median: number;
}
const stat = (xs: number[]): Stat => ({ best: Math.min(...xs), median: median(xs) });
async function time(f: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await f();
  return performance.now() - t;
}
const ms = (x: number) => `${x.toFixed(x < 10 ? 2 : 0)} ms`;
const bm = (s: Stat) => `${ms(s.best)} / ${ms(s.median)}`;
const mb = (bytes: number) => `${(bytes / 1e6).toFixed(2)} MB`;
const KEEP_ALL = { historyDays: 3650, historyMax: 1_000_000 };

/** An fsync of one small file, and an atomic write of one: the floors of a save. */
const floorDir = mkdtempSync(join(root, "floor-"));
async function fsyncSmall(): Promise<number> {
  const path = join(floorDir, "f");
  return time(async () => {
    const h = await fs.open(path, "w", 0o600);
    await h.write(FLOOR_BYTES);
    await h.sync();
    await h.close();
  });
}
const FLOOR_BYTES = Buffer.alloc(1024, 0x61);
const atomicSmall = () => time(() => writeFileAtomically(join(floorDir, "a"), FLOOR_BYTES));

/**
 * A project directory whose history holds `n` ended tasks, settled at their completedAt, as a running
 * plugin leaves it (with its index; `indexed: false`: without, as the first version 3 wrote it).
 */
async function projectWith(n: number, at: (i: number) => number = (i) => NOW - 60_000 - i * 1000, indexed = true): Promise<string> {
  const dir = mkdtempSync(join(root, "p-"));
  const legacy = join(dir, "proj.json");
  mkdirSync(storeDir(legacy), { recursive: true, mode: 0o700 });
  const lines: string[] = [];
  for (let i = n - 1; i >= 0; i--) {
    const t = record(i, { completedAt: at(i) });
    lines.push(historyLine(t, t.completedAt!));
  }
  writeFileSync(join(storeDir(legacy), "history.jsonl"), lines.length ? `${lines.join("\n")}\n` : "", { mode: 0o600 });
  if (indexed) {
    const s = new TaskFiles(legacy, KEEP_ALL);
    await s.open();
    await s.maintain();
  }
  return legacy;
}

const live = (i: number) => record(1_000_000 + i, { status: "running", notifiedRun: 0, reportedRun: 0, completedAt: undefined, ownerPid: process.pid });

async function saves(n: number): Promise<{ change: Stat; settle: Stat; fsync: Stat; atomic: Stat }> {
  const legacy = await projectWith(n);
  const store = new TaskFiles(legacy, KEEP_ALL);
  await store.open();
  const tasks: TaskFields[] = [live(0), live(1), live(2)]; // (the bench changes a record by hand: no step runs here)
  await store.save(tasks);
  for (let w = 0; w < 3; w++) {
    // warm-up (compiled code paths), not counted
    tasks[1]!.toolCalls += 1;
    await store.save(tasks);
    await fsyncSmall();
    await atomicSmall();
  }
  const change: number[] = [];
  const settle: number[] = [];
  const fsync: number[] = [];
  const atomic: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    tasks[0]!.toolCalls += 1;
    change.push(await time(() => store.save(tasks)));
    fsync.push(await fsyncSmall());
    const ending = live(10 + r);
    await store.save([...tasks, ending]);
    Object.assign(ending, { status: "completed", completedAt: Date.now(), notifiedRun: 1 });
    settle.push(await time(() => store.save([...tasks, ending])));
    atomic.push(await atomicSmall());
  }
  return { change: stat(change), settle: stat(settle), fsync: stat(fsync), atomic: stat(atomic) };
}

async function startups(n: number): Promise<{ open: Stat; ready: Stat; parse: Stat }> {
  const legacy = await projectWith(n);
  const open: number[] = [];
  const ready: number[] = [];
  const parse: number[] = [];
  const index = join(storeDir(legacy), "history.idx");
  for (let r = 0; r < Math.min(ROUNDS, 9); r++) {
    open.push(await time(() => new TaskFiles(legacy, KEEP_ALL).open()));
    const fake = new FakeOpencode();
    const manager = new TaskManager({ client: fake.client, legacyTaskFile: legacy, options: { ...DEFAULT_OPTIONS, ...KEEP_ALL }, reconcileIntervalMs: 60_000 });
    ready.push(await time(() => manager.ready()));
    await manager.dispose();
    const bytes = readFileSync(index);
    parse.push(await time(async () => JSON.parse(`[${bytes.toString("latin1").split("\n").slice(1, -1).join(",")}]`)));
  }
  return { open: stat(open), ready: stat(ready), parse: stat(parse) };
}

/** 20,000 ended tasks, half settled more than 30 days ago; the default options (30 days, 2,000). */
async function firstStartWithRetention(indexed: boolean): Promise<{ ready: Stat; maintain: Stat; dropped: number }> {
  const ready: number[] = [];
  const maintain: number[] = [];
  let dropped = 0;
  for (let r = 0; r < (indexed ? 5 : 3); r++) {
    const legacy = await projectWith(20_000, (i) => (i < 10_000 ? NOW - (i + 1) * 60_000 : NOW - 31 * DAY - i * 1000), indexed);
    const fake = new FakeOpencode();
    const manager = new TaskManager({ client: fake.client, legacyTaskFile: legacy, options: { ...DEFAULT_OPTIONS }, reconcileIntervalMs: 60_000 });
    ready.push(await time(() => manager.ready()));
    dropped = manager.droppedSessions.length;
    // the rewrite the manager queued after start-up
    maintain.push(await time(() => manager.save()));
    await manager.dispose();
  }
  return { ready: stat(ready), maintain: stat(maintain), dropped };
}

async function versionTwo(n: number): Promise<{ save: number; load: number; move: number }> {
  const dir = mkdtempSync(join(root, "v2-"));
  const path = join(dir, "proj.json");
  const tasks = Array.from({ length: n }, (_, i) => record(i));
  await saveStore(path, tasks);
  const rounds = n >= 20_000 ? 1 : 5;
  const save: number[] = [];
  const load: number[] = [];
  for (let r = 0; r < rounds; r++) {
    save.push(await time(() => saveStore(path, [live(r)])));
    load.push(await time(() => loadStore(path)));
  }
  const move = await time(() => new TaskFiles(path, KEEP_ALL).open());
  return { save: median(save), load: median(load), move };
}

function bytesUnder(d: string): number {
  return readdirSync(d, { withFileTypes: true }).reduce((n, e) => n + (e.isDirectory() ? bytesUnder(join(d, e.name)) : statSync(join(d, e.name)).size), 0);
}

async function forkStorage(): Promise<{ parent: number; sameTurn: number; growing: number; before: number; writeMs: number }> {
  // a 5 MB parent: 500 messages of ~10 KB
  const messages = Array.from({ length: 500 }, (_, i) => ({
    info: { id: `msg_${String(i).padStart(6, "0")}`, sessionID: "ses_parent", role: i % 2 ? "assistant" : "user" },
    parts: [{ id: `prt_${i}`, type: "text", text: `message ${i} `.padEnd(10_000, "lorem ipsum ") }],
  }));
  const parentBytes = JSON.stringify(messages).length;
  const same = new ForkStore(mkdtempSync(join(root, "forks-same-")));
  const snapshot = takeSnapshot(messages as never);
  const writes: number[] = [];
  for (let k = 0; k < 10; k++)
    writes.push(
      await time(() =>
        same.write({ childSessionID: `ses_same${k}`, parentSessionID: "ses_parent", rootSessionID: "ses_parent", createdAt: k }, snapshot.parts),
      ),
    );
  const growing = new ForkStore(mkdtempSync(join(root, "forks-grow-")));
  let before = 0;
  for (let k = 1; k <= 10; k++) {
    const s = takeSnapshot(messages.slice(0, k * 50) as never);
    before += s.json.length;
    await growing.write({ childSessionID: `ses_grow${k}`, parentSessionID: "ses_parent", rootSessionID: "ses_parent", createdAt: k }, s.parts);
  }
  return { parent: parentBytes, sameTurn: bytesUnder(same.dir), growing: bytesUnder(growing.dir), before, writeMs: median(writes.slice(1)) };
}

async function main() {
  console.log("Task store (layout 3: open.json + history.jsonl + history.idx): best / median of the rounds");
  console.log(
    "| stored ended tasks | save (a live task changed) | save (a task settles) | floor: fsync of 1 KB | floor: atomic write of 1 KB | open() | manager ready() | floor: JSON.parse of the index |",
  );
  console.log("|---:|---:|---:|---:|---:|---:|---:|---:|");
  let at20k = { save: 0, ready: 0 };
  for (const n of SIZES) {
    const s = await saves(n);
    const u = await startups(n);
    if (n === 20_000) at20k = { save: Math.max(s.change.median, s.settle.median), ready: u.ready.median };
    console.log(
      `| ${n.toLocaleString("en")} | ${bm(s.change)} | ${bm(s.settle)} | ${bm(s.fsync)} | ${bm(s.atomic)} | ${bm(u.open)} | ${bm(u.ready)} | ${bm(u.parse)} |`,
    );
  }
  const first = await firstStartWithRetention(true);
  console.log(
    `\nFirst start on 20,000 ended tasks, half older than 30 days (default options): manager ready() ${bm(first.ready)}, ${first.dropped.toLocaleString("en")} dropped, 2,000 kept; the rewrite after it (maintain) ${bm(first.maintain)}`,
  );
  const once = await firstStartWithRetention(false);
  console.log(
    `Once: the same on a history without its index (the first version 3 layout): manager ready() ${bm(once.ready)}; the rewrite after it ${bm(once.maintain)}`,
  );
  console.log(`\nThe version 2 task file (before issue 18), for comparison:`);
  console.log("| stored ended tasks | v2 file: save | v2 file: load |");
  console.log("|---:|---:|---:|");
  let move = 0;
  for (const n of SIZES) {
    const v2 = await versionTwo(n);
    console.log(`| ${n.toLocaleString("en")} | ${ms(v2.save)} | ${ms(v2.load)} |`);
    move = v2.move;
  }
  console.log(`Moving a 20,000-task version 2 file into the new layout (once): ${ms(move)}`);
  console.log(
    `\nGoals at 20,000 (medians): save ≤ 5 ms: ${ms(at20k.save)} ${at20k.save <= 5 ? "OK" : "MISSED"}; start-up ≤ 100 ms: ${ms(at20k.ready)} (kept), ${ms(first.ready.median)} (first, dropping) ${Math.max(at20k.ready, first.ready.median) <= 100 ? "OK" : "MISSED"}`,
  );

  const f = await forkStorage();
  console.log(`\nFork storage, 10 native forks of one ${mb(f.parent)} parent (one whole snapshot per child before):`);
  console.log(`| forks | stored now | before | now / parent |`);
  console.log(`|---|---:|---:|---:|`);
  console.log(`| 10 in one turn (same snapshot) | ${mb(f.sameTurn)} | ${mb(f.parent * 10)} | ${(f.sameTurn / f.parent).toFixed(2)}× |`);
  console.log(`| 10 as the parent grows to it | ${mb(f.growing)} | ${mb(f.before)} | ${(f.growing / f.parent).toFixed(2)}× |`);
  console.log(`Writing a fork whose snapshot is already stored: ${ms(f.writeMs)}`);
}

main()
  .catch((error) => {
    console.error(error);
    process.exitCode = 1;
  })
  .finally(() => rmSync(root, { recursive: true, force: true }));

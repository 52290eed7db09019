/**
 * The task store over months of use: save time and start-up time with 100, 1,000 and 20,000 stored
 * (ended) tasks, and the fork storage of 10 native forks of one 5 MB parent.
 *
 *   npx tsx bench/store.ts            (npm run bench runs it; npm run bench:store runs it alone)
 *
 * Records are realistic (~1.1 KB: a fork summary, usage, a model, some with an error). Measured in
 * this process, on files in a temporary directory, median of several rounds (one at 20,000 for the
 * version 2 file, which takes long):
 *   - save: one save of this process's live tasks (3 running) after one of them changed, and one
 *     where a task ends and settles (its line is appended). Goal: ≤ 5 ms at 20,000.
 *   - start-up: TaskStore.open (+ TaskManager.ready on a fake server with no sessions), with every
 *     stored task kept (historyMax raised: the steady state of a heavy user), and the first start on
 *     20,000 where half are older than 30 days and historyMax is the default (retention drops
 *     18,000). Goal: ≤ 100 ms at 20,000.
 *   - for comparison, the version 2 task file (saveStore / loadStore of today's main), and the one-time
 *     move of a 20,000-task version 2 file into the new layout.
 *   - fork storage: 10 native forks of one 5 MB parent, taken in one turn (the same snapshot) and as
 *     the parent grows (0.5 MB, 1 MB … 5 MB), against one whole snapshot per child as before.
 * Reports only: no assertions (the goals are printed next to the numbers).
 */
import { mkdtempSync, readdirSync, rmSync, statSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { historyLine } from "../src/manager/history.js";
import { loadStore, saveStore } from "../src/manager/store.js";
import { TaskManager } from "../src/manager/task-manager.js";
import { TaskStore, storeDir } from "../src/manager/task-store.js";
import type { BackgroundTask } from "../src/manager/types.js";
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
    fork: i % 2 === 0 ? { kind: "native", messages: 84, estimatedTokens: 61234, rootSessionID: `ses_${"p".repeat(20)}${String(i % 95).padStart(6, "0")}` } : undefined,
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
async function time(f: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await f();
  return performance.now() - t;
}
const ms = (x: number) => `${x.toFixed(x < 10 ? 2 : 0)} ms`;
const mb = (bytes: number) => `${(bytes / 1e6).toFixed(2)} MB`;

/** A project directory whose history holds `n` ended tasks, settled at their completedAt. */
function projectWith(n: number, at: (i: number) => number = (i) => NOW - 60_000 - i * 1000): string {
  const dir = mkdtempSync(join(root, "p-"));
  const legacy = join(dir, "proj.json");
  mkdirSync(storeDir(legacy), { recursive: true, mode: 0o700 });
  const lines: string[] = [];
  for (let i = n - 1; i >= 0; i--) {
    const t = record(i, { completedAt: at(i) });
    lines.push(historyLine(t, t.completedAt!));
  }
  writeFileSync(join(storeDir(legacy), "history.jsonl"), lines.length ? `${lines.join("\n")}\n` : "", { mode: 0o600 });
  return legacy;
}

const live = (i: number) => record(1_000_000 + i, { status: "running", notifiedRun: 0, reportedRun: 0, completedAt: undefined, ownerPid: process.pid });

async function saves(n: number): Promise<{ change: number; settle: number }> {
  const legacy = projectWith(n);
  const store = new TaskStore(legacy, { historyDays: 3650, historyMax: 1_000_000 });
  await store.open();
  const tasks = [live(0), live(1), live(2)];
  await store.save(tasks);
  const change: number[] = [];
  const settle: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    tasks[0]!.toolCalls += 1;
    change.push(await time(() => store.save(tasks)));
    const ending = live(10 + r);
    await store.save([...tasks, ending]);
    Object.assign(ending, { status: "completed", completedAt: Date.now(), notifiedRun: 1 });
    settle.push(await time(() => store.save([...tasks, ending])));
  }
  return { change: median(change), settle: median(settle) };
}

async function startups(n: number): Promise<{ open: number; ready: number }> {
  const legacy = projectWith(n);
  const open: number[] = [];
  const ready: number[] = [];
  for (let r = 0; r < Math.min(ROUNDS, 7); r++) {
    open.push(await time(() => new TaskStore(legacy, { historyDays: 3650, historyMax: 1_000_000 }).open()));
    const fake = new FakeOpencode();
    const manager = new TaskManager({ client: fake.client, storePath: legacy, options: { ...DEFAULT_OPTIONS, historyDays: 3650, historyMax: 1_000_000 }, reconcileIntervalMs: 60_000 });
    ready.push(await time(() => manager.ready()));
    await manager.dispose();
  }
  return { open: median(open), ready: median(ready) };
}

async function firstStartWithRetention(): Promise<{ ms: number; kept: number; dropped: number }> {
  // 20,000 ended tasks, half settled more than 30 days ago; the default options (30 days, 2,000)
  const legacy = projectWith(20_000, (i) => (i < 10_000 ? NOW - (i + 1) * 60_000 : NOW - 31 * DAY - i * 1000));
  const fake = new FakeOpencode();
  const manager = new TaskManager({ client: fake.client, storePath: legacy, options: { ...DEFAULT_OPTIONS }, reconcileIntervalMs: 60_000 });
  const t = await time(() => manager.ready());
  await manager.dispose();
  return { ms: t, kept: 2_000, dropped: manager.droppedSessions.length };
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
  const move = await time(() => new TaskStore(path, { historyDays: 3650, historyMax: 1_000_000 }).open());
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
  for (let k = 0; k < 10; k++) writes.push(await time(() => same.write({ childSessionID: `ses_same${k}`, parentSessionID: "ses_parent", rootSessionID: "ses_parent", createdAt: k }, snapshot.parts)));
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
  console.log("Task store (layout 3: open.json + history.jsonl), medians");
  console.log("| stored ended tasks | save (a live task changed) | save (a task settles) | open() | manager ready() | v2 file: save | v2 file: load |");
  console.log("|---:|---:|---:|---:|---:|---:|---:|");
  let at20k = { change: 0, settle: 0, open: 0 };
  for (const n of SIZES) {
    const s = await saves(n);
    const u = await startups(n);
    const v2 = await versionTwo(n);
    if (n === 20_000) at20k = { change: s.change, settle: s.settle, open: u.ready };
    console.log(`| ${n.toLocaleString("en")} | ${ms(s.change)} | ${ms(s.settle)} | ${ms(u.open)} | ${ms(u.ready)} | ${ms(v2.save)} | ${ms(v2.load)} |`);
    if (n === 20_000) console.log(`\nMoving a 20,000-task version 2 file into the new layout (once): ${ms(v2.move)}`);
  }
  const first = await firstStartWithRetention();
  console.log(`First start on 20,000 ended tasks (half older than 30 days, default options): manager ready() ${ms(first.ms)}, ${first.dropped.toLocaleString("en")} dropped, 2,000 kept`);
  const save = Math.max(at20k.change, at20k.settle);
  console.log(`\nGoals at 20,000: save ≤ 5 ms: ${ms(save)} ${save <= 5 ? "OK" : "MISSED"}; start-up ≤ 100 ms: ${ms(at20k.open)} (kept), ${ms(first.ms)} (first, dropping) ${Math.max(at20k.open, first.ms) <= 100 ? "OK" : "MISSED"}`);

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

/**
 * What a worktree task costs on a big repository, against git's own floor, side by side in one run
 * (`npx tsx bench/worktree-scale.ts [--files N] [--runs R]`; 50,000 tracked files by default, with a
 * few uncommitted changes so that the launch's snapshot has work to do):
 *   - one launch's worktree (createWorktree, text-contained and sandboxed) against `git worktree add`
 *     of the same commit alone;
 *   - eight launches in one turn (eight createWorktree at once) against eight `git worktree add`;
 *   - the start-up sweep of four clean leftover worktrees against git removing four others itself.
 * Runs interleave (floor, then ours; for eight launches, alternately which goes first) so that the
 * machine's drift hits both, and each timed part starts after a `sync` (bench/worktree-bench.ts). Reports only.
 *
 * A `git worktree add` of the same commit varies here from under 1 s to over 10 s between runs (the
 * file system's own stalls, most of it kernel time, whatever runs it), so each of ours is also split by
 * git's trace (GIT_TRACE2_EVENT) into the time its own `git worktree add` took, its snapshot, and the
 * rest: "ours against the git worktree add inside it" is measured in the same moment, and is the
 * plugin's own cost.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { commitRun, createWorktree, removeWorktree } from "../src/worktree/worktree.js";
import { sweepOrphanWorktrees } from "../src/worktree/sweep.js";
import { probeSandbox } from "../src/worktree/sandbox/probe.js";
import { pairedRatios, printRatio } from "./ratio.js";
import { generatedRepo, median, numberArg, timed } from "./worktree-bench.js";

const FILES = numberArg("--files", 50_000);
const RUNS = numberArg("--runs", 3);

/** Where a launch's time went, read from git's trace of the commands it ran (top-level git processes only). */
interface Split {
  add: number;
  snapshot: number;
  /** its `git worktree remove`s (the sweep's) */
  remove: number;
}

let traceN = 0;
/** Runs `work` with git's event trace on, and sums the ms its `git worktree add` and its snapshot (add -A, write-tree, commit-tree) took. */
async function traced<T>(dir: string, work: () => Promise<T>): Promise<{ ms: number; value: T; split: Split }> {
  const file = path.join(dir, `trace-${traceN++}.json`);
  process.env.GIT_TRACE2_EVENT = file;
  try {
    const run = await timed(work);
    const argv = new Map<string, string[]>();
    const split: Split = { add: 0, snapshot: 0, remove: 0 };
    for (const line of fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\n") : []) {
      if (!line) continue;
      const event = JSON.parse(line) as { event: string; sid: string; argv?: string[]; t_abs?: number };
      if (event.sid.includes("/")) continue; // a child of a git command: counted in its parent
      if (event.event === "start") argv.set(event.sid, event.argv ?? []);
      if (event.event !== "atexit") continue;
      const [, a, b] = argv.get(event.sid) ?? [];
      const took = (event.t_abs ?? 0) * 1000;
      if (a === "worktree" && b === "add") split.add += took;
      else if (a === "worktree" && b === "remove") split.remove += took;
      else if ((a === "add" && b === "-A") || a === "write-tree" || a === "commit-tree") split.snapshot += took;
    }
    return { ...run, split };
  } finally {
    delete process.env.GIT_TRACE2_EVENT;
    fs.rmSync(file, { force: true });
  }
}

function makeRepo(root: string): string {
  const repo = generatedRepo(root, FILES);
  // uncommitted work the launch's snapshot carries into the worktree: ten edits, five new files
  for (let i = 0; i < 10; i++) fs.appendFileSync(path.join(repo, "src", `m${i}`, "f0.ts"), "// edited\n");
  for (let i = 0; i < 5; i++) fs.writeFileSync(path.join(repo, `new${i}.ts`), "export {};\n");
  return repo;
}

/** A run's work: three files of the tree changed. */
function editThree(worktree: string): void {
  for (let i = 0; i < 3; i++) fs.appendFileSync(path.join(worktree, "src", `m${i}`, "f1.ts"), "// run\n");
}

/** Where ours went, per run: git's own worktree add, the snapshot, and the rest (the plugin's own work). */
function printSplit(name: string, runs: readonly { ms: number; split: Split }[]): void {
  for (const [i, { ms: total, split }] of runs.entries())
    console.log(
      `  ${name} ${i + 1}: ${(total / 1000).toFixed(2)} s = git worktree add ${(split.add / 1000).toFixed(2)} s + snapshot ${(split.snapshot / 1000).toFixed(2)} s + the rest ${(Math.max(0, total - split.add - split.snapshot) / 1000).toFixed(2)} s`,
    );
}

/** Ours against the git worktree add that ran inside it (the same moment's floor: the file system's stalls hit both). */
function printOwnRatio(measure: string, runs: readonly { ms: number; split: Split }[]): void {
  const samples = runs.map((r) => r.ms / Math.max(1, r.split.add));
  const ratio = median(samples);
  printRatio({
    measure: `${measure}, against its own git worktree add`,
    value: `${ratio.toFixed(2)} × (median of ${runs.length})`,
    floor: "the git worktree add inside the same launch (traced)",
    ratio,
    goal: "≤ 1.5 ×",
    met: ratio <= 1.5,
    samples,
  });
}

async function main() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "offshoot-bench-wt-scale-"));
  const env = { ...process.env, XDG_DATA_HOME: path.join(root, "data") };
  try {
    const made = await timed(async () => makeRepo(root));
    const repo = made.value;
    console.log(`a repository of ${FILES} tracked files (made in ${(made.ms / 1000).toFixed(1)} s), ${RUNS} runs of each, interleaved`);
    const probe = await probeSandbox();
    const sandbox = probe.kind === "ready" ? { kind: probe.tool, path: probe.path, caches: [] } : undefined;
    let n = 0;
    const gitAdd = (dir: string) =>
      execFileSync("git", ["worktree", "add", "-q", "-b", `floor/${path.basename(dir)}`, dir, "HEAD"], { cwd: repo, stdio: "ignore" });
    const gitRemove = (dir: string) => {
      execFileSync("git", ["worktree", "remove", "--force", dir], { cwd: repo, stdio: "ignore" });
      execFileSync("git", ["branch", "-D", `floor/${path.basename(dir)}`], { cwd: repo, stdio: "ignore" });
    };
    const ours = (withSandbox: boolean) =>
      createWorktree({
        projectDir: repo,
        projectID: "bench",
        taskId: `bg_s${(n++).toString().padStart(7, "0")}`,
        sandbox: withSandbox ? sandbox : undefined,
        env,
      });

    // one launch
    const floor: number[] = [];
    const text: number[] = [];
    const boxed: number[] = [];
    const splits: { ms: number; split: Split }[] = [];
    const commitFloor: number[] = [];
    const commits: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      const dir = path.join(root, `floor${r}`);
      floor.push((await timed(async () => gitAdd(dir))).ms);
      // a run's end on the same worktree: three files changed, committed and summed up (what the
      // overlap flags read), against git committing and diffing the same itself
      editThree(dir);
      commitFloor.push(
        (
          await timed(async () => {
            execFileSync("git", ["add", "-A"], { cwd: dir, stdio: "ignore" });
            execFileSync("git", ["-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "run"], { cwd: dir, stdio: "ignore" });
            execFileSync("git", ["diff", "--numstat", "HEAD~1", "HEAD"], { cwd: dir, stdio: "ignore" });
          })
        ).ms,
      );
      gitRemove(dir);
      const a = await traced(root, () => ours(false));
      text.push(a.ms);
      splits.push(a);
      editThree(a.value.path);
      commits.push((await timed(() => commitRun(a.value, "run"))).ms);
      await removeWorktree(a.value);
      if (sandbox) {
        const b = await traced(root, () => ours(true));
        boxed.push(b.ms);
        splits.push(b);
        await removeWorktree(b.value);
      }
    }
    const line = (name: string, xs: number[], base: number) =>
      console.log(`${name.padEnd(44)} ${(median(xs) / 1000).toFixed(2).padStart(6)} s  (${(median(xs) / base).toFixed(2)} × the floor)`);
    console.log("\none launch's worktree (median):");
    line("git worktree add alone (the floor)", floor, median(floor));
    line("createWorktree, text-contained", text, median(floor));
    if (sandbox) line("createWorktree, sandboxed", boxed, median(floor));
    else console.log(`createWorktree, sandboxed: not measured (${probe.kind === "ready" ? "" : probe.reason})`);
    printSplit("one launch", splits);
    printRatio({
      measure: `worktree launch on ${FILES} files`,
      value: `${(median(sandbox ? boxed : text) / 1000).toFixed(2)} s (${sandbox ? "sandboxed" : "text-contained"})`,
      floor: `${(median(floor) / 1000).toFixed(2)} s, git worktree add alone`,
      ratio: median(sandbox ? boxed : text) / median(floor),
      goal: "about the floor (≤ 1.5 ×)",
      met: median(sandbox ? boxed : text) / median(floor) <= 1.5,
      samples: pairedRatios(sandbox ? boxed : text, floor),
    });
    printOwnRatio(`worktree launch on ${FILES} files`, splits);
    console.log("\na run's end: three changed files committed and summed up (median):");
    line("git add -A, commit, diff --numstat (floor)", commitFloor, median(commitFloor));
    line("commitRun", commits, median(commitFloor));
    printRatio({
      measure: `a run's commit and change summary on ${FILES} files`,
      value: `${(median(commits) / 1000).toFixed(2)} s`,
      floor: `${(median(commitFloor) / 1000).toFixed(2)} s, git add -A, commit and diff --numstat`,
      ratio: median(commits) / median(commitFloor),
      goal: "about the floor (≤ 1.5 ×)",
      met: median(commits) / median(commitFloor) <= 1.5,
      samples: pairedRatios(commits, commitFloor),
    });

    // eight launches in one turn (interleaved with eight git worktree add, RUNS times, first one side then the other; the last eight
    // of ours are kept for the sweep below)
    const eightFloor: number[] = [];
    const eight: number[] = [];
    const eightSplits: { ms: number; split: Split }[] = [];
    let kept: Awaited<ReturnType<typeof ours>>[] = [];
    for (let r = 0; r < RUNS; r++) {
      const dirs = Array.from({ length: 8 }, (_, i) => path.join(root, `eight${r}-${i}`));
      const floorRun = async () => {
        eightFloor.push((await timed(async () => dirs.forEach(gitAdd))).ms);
        dirs.forEach(gitRemove);
      };
      const oursRun = async () => {
        const run = await traced(root, () => Promise.all(Array.from({ length: 8 }, () => ours(Boolean(sandbox)))));
        eight.push(run.ms);
        eightSplits.push(run);
        if (r < RUNS - 1) for (const info of run.value) await removeWorktree(info);
        else kept = run.value;
      };
      // which side goes first alternates, so that neither always follows the other's removals
      if (r % 2 === 0) await floorRun().then(oursRun);
      else await oursRun().then(floorRun);
    }
    console.log("\neight launches in one turn (median):");
    console.log(`${"eight git worktree add (the floor)".padEnd(44)} ${(median(eightFloor) / 1000).toFixed(2).padStart(6)} s`);
    console.log(
      `${"eight createWorktree at once".padEnd(44)} ${(median(eight) / 1000).toFixed(2).padStart(6)} s  (${(median(eight) / median(eightFloor)).toFixed(2)} × the floor)`,
    );
    printSplit("eight launches", eightSplits);
    printRatio({
      measure: `eight worktree launches on ${FILES} files`,
      value: `${(median(eight) / 1000).toFixed(2)} s`,
      floor: `${(median(eightFloor) / 1000).toFixed(2)} s, eight git worktree add`,
      ratio: median(eight) / median(eightFloor),
      goal: "about the floor (≤ 1.5 ×)",
      met: median(eight) / median(eightFloor) <= 1.5,
      samples: pairedRatios(eight, eightFloor),
    });
    printOwnRatio(`eight worktree launches on ${FILES} files`, eightSplits);

    // the start-up sweep of leftover worktrees, left clean and named by no task: four removed by git
    // alone (the floor: what the sweep must do at least, `git status` to see it is clean, then
    // `git worktree remove` and `git branch -D`), the other four by the sweep
    const byGit = kept.slice(0, 4); // (the sweep finds the other four: no task names them)
    const removeFloor = await timed(async () => {
      for (const info of byGit) {
        execFileSync("git", ["status", "--porcelain"], { cwd: info.path, stdio: "ignore" });
        execFileSync("git", ["worktree", "remove", "--force", info.path], { cwd: repo, stdio: "ignore" });
        execFileSync("git", ["branch", "-D", info.branch], { cwd: repo, stdio: "ignore" });
      }
    });
    const sweep = await traced(root, () => sweepOrphanWorktrees({ projectDir: repo, projectID: "bench", isKnown: () => false, env }));
    console.log("\nthe start-up sweep of four clean leftover worktrees:");
    console.log(`${"git status, worktree remove, branch -D (floor)".padEnd(44)} ${(removeFloor.ms / 1000).toFixed(2).padStart(6)} s`);
    console.log(
      `${"sweepOrphanWorktrees".padEnd(44)} ${(sweep.ms / 1000).toFixed(2).padStart(6)} s  (${(sweep.ms / removeFloor.ms).toFixed(2)} × the floor; removed ${sweep.value.removed.length})`,
    );
    // (one run of each, so the file system's swings show most here: the same moment's floor is its own removals)
    console.log(
      `  the sweep: ${(sweep.ms / 1000).toFixed(2)} s = git worktree remove ${(sweep.split.remove / 1000).toFixed(2)} s + the rest ${(Math.max(0, sweep.ms - sweep.split.remove) / 1000).toFixed(2)} s`,
    );
    printRatio({
      measure: `start-up sweep of four worktrees on ${FILES} files`,
      value: `${(sweep.ms / 1000).toFixed(2)} s`,
      floor: `${(removeFloor.ms / 1000).toFixed(2)} s, git status, worktree remove and branch -D of four others`,
      ratio: sweep.ms / removeFloor.ms,
      goal: "about the floor (≤ 1.5 ×)",
      met: sweep.ms / removeFloor.ms <= 1.5,
    });
    const ownSweep = sweep.ms / Math.max(1, sweep.split.remove);
    printRatio({
      measure: `start-up sweep of four worktrees on ${FILES} files, against its own git worktree remove`,
      value: `${ownSweep.toFixed(2)} ×`,
      floor: "the git worktree remove inside the same sweep (traced)",
      ratio: ownSweep,
      goal: "≤ 1.5 ×",
      met: ownSweep <= 1.5,
    });
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

void main();

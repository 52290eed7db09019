/**
 * What 20 ended, untaken worktree tasks keep on disk (`npx tsx bench/worktree-free.ts [--files N]
 * [--tasks T]`; a generated repository of 5,000 tracked files by default): each task's worktree is
 * made through the real code path (createWorktree, sandboxed where the machine has a sandbox), its
 * "child" changes two files, and its run is settled as a run's end settles it (wrapUpRun: committed,
 * then its directory freed). Then the real disk blocks under the worktrees' and sandboxes' homes are
 * summed, and what the repository's .git grew by (the branches' commits), against the size of one
 * checkout (what each ended task held on disk before its directory was freed). Reports only.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Client } from "../src/host/client.js";
import type { BackgroundTask } from "../src/task-record.js";
import { wrapUpRun } from "../src/worktree/lifecycle.js";
import { createWorktree, worktreesHome } from "../src/worktree/worktree.js";
import { sandboxesHome } from "../src/worktree/sandbox/prepare.js";
import { probeSandbox } from "../src/worktree/sandbox/probe.js";
import { printRatio } from "./ratio.js";
import { generatedRepo, numberArg } from "./worktree-bench.js";

const FILES = numberArg("--files", 5_000);
const TASKS = numberArg("--tasks", 20);

/** Real disk blocks (st_blocks × 512) of everything under `dir`, not following links; 0 when it is not there. */
function diskBytes(dir: string, skip?: string): number {
  const stat = fs.lstatSync(dir, { throwIfNoEntry: false });
  if (!stat) return 0;
  let total = stat.blocks * 512;
  if (stat.isDirectory())
    for (const name of fs.readdirSync(dir)) {
      if (name === skip) continue;
      total += diskBytes(path.join(dir, name));
    }
  return total;
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

function makeRepo(root: string): string {
  const repo = generatedRepo(root, FILES, 20);
  const git = (...args: string[]) => execFileSync("git", args, { cwd: repo, stdio: "ignore" });
  git("gc", "-q"); // (packed, as a real repository's history is: what the branches add is then plain to see)
  return repo;
}

async function main() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "offshoot-bench-wt-free-"));
  const env = { ...process.env, XDG_DATA_HOME: path.join(root, "data") };
  const client = { app: { log: async () => {} } } as unknown as Client;
  try {
    const repo = makeRepo(root);
    const checkout = diskBytes(repo, ".git");
    const gitBefore = diskBytes(path.join(repo, ".git"));
    const probe = await probeSandbox();
    const sandbox = probe.kind === "ready" ? { kind: probe.tool, path: probe.path, caches: [] } : undefined;
    console.log(
      `a repository of ${FILES} tracked files (one checkout: ${mb(checkout)} on disk); ${TASKS} tasks, ${sandbox ? `sandboxed (${sandbox.kind})` : "text-contained"}`,
    );
    const outcomes: string[] = [];
    let heldWhileRunning = 0;
    for (let i = 0; i < TASKS; i++) {
      const taskId = `bg_f${i.toString().padStart(7, "0")}`;
      const info = await createWorktree({ projectDir: repo, projectID: "bench", taskId, sandbox, env });
      // the child's work: one file edited, one added
      fs.appendFileSync(path.join(info.path, "src", `m${i % 10}`, "f0.ts"), `// task ${i}\n`);
      fs.writeFileSync(path.join(info.path, `task-${i}.ts`), `export const task${i} = ${i};\n`);
      if (i === 0) heldWhileRunning = diskBytes(info.path) + diskBytes(info.sandboxDir ?? "");
      const task = { id: taskId, description: `bench task ${i}`, status: "completed", worktree: info } as BackgroundTask;
      const outcome = await wrapUpRun({ client }, task);
      outcomes.push("freedAt" in outcome && outcome.freedAt !== undefined ? "freed" : JSON.stringify(outcome).slice(0, 200));
    }
    const notFreed = outcomes.filter((o) => o !== "freed");
    if (notFreed.length) console.log(`NOT freed: ${notFreed.length} (${notFreed[0]})`);
    const home = path.join(worktreesHome(env), "bench");
    const directories = fs.existsSync(home) ? fs.readdirSync(home).length : 0;
    const held = diskBytes(worktreesHome(env)) + diskBytes(sandboxesHome(env));
    const gitGrew = diskBytes(path.join(repo, ".git")) - gitBefore;
    const branches = execFileSync("git", ["branch", "--list", "offshoot/*"], { cwd: repo, encoding: "utf8" }).split("\n").filter(Boolean).length;
    console.log(`one task's worktree and sandbox while it runs: ${mb(heldWhileRunning)}`);
    console.log(
      `${TASKS} ended, untaken tasks: ${directories} worktree directories, ${mb(held)} under the worktrees' and sandboxes' homes; ${branches} branches, the repository's .git grew by ${mb(gitGrew)}`,
    );
    console.log(`(kept as worktrees, they would hold about ${TASKS} × ${mb(heldWhileRunning)} = ${mb(TASKS * heldWhileRunning)})`);
    const total = held + gitGrew;
    printRatio({
      measure: `disk held by ${TASKS} ended, untaken worktree tasks (${FILES} files)`,
      value: `${mb(total)}: ${directories} worktree directories, ${branches} branches`,
      floor: `${mb(checkout)}, one checkout`,
      ratio: total / checkout,
      goal: "no worktree directories, only branches",
      met: directories === 0 && branches === TASKS,
    });
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});

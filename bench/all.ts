/**
 * `npm run bench` (after `npm run build`): every benchmark in one run, then one table with each
 * measure next to its floor, measured in the same run, as a ratio:
 *   - the text fork against JSON.parse of the same history, per shape (bench/run.mjs);
 *   - the native launch against OpenCode's own next request on a 20 MB parent (bench/latency.ts);
 *   - 32 launches in one turn against 32 `read` calls in one turn (bench/parallel.ts);
 *   - server memory per ended task against OpenCode's own task tool (bench/memory.ts; a short run
 *     here, two rounds of warm-up then four measured: `npx tsx bench/memory.ts` alone runs the full
 *     30 rounds of 10);
 *   - one bash call of a worktree child, sandboxed against the same call not sandboxed (bench/sandbox.ts);
 *   - worktree launches (one, and eight at once) and the start-up sweep on a repository of 50,000
 *     files against git's own commands there (bench/worktree-scale.ts; one run of each here);
 *   - a ready worktree (.worktreeinclude of node_modules, or the set-up command) of the fixture Node
 *     project against `git worktree add` alone, in time and in disk blocks (bench/worktree-ready.ts);
 *   - the disk 20 ended, untaken worktree tasks hold (their directories freed, only their branches
 *     kept) against one checkout of a generated 2,000-file repository (bench/worktree-free.ts).
 * The task store's own bench (bench/store.ts) runs too; it prints its floors beside its figures.
 * Reports only: the exit code says whether every benchmark ran, not whether every goal was met.
 * The machine is shared: run it alone (no real-server test beside it).
 */
import { spawn } from "node:child_process";
import { RATIO_MARK, type Ratio } from "./ratio.js";

const TSX = ["npx", "tsx"];
const STEPS: { name: string; command: string[] }[] = [
  { name: "fork pipeline", command: ["node", "--expose-gc", "bench/run.mjs"] },
  { name: "task store", command: [...TSX, "bench/store.ts"] },
  { name: "fork latency", command: [...TSX, "bench/latency.ts"] },
  { name: "parallel launches", command: [...TSX, "bench/parallel.ts"] },
  { name: "parallel forks", command: [...TSX, "bench/parallel.ts", "--fork"] },
  { name: "memory per task", command: [...TSX, "bench/memory.ts", "--rounds", "7", "--from", "3", "--tasks", "8"] },
  { name: "sandbox per bash call", command: [...TSX, "bench/sandbox.ts"] },
  { name: "worktrees on a big repository", command: [...TSX, "bench/worktree-scale.ts", "--runs", "1"] },
  { name: "a ready worktree (node_modules)", command: [...TSX, "bench/worktree-ready.ts"] },
  { name: "disk held by ended worktree tasks", command: [...TSX, "bench/worktree-free.ts", "--files", "2000"] },
];

function run(command: string[], ratios: Ratio[]): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(command[0]!, command.slice(1), { stdio: ["ignore", "pipe", "inherit"] });
    let pending = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk: string) => {
      pending += chunk;
      const lines = pending.split("\n");
      pending = lines.pop()!;
      for (const line of lines) {
        if (line.startsWith(RATIO_MARK)) ratios.push(JSON.parse(line.slice(RATIO_MARK.length)) as Ratio);
        else process.stdout.write(`${line}\n`);
      }
    });
    child.on("close", (code) => resolve(code ?? 1));
  });
}

async function main() {
  const ratios: Ratio[] = [];
  const failed: string[] = [];
  const started = Date.now();
  for (const step of STEPS) {
    console.log(`\n══ ${step.name}: ${step.command.join(" ")}`);
    if ((await run(step.command, ratios)) !== 0) failed.push(step.name);
  }
  console.log(`\n══ every measure against its floor, measured side by side in this run (${((Date.now() - started) / 1000).toFixed(0)} s)\n`);
  for (const r of ratios) {
    console.log(`${r.met ? "met    " : "NOT met"}  ${r.ratio.toFixed(2).padStart(6)} ×  ${r.measure}`);
    console.log(`${"".padEnd(19)}${r.value}  vs  ${r.floor};  goal ${r.goal}`);
  }
  if (failed.length) console.log(`\nbenchmarks that did not run to the end: ${failed.join(", ")}`);
  process.exitCode = failed.length ? 1 : 0;
}

void main();

/**
 * `npm run bench` (after `npm run build`): every benchmark, one after the other, then one closing
 * table: each measure next to its floor (measured in the same run, side by side) as a ratio, under
 * the step and the command and flags that measured it, with the run's date, commit and machine;
 * where a step ran several interleaved runs, the ratio's spread over them. The run is saved to
 * .bench/last-run.json; `npm run measurements` writes docs/measurements.md from it (bench/report.ts
 * renders both, so the page and the terminal show the same table).
 *
 * `-- --quick`: every step on smaller inputs and fewer runs, to try the pipeline in a few minutes
 * (its figures say so: the commands carry their flags). Reports only: the exit code says whether
 * every step ran, not whether every goal was met. The machine is shared: run it alone (no
 * real-server test beside it).
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { RATIO_MARK, type Ratio } from "./ratio.js";
import { type BenchRun, type StepRun, commitNow, machineNow, renderTable } from "./report.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const LAST_RUN = path.join(ROOT, ".bench", "last-run.json");

interface Step {
  name: string;
  what: string;
  /** the command and its flags, split at spaces to run */
  command: string;
  /** the same step on smaller inputs (`--quick`) */
  quick: string;
}
const STEPS: Step[] = [
  {
    name: "fork pipeline",
    what: "the text fork's pipeline per history shape and size, against JSON.parse of the same history (interleaved rounds).",
    command: "node --expose-gc bench/run.mjs",
    quick: "node --expose-gc bench/run.mjs --sizes 1",
  },
  {
    name: "task store",
    what: "saving and loading the task store at 100, 1,000 and 20,000 stored tasks, and fork storage, beside their floors.",
    command: "npx tsx bench/store.ts",
    quick: "npx tsx bench/store.ts",
  },
  {
    name: "fork latency",
    what: "native and text fork launches on a large parent, on the real server, against OpenCode's own next request.",
    command: "npx tsx bench/latency.ts",
    quick: "npx tsx bench/latency.ts --mb 2 --runs 1",
  },
  {
    name: "parallel launches",
    what: "32 launches in one turn against 32 `read` calls in one turn and against the host's part of a launch (rounds on fresh servers).",
    command: "npx tsx bench/parallel.ts",
    quick: "npx tsx bench/parallel.ts --rounds 1 --tasks 8",
  },
  {
    name: "parallel forks",
    what: "the same with fork: true.",
    command: "npx tsx bench/parallel.ts --fork",
    quick: "npx tsx bench/parallel.ts --fork --rounds 1 --tasks 8",
  },
  {
    name: "memory per task",
    what: "the server's heap per ended task, with the plugin against OpenCode's own task tool (a short run; `npm run bench:memory` runs 30 rounds of 10).",
    command: "npx tsx bench/memory.ts --rounds 7 --from 3 --tasks 8",
    quick: "npx tsx bench/memory.ts --rounds 3 --from 1 --tasks 4",
  },
  {
    name: "sandbox per bash call",
    what: "one bash call of a worktree child in its OS sandbox against the same call not sandboxed.",
    command: "npx tsx bench/sandbox.ts",
    quick: "npx tsx bench/sandbox.ts --runs 20",
  },
  {
    name: "worktrees on a big repository",
    what: "one worktree launch, eight at once, a run's commit and the start-up sweep on a 50,000-file repository, against git's own commands there (interleaved runs).",
    command: "npx tsx bench/worktree-scale.ts --runs 3",
    quick: "npx tsx bench/worktree-scale.ts --files 2000 --runs 2",
  },
  {
    name: "a ready worktree (node_modules)",
    what: "a worktree of the fixture Node project made ready (.worktreeinclude, or the set-up command) against `git worktree add` alone, in time and disk (interleaved runs).",
    command: "npx tsx bench/worktree-ready.ts",
    quick: "npx tsx bench/worktree-ready.ts --runs 2",
  },
  {
    name: "disk held by ended worktree tasks",
    what: "the disk 20 ended, untaken worktree tasks hold (directories freed, only their branches kept) against one checkout.",
    command: "npx tsx bench/worktree-free.ts --files 2000",
    quick: "npx tsx bench/worktree-free.ts --files 500 --tasks 5",
  },
  {
    name: "a task on another machine",
    what: "a remote task's launch against a local worktree task's, and the git bytes a one-line change moves through the shared remote (two real servers, interleaved rounds).",
    command: "npx tsx bench/remote.ts --rounds 5",
    quick: "npx tsx bench/remote.ts --rounds 2",
  },
];

function run(command: string, step: StepRun): Promise<number> {
  const [program, ...args] = command.split(" ");
  return new Promise((resolve) => {
    const child = spawn(program!, args, { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] });
    let pending = "";
    const take = (line: string) => {
      if (line.startsWith(RATIO_MARK)) step.ratios.push(JSON.parse(line.slice(RATIO_MARK.length)) as Ratio);
      else {
        process.stdout.write(`${line}\n`);
        step.output += `${line}\n`;
      }
    };
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk: string) => {
      pending += chunk;
      const lines = pending.split("\n");
      pending = lines.pop()!;
      lines.forEach(take);
    });
    child.on("close", (code) => {
      if (pending) take(pending);
      resolve(code ?? 1);
    });
  });
}

async function main() {
  const quick = process.argv.includes("--quick");
  const run_: BenchRun = {
    invocation: quick ? "npm run bench -- --quick" : "npm run bench",
    date: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
    ...commitNow(ROOT),
    machine: machineNow(),
    steps: [],
  };
  for (const step of STEPS) {
    const command = quick ? step.quick : step.command;
    console.log(`\n══ ${step.name}: ${command}`);
    const record: StepRun = { name: step.name, what: step.what, command, seconds: 0, ok: false, output: "", ratios: [] };
    const started = Date.now();
    record.ok = (await run(command, record)) === 0;
    record.seconds = (Date.now() - started) / 1000;
    run_.steps.push(record);
  }
  run_.machine.loadAtEnd = os.loadavg().map((l) => Math.round(l * 100) / 100);
  fs.mkdirSync(path.dirname(LAST_RUN), { recursive: true });
  fs.writeFileSync(LAST_RUN, `${JSON.stringify(run_, null, 2)}\n`);
  const total = run_.steps.reduce((sum, s) => sum + s.seconds, 0);
  console.log(
    `\n══ every measure against its floor, measured side by side in this run (${total.toFixed(0)} s; saved to .bench/last-run.json: npm run measurements writes docs/measurements.md from it)\n`,
  );
  console.log(renderTable(run_));
  const failed = run_.steps.filter((s) => !s.ok).map((s) => s.name);
  if (failed.length) console.log(`\nbenchmarks that did not run to the end: ${failed.join(", ")}`);
  process.exitCode = failed.length ? 1 : 0;
}

void main();

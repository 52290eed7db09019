/**
 * What the sandbox adds to one bash call of a worktree child: the same command (`git status` in the
 * worktree, then `true`) run the way OpenCode's bash tool spawns it (`bash -c <command>` in the
 * worktree), with the task's BASH_ENV (it re-runs the command inside bubblewrap) and without,
 * interleaved, N times each. Prints p50 and p95 of both and what the sandbox adds; and how long the
 * machine's probe takes (`npx tsx bench/sandbox.ts [--runs N]`).
 */
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createWorktree, removeWorktree } from "../src/worktree/worktree.js";
import { probeSandbox } from "../src/worktree/sandbox/probe.js";
import { privatePaths } from "../src/worktree/sandbox/plan.js";
import { printRatio } from "./ratio.js";

const runs = Number(process.argv[process.argv.indexOf("--runs") + 1]) || 100;

function timeCall(command: string, cwd: string, env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(command, [], { shell: "/bin/bash", cwd, env, stdio: "ignore", detached: true });
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(Number(process.hrtime.bigint() - started) / 1e6) : reject(new Error(`${command}: exit ${code}`))));
  });
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

async function main() {
  const t0 = process.hrtime.bigint();
  const probe = await probeSandbox();
  const probeMs = Number(process.hrtime.bigint() - t0) / 1e6;
  console.log(`probe: ${probe.kind}${probe.kind === "ready" ? ` (${probe.tool} at ${probe.path})` : `: ${probe.reason}`} in ${probeMs.toFixed(1)} ms`);
  if (probe.kind !== "ready") {
    process.exitCode = 1;
    return;
  }
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "offshoot-bench-sandbox-"));
  const env = { ...process.env, XDG_DATA_HOME: path.join(root, "data") };
  const repo = path.join(root, "repo");
  fs.mkdirSync(path.join(repo, "src"), { recursive: true });
  for (let i = 0; i < 200; i++) fs.writeFileSync(path.join(repo, "src", `f${i}.ts`), `export const x${i} = ${i};\n`);
  const git = (...args: string[]) => execFileSync("git", args, { cwd: repo, stdio: "ignore" });
  git("init", "-q");
  git("add", ".");
  git("-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "init");
  const info = await createWorktree({
    projectDir: repo,
    projectID: "bench",
    taskId: "bg_bench001",
    sandbox: { kind: probe.tool, path: probe.path, caches: [] },
    env,
  });
  try {
    const plain = { ...process.env };
    const boxed = { ...process.env, BASH_ENV: privatePaths(info.sandboxDir!).enter };
    const command = "git status --short > /dev/null && true";
    for (let i = 0; i < 5; i++) await timeCall(command, info.path, boxed); // warm-up
    const sandboxed: number[] = [];
    const bare: number[] = [];
    for (let i = 0; i < runs; i++) {
      bare.push(await timeCall(command, info.path, plain));
      sandboxed.push(await timeCall(command, info.path, boxed));
    }
    const row = (name: string, xs: number[]) =>
      console.log(`${name.padEnd(12)} p50 ${pct(xs, 50).toFixed(1).padStart(6)} ms   p95 ${pct(xs, 95).toFixed(1).padStart(6)} ms`);
    console.log(`one bash call (\`${command}\` in the worktree), ${runs} runs each, interleaved:`);
    row("not sandboxed", bare);
    row("sandboxed", sandboxed);
    for (const [p, goal] of [
      [50, 50],
      [95, 150],
    ] as const) {
      const added = pct(sandboxed, p) - pct(bare, p);
      console.log(`the sandbox adds at p${p}: ${added.toFixed(1)} ms (goal ≤ ${goal} ms)`);
      printRatio({
        measure: `sandbox: one bash call, p${p}`,
        value: `${pct(sandboxed, p).toFixed(1)} ms sandboxed (+${added.toFixed(1)} ms)`,
        floor: `${pct(bare, p).toFixed(1)} ms, the same call not sandboxed`,
        ratio: pct(sandboxed, p) / pct(bare, p),
        goal: `adds ≤ ${goal} ms`,
        met: added <= goal,
      });
    }
  } finally {
    await removeWorktree(info);
    fs.rmSync(root, { recursive: true, force: true });
  }
}

void main();

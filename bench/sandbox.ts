/**
 * What the sandbox adds to one bash call of a worktree child: the same command (`git status` in the
 * worktree, then `true`) run the way OpenCode's bash tool spawns it (`bash -c <command>` in the
 * worktree), with the task's BASH_ENV (it drops the secret variables and re-runs the command inside
 * bubblewrap, with its network namespace and seccomp filter: the full containment of a task with no
 * hosts) and without, interleaved, N times each. Prints p50 and p95 of both and what the sandbox adds;
 * then the same for a task with allowed hosts (the outer bubblewrap, the bridge on its loopback, the
 * inner bubblewrap with the filter), which has no goal; and how long the machine's probe takes
 * (`npx tsx bench/sandbox.ts [--runs N]`).
 */
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createWorktree, removeWorktree } from "../src/worktree/worktree.js";
import { probeSandbox } from "../src/worktree/sandbox/probe.js";
import { dropList, privatePaths } from "../src/worktree/sandbox/plan.js";
import { chooseSandbox } from "../src/worktree/sandbox/prepare.js";
import { closeAllTaskNetworks } from "../src/worktree/sandbox/network.js";
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
  const options = { sandboxWritable: [], sandboxNetwork: [], sandboxPassEnv: [] };
  const info = await createWorktree({
    projectDir: repo,
    projectID: "bench",
    taskId: "bg_bench001",
    sandbox: await chooseSandbox(probe, options, [], env),
    env,
  });
  // a task with an allowed host: every command runs through the bridge (the host is never asked here)
  const withHosts = await createWorktree({
    projectDir: repo,
    projectID: "bench",
    taskId: "bg_bench002",
    sandbox: await chooseSandbox(probe, options, ["registry.npmjs.org"], env),
    env,
  });
  try {
    const plain = { ...process.env };
    // (as the worktree instance's shell.env hook sets it: BASH_ENV, and the names the script drops)
    const boxed = { ...process.env, BASH_ENV: privatePaths(info.sandboxDir!).enter, OFFSHOOT_DROP: dropList(process.env) };
    const command = "git status --short > /dev/null && true";
    const bridged = { ...process.env, BASH_ENV: privatePaths(withHosts.sandboxDir!).enter, OFFSHOOT_DROP: dropList(process.env) };
    for (let i = 0; i < 5; i++) await timeCall(command, info.path, boxed); // warm-up
    for (let i = 0; i < 3; i++) await timeCall(command, withHosts.path, bridged);
    const sandboxed: number[] = [];
    const bare: number[] = [];
    const hosts: number[] = [];
    for (let i = 0; i < runs; i++) {
      bare.push(await timeCall(command, info.path, plain));
      sandboxed.push(await timeCall(command, info.path, boxed));
      if (i % 4 === 0) hosts.push(await timeCall(command, withHosts.path, bridged));
    }
    const row = (name: string, xs: number[]) =>
      console.log(`${name.padEnd(12)} p50 ${pct(xs, 50).toFixed(1).padStart(6)} ms   p95 ${pct(xs, 95).toFixed(1).padStart(6)} ms`);
    console.log(`one bash call (\`${command}\` in the worktree), ${runs} runs each, interleaved:`);
    row("not sandboxed", bare);
    row("sandboxed", sandboxed);
    row("with hosts", hosts);
    console.log(
      `a task with allowed hosts (${hosts.length} runs, every fourth): the bridge adds ${(pct(hosts, 50) - pct(sandboxed, 50)).toFixed(1)} ms at p50 (no goal)`,
    );
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
    await removeWorktree(withHosts);
    await closeAllTaskNetworks();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

void main();

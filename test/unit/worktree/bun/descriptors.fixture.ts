// Run by descriptors.test.ts under OpenCode's own runtime (the Bun inside the pinned binary, with
// BUN_BE_BUN=1), as the plugin runs: the sandbox probe and a command in a task's sandbox, many times,
// each followed by a descriptor this process opens (a "victim", as the server's sockets and pipes
// are); then garbage collection, which finalizes the spawned processes. Prints how many victims
// something else closed. Takes the sandbox's directories from argv (made by the test).
import { fstatSync, openSync } from "node:fs";
import { probeSandbox } from "../../../../src/worktree/sandbox/probe.js";
import { runInSandbox } from "../../../../src/worktree/sandbox/run.js";
import type { SandboxLayout } from "../../../../src/worktree/sandbox/plan.js";

/** Bun's own calls (this file runs on Bun only). */
const { Bun } = globalThis as unknown as { Bun: { gc(force: boolean): void; sleep(ms: number): Promise<void> } };

const layout = JSON.parse(process.argv[2]!) as SandboxLayout;
const victims: number[] = [];
for (let i = 0; i < 8; i++) {
  const probe = await probeSandbox();
  if (probe.kind !== "ready" || probe.tool !== "bwrap") {
    console.log(JSON.stringify({ probe }));
    process.exit(2);
  }
  victims.push(openSync("/dev/null", "r"));
  const ran = await runInSandbox({ kind: "bwrap", path: probe.path }, layout, "offshoot/bg_fd", ["/bin/sh", "-c", "echo inside"], { cwd: layout.worktree });
  if (ran.code !== 0 || ran.stdout.trim() !== "inside") {
    console.log(JSON.stringify({ ran }));
    process.exit(3);
  }
  victims.push(openSync("/dev/null", "r"));
}
for (let i = 0; i < 5; i++) {
  Bun.gc(true);
  await Bun.sleep(20);
}
const closed = victims.filter((fd) => {
  try {
    fstatSync(fd);
    return false;
  } catch {
    return true;
  }
}).length;
console.log(JSON.stringify({ closed, of: victims.length }));

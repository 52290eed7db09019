/**
 * The plugin runs inside OpenCode, on Bun (1.3.14 in the pinned binary), whose child_process closes
 * a descriptor handed to a child beyond stdio's three a second time when the child is collected: by
 * then the number is someone else's (a socket of the server: "other side closed"; a pipe of another
 * child: a git whose end is never heard of, a wrap-up that waits forever; a file watcher's epoll:
 * "notify-rs inotify loop panicked … poll failed"). The sandbox probe and every command in a task's
 * sandbox hand bubblewrap its seccomp filter: they must hand it no descriptor of this process.
 * Run on the real runtime (the pinned binary as Bun), with real bubblewrap.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, expect, test } from "vitest";
import { OPENCODE_BIN } from "../../../e2e/harness/opencode.js";
import { type SandboxLayout, privatePaths } from "../../../../src/worktree/sandbox/plan.js";
import { seccompFilter } from "../../../../src/worktree/sandbox/seccomp.js";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "offshoot-fd-"));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

/** A sandbox's directories as a task's would be: a worktree, its admin and common directories, the private ones and the filter. */
function sandboxLayout(): SandboxLayout {
  const layout: SandboxLayout = {
    worktree: path.join(root, "wt"),
    gitDir: path.join(root, "repo/.git/worktrees/bg_fd"),
    commonDir: path.join(root, "repo/.git"),
    privateDir: path.join(root, "private"),
    caches: [],
    taskId: "bg_fd",
  };
  const own = privatePaths(layout.privateDir);
  for (const dir of [
    layout.worktree,
    layout.gitDir,
    own.admin,
    own.objects,
    own.refs,
    own.logs,
    own.tmp,
    path.join(layout.commonDir, "refs"),
    path.join(layout.commonDir, "logs"),
  ])
    fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(own.seccomp, seccompFilter()!);
  return layout;
}

test("the sandbox probe and commands in a task's sandbox leave every other descriptor of the server open", () => {
  const fixture = path.join(import.meta.dirname, "descriptors.fixture.ts");
  const out = execFileSync(OPENCODE_BIN, [fixture, JSON.stringify(sandboxLayout())], {
    env: { ...process.env, BUN_BE_BUN: "1" },
    encoding: "utf8",
    timeout: 60_000,
  });
  expect(JSON.parse(out.trim().split("\n").pop()!)).toEqual({ closed: 0, of: 16 });
});

/**
 * Taking a worktree task's changes (src/worktree/take.ts) on real git repositories in temp dirs:
 * a clean take writes the branch's changes into the parent's working tree as uncommitted changes,
 * keeping the parent's own uncommitted changes, its index and HEAD; a conflict changes nothing
 * (files, index, HEAD, `git status`); a take cut short (its journal left behind, as a kill leaves
 * it) is rolled back at start-up, so the tree is untouched, never half-applied.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { applyTake, planTake, recoverTakes } from "../../../src/worktree/take.js";
import { commitRun, createWorktree } from "../../../src/worktree/worktree.js";
import { type TempRepo, git, tempRepo } from "./git-repo.js";

let temp: TempRepo;
let repo: string;
const env = () => ({ XDG_DATA_HOME: path.join(temp.root, "data") });

beforeEach(() => {
  temp = tempRepo("offshoot-take-");
  repo = temp.repo;
  fs.writeFileSync(path.join(repo, "b.txt"), "1\n2\n3\n4\n5\n");
  fs.writeFileSync(path.join(repo, "gone.txt"), "bye\n");
  git(repo, "add", "-A");
  git(repo, "commit", "-q", "-m", "more");
});
afterEach(() => temp.remove());

/** What a user sees of the parent: every file's bytes, the index, HEAD, the branch, git status. */
function parentState() {
  const files: Record<string, string> = {};
  for (const name of fs.readdirSync(repo, { recursive: true }) as string[]) {
    if (name.startsWith(".git")) continue;
    const p = path.join(repo, name);
    if (fs.lstatSync(p).isFile()) files[name] = fs.readFileSync(p, "utf8");
  }
  return {
    files,
    index: git(repo, "ls-files", "-s"), // (its entries: `git status` below refreshes its stat cache)
    head: git(repo, "rev-parse", "HEAD"),
    branch: git(repo, "branch", "--show-current"),
    status: git(repo, "status", "--porcelain", "--untracked-files=all"),
  };
}

/** Resolves once `file` exists (watching its directory); rejects if the process exits first. */
async function waitForFile(file: string, exited: Promise<unknown>): Promise<void> {
  const watcher = fs.watch(path.dirname(file));
  try {
    await Promise.race([
      new Promise<void>((resolve) => {
        watcher.on("change", () => fs.existsSync(file) && resolve());
        if (fs.existsSync(file)) resolve();
      }),
      exited.then(() => {
        if (!fs.existsSync(file)) throw new Error("the take process exited before it wrote two files");
      }),
    ]);
  } finally {
    watcher.close();
  }
}

/** A task worktree whose run changed b.txt's first line, added dir/new.txt, deleted gone.txt (committed). */
async function taskWithChanges(id = "bg_take0001") {
  const info = await createWorktree({ projectDir: repo, projectID: "p1", taskId: id, env: env() });
  fs.writeFileSync(path.join(info.path, "b.txt"), "ONE\n2\n3\n4\n5\n");
  fs.mkdirSync(path.join(info.path, "dir"));
  fs.writeFileSync(path.join(info.path, "dir/new.txt"), "new\n");
  fs.writeFileSync(path.join(info.path, "tool.sh"), "#!/bin/sh\n");
  fs.chmodSync(path.join(info.path, "tool.sh"), 0o755);
  fs.rmSync(path.join(info.path, "gone.txt"));
  const committed = await commitRun(info, "the task's change");
  expect(committed.changes).toBeDefined();
  return { ...info, ...committed }; // (as the task records it)
}

describe("a take", () => {
  test("clean: the branch's changes land in the working tree, uncommitted, merged with the parent's own uncommitted change; index and HEAD untouched", async () => {
    const info = await taskWithChanges();
    // the parent works on meanwhile: an unstaged change to the same file (another line) and a staged one
    fs.writeFileSync(path.join(repo, "b.txt"), "1\n2\n3\n4\nFIVE\n");
    fs.writeFileSync(path.join(repo, "a.txt"), "a staged\n");
    git(repo, "add", "a.txt");
    const before = parentState();

    const plan = await planTake(info, "bg_take0001");
    expect(plan.kind).toBe("applied");
    if (plan.kind !== "applied") return;
    await applyTake(repo, "bg_take0001", plan.changes);

    expect(fs.readFileSync(path.join(repo, "b.txt"), "utf8")).toBe("ONE\n2\n3\n4\nFIVE\n");
    expect(fs.readFileSync(path.join(repo, "dir/new.txt"), "utf8")).toBe("new\n");
    expect(fs.statSync(path.join(repo, "tool.sh")).mode & 0o111).not.toBe(0);
    expect(fs.existsSync(path.join(repo, "gone.txt"))).toBe(false);
    expect(fs.readFileSync(path.join(repo, "a.txt"), "utf8")).toBe("a staged\n");
    const after = parentState();
    expect(after.index).toBe(before.index);
    expect(after.head).toBe(before.head);
    expect(after.branch).toBe(before.branch);
    expect(after.status.split("\n").sort()).toEqual(["?? dir/new.txt", "?? tool.sh", " D gone.txt", " M b.txt", "M  a.txt"].sort());
    // no journal, no temp file, no temp index left
    expect(fs.readdirSync(path.join(repo, ".git")).filter((n) => n.includes("offshoot"))).toEqual([]);
    expect(Object.keys(after.files).filter((n) => n.includes("offshoot"))).toEqual([]);
  });

  test("conflicting: nothing in the parent changes (files, index, HEAD, git status), and the conflicting files are named", async () => {
    const info = await taskWithChanges();
    fs.writeFileSync(path.join(repo, "b.txt"), "uno\n2\n3\n4\n5\n"); // the same line, changed differently
    const before = parentState();
    const rawIndex = fs.readFileSync(path.join(repo, ".git/index"));

    const plan = await planTake(info, "bg_take0001");

    expect(plan).toEqual({ kind: "conflict", files: ["b.txt"], reasons: [] });
    expect(fs.readFileSync(path.join(repo, ".git/index")).equals(rawIndex)).toBe(true); // not even its stat cache
    expect(parentState()).toEqual(before);
  });

  test("an ignored file where the task adds one is a conflict too (the snapshot cannot see it; it is never overwritten)", async () => {
    fs.writeFileSync(path.join(repo, ".gitignore"), "dir/\n");
    git(repo, "add", ".gitignore");
    git(repo, "commit", "-q", "-m", "ignore dir");
    const created = await createWorktree({ projectDir: repo, projectID: "p1", taskId: "bg_take0002", env: env() });
    fs.writeFileSync(path.join(created.path, ".gitignore"), "");
    fs.mkdirSync(path.join(created.path, "dir"));
    fs.writeFileSync(path.join(created.path, "dir/new.txt"), "theirs\n");
    const info = { ...created, ...(await commitRun(created, "adds dir/new.txt")) };
    fs.mkdirSync(path.join(repo, "dir"));
    fs.writeFileSync(path.join(repo, "dir/new.txt"), "mine, ignored\n");
    const before = parentState();

    const plan = await planTake(info, "bg_take0002");

    expect(plan.kind).toBe("conflict");
    expect(plan.kind === "conflict" && plan.files).toEqual(["dir/new.txt"]);
    expect(parentState()).toEqual(before);
  });

  test("cut short after some files (an error rolls back at once; a real SIGKILL leaves its journal): start-up puts every file back; then it can be taken again", async () => {
    const info = await taskWithChanges();
    fs.writeFileSync(path.join(repo, "b.txt"), "1\n2\n3\n4\nFIVE\n");
    const before = parentState();
    const plan = await planTake(info, "bg_take0001");
    if (plan.kind !== "applied") throw new Error("expected a clean plan");
    // the "kill": the process stops after the second file is written (the journal stays)
    let written = 0;
    const killed = new Error("killed");
    await expect(
      applyTake(repo, "bg_take0001", plan.changes, async () => {
        if (++written === 2) throw killed;
      }),
    ).rejects.toThrow(/every file was put back/);
    expect(parentState()).toEqual(before);

    // a real SIGKILL of a process in the middle of the same take: the tree is half-applied, the journal stays
    const changesFile = path.join(temp.root, "changes.json");
    const marker = path.join(temp.root, "written");
    fs.writeFileSync(changesFile, JSON.stringify(plan.changes));
    const child = spawn(process.execPath, ["--import", "tsx", path.join(import.meta.dirname, "take-child.ts"), repo, "bg_take0001", changesFile, "2", marker], {
      stdio: ["ignore", "ignore", "inherit"],
    });
    const exited = new Promise((resolve) => child.once("exit", resolve));
    await waitForFile(marker, exited);
    child.kill("SIGKILL");
    await exited;
    const journal = path.join(repo, ".git", "offshoot-take-bg_take0001.json");
    expect(fs.existsSync(journal)).toBe(true);
    expect(parentState()).not.toEqual(before);

    const lines = await recoverTakes(repo);

    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("bg_take0001");
    expect(lines[0]).toContain("put back");
    expect(parentState()).toEqual(before);
    expect(fs.existsSync(journal)).toBe(false);
    // and it can be taken again
    const again = await planTake(info, "bg_take0001");
    expect(again.kind).toBe("applied");
  });

  test("a journal of a live process is left alone (another OpenCode is taking right now)", async () => {
    const journal = path.join(repo, ".git", "offshoot-take-bg_live0001.json");
    fs.writeFileSync(journal, JSON.stringify({ v: 1, taskId: "bg_live0001", pid: process.ppid, changes: [] }));
    expect(await recoverTakes(repo)).toEqual([]);
    expect(fs.existsSync(journal)).toBe(true);
  });
});

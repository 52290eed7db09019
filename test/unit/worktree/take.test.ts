/**
 * Taking a worktree task's changes (src/worktree/take.ts) on real git repositories in temp dirs:
 * a clean take writes the branch's changes into the parent's working tree as uncommitted changes,
 * keeping the parent's own uncommitted changes, its index and HEAD; a conflict changes nothing
 * (files, index, HEAD, `git status`); a take cut short (its journal left behind, as a kill leaves
 * it) is rolled back at start-up, so the tree is untouched, never half-applied.
 */
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { applyTake, planTake, realConflictPath, recoverTakes } from "../../../src/worktree/take.js";
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

/** Input on stdin for git (mktree, hash-object). */
const gitIn = (cwd: string, input: string, ...args: string[]) => execFileSync("git", args, { cwd, input, encoding: "utf8" }).trim();

/**
 * Moves the task's branch to a commit whose tree is its tip's plus `path` (a new top-level entry,
 * any depth below), built with git mktree: what a child can do to its own branch, whatever git's
 * index would refuse (a `.git` path).
 */
function plantOnBranch(info: { path: string; branch: string }, path: string, mode: string, content: string) {
  const blob = gitIn(info.path, content, "hash-object", "-w", "--stdin");
  const names = path.split("/");
  let entry = `${mode} blob ${blob}\t${names.pop()}\n`;
  while (names.length > 1) entry = `040000 tree ${gitIn(info.path, entry, "mktree")}\t${names.pop()}\n`;
  const top = `040000 tree ${gitIn(info.path, entry, "mktree")}\t${names[0]}\n`;
  const root = gitIn(info.path, git(info.path, "ls-tree", "HEAD") + "\n" + top, "mktree");
  const commit = git(info.path, "commit-tree", root, "-p", "HEAD", "-m", "planted");
  git(info.path, "update-ref", `refs/heads/${info.branch}`, commit);
}

/** Every file below `dir`, with its bytes (symlinks as their target): what a take could have written outside. */
function treeOf(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of fs.readdirSync(dir, { recursive: true }) as string[]) {
    const p = path.join(dir, name);
    const stat = fs.lstatSync(p);
    if (stat.isSymbolicLink()) out[name] = `-> ${fs.readlinkSync(p)}`;
    else if (stat.isFile()) out[name] = `${(stat.mode & 0o777).toString(8)} ${fs.readFileSync(p, "utf8")}`;
  }
  return out;
}

describe("a take trusts nothing on the branch", () => {
  test.each([
    [".git/hooks/post-merge", "100755"],
    [".GIT/config", "100644"],
    ["sub/.git", "100644"], // a nested .git file can point git elsewhere
    ["sub/Git~1/x", "100644"], // NTFS's short name of .git
  ])("a branch carrying %s is refused: nothing is written, the reply says why", async (planted, mode) => {
    const info = await taskWithChanges();
    plantOnBranch(info, planted, mode, "#!/bin/sh\necho pwned\n");
    const before = parentState();
    const gitDir = treeOf(path.join(repo, ".git/hooks"));

    const plan = await planTake(info, "bg_take0001");

    expect(plan.kind).toBe("refused");
    if (plan.kind !== "refused") return;
    expect(plan.files).toEqual([planted]);
    expect(plan.reasons[0]).toBe(
      `${planted}: in git's own files (.git); a take never writes there (a file there can be a hook that runs at your next git command, or config git obeys)`,
    );
    expect(parentState()).toEqual(before); // (b.txt and the other changes of the branch neither)
    expect(treeOf(path.join(repo, ".git/hooks"))).toEqual(gitDir);
    expect(fs.existsSync(path.join(repo, ".git/hooks/post-merge"))).toBe(false);
  });

  test("applyTake itself never writes a .git path, whatever planned it (the journal of a forged plan, say): rolled back, nothing written", async () => {
    const info = await taskWithChanges();
    const blob = gitIn(info.path, "#!/bin/sh\n", "hash-object", "-w", "--stdin");
    const before = parentState();
    await expect(applyTake(repo, "bg_take0001", [{ path: ".git/hooks/post-merge", before: null, after: { mode: "100755", blob } }])).rejects.toThrow(
      "refusing a path in git's own files: .git/hooks/post-merge",
    );
    expect(fs.existsSync(path.join(repo, ".git/hooks/post-merge"))).toBe(false);
    expect(parentState()).toEqual(before);
  });

  test("an ignored directory of the checkout that is a symlink out of it is never written through: refused, naming the link and its target", async () => {
    const outside = path.join(temp.root, "outside");
    fs.mkdirSync(outside);
    fs.writeFileSync(path.join(outside, "theirs.txt"), "not the repository's\n");
    fs.writeFileSync(path.join(repo, ".gitignore"), "build\n");
    git(repo, "add", ".gitignore");
    git(repo, "commit", "-q", "-m", "ignore build");
    fs.symlinkSync(outside, path.join(repo, "build"));
    const created = await createWorktree({ projectDir: repo, projectID: "p1", taskId: "bg_take0003", env: env() });
    fs.mkdirSync(path.join(created.path, "build"));
    fs.writeFileSync(path.join(created.path, "build/evil"), "evil\n");
    git(created.path, "add", "-f", "build/evil");
    fs.writeFileSync(path.join(created.path, "a.txt"), "a\nchanged\n");
    const info = { ...created, ...(await commitRun(created, "adds build/evil")) };
    const before = parentState();
    const outsideBefore = treeOf(outside);

    const plan = await planTake(info, "bg_take0003");

    expect(plan).toEqual({
      kind: "refused",
      files: ["build/evil"],
      reasons: [`build/evil: build in your checkout is a symlink (to ${outside}); a take never writes through a link, so the file would land there`],
    });
    expect(parentState()).toEqual(before);
    expect(treeOf(outside)).toEqual(outsideBefore);

    // and applyTake checks each directory again as it writes (the link made after the plan): nothing lands outside
    const blob = gitIn(repo, "evil\n", "hash-object", "-w", "--stdin");
    await expect(applyTake(repo, "bg_take0003", [{ path: "build/evil", before: null, after: { mode: "100644", blob } }])).rejects.toThrow(
      `refusing build/evil: ${path.join(repo, "build")} is a symlink`,
    );
    expect(treeOf(outside)).toEqual(outsideBefore);
    expect(parentState()).toEqual(before);
  });

  test("a symlink at the path itself is replaced, never written through; an ignored one where the task adds a file is a conflict", async () => {
    const outside = path.join(temp.root, "secret.txt");
    fs.writeFileSync(outside, "secret\n");
    fs.symlinkSync(outside, path.join(repo, "cfg"));
    fs.writeFileSync(path.join(repo, ".gitignore"), "ignored-link\n");
    git(repo, "add", "cfg", ".gitignore");
    git(repo, "commit", "-q", "-m", "a tracked link out, an ignored name");
    fs.symlinkSync(outside, path.join(repo, "ignored-link"));
    const created = await createWorktree({ projectDir: repo, projectID: "p1", taskId: "bg_take0004", env: env() });
    fs.rmSync(path.join(created.path, "cfg"));
    fs.writeFileSync(path.join(created.path, "cfg"), "a plain file now\n");
    fs.writeFileSync(path.join(created.path, "ignored-link"), "theirs\n");
    git(created.path, "add", "-f", "ignored-link");
    const info = { ...created, ...(await commitRun(created, "cfg a file, adds ignored-link")) };

    const conflict = await planTake(info, "bg_take0004");
    expect(conflict).toEqual({
      kind: "conflict",
      files: ["ignored-link"],
      reasons: ["ignored-link: the task adds it, and an ignored file of that name is in your checkout"],
    });
    fs.rmSync(path.join(repo, "ignored-link"));
    const plan = await planTake(info, "bg_take0004");
    if (plan.kind !== "applied") throw new Error(`expected a clean plan, got ${plan.kind}`);
    await applyTake(repo, "bg_take0004", plan.changes);

    expect(fs.lstatSync(path.join(repo, "cfg")).isFile()).toBe(true);
    expect(fs.readFileSync(path.join(repo, "cfg"), "utf8")).toBe("a plain file now\n");
    expect(fs.readFileSync(outside, "utf8")).toBe("secret\n");
  });

  test("every symlink it writes is named with its target, and whether it leaves the checkout", async () => {
    const created = await createWorktree({ projectDir: repo, projectID: "p1", taskId: "bg_take0005", env: env() });
    fs.mkdirSync(path.join(created.path, "docs"));
    fs.symlinkSync("/etc/passwd", path.join(created.path, "docs/passwd"));
    fs.symlinkSync("../a.txt", path.join(created.path, "docs/a.txt"));
    fs.symlinkSync("../../escape", path.join(created.path, "docs/up"));
    const info = { ...created, ...(await commitRun(created, "links")) };

    const plan = await planTake(info, "bg_take0005");

    expect(plan.kind === "applied" && plan.links).toEqual([
      { path: "docs/a.txt", target: "../a.txt", outside: false },
      { path: "docs/passwd", target: "/etc/passwd", outside: true },
      { path: "docs/up", target: "../../escape", outside: true },
    ]);
  });

  test("a conflict names the real path, not git's `<path>~<commit>` side name", async () => {
    const created = await createWorktree({ projectDir: repo, projectID: "p1", taskId: "bg_take0006", env: env() });
    fs.mkdirSync(path.join(created.path, "x"));
    fs.writeFileSync(path.join(created.path, "x/y"), "theirs\n");
    const info = { ...created, ...(await commitRun(created, "x is a directory")) };
    fs.writeFileSync(path.join(repo, "x"), "mine, a file\n"); // untracked: in the snapshot
    const before = parentState();

    const plan = await planTake(info, "bg_take0006");

    expect(plan).toEqual({ kind: "conflict", files: ["x"], reasons: [] });
    expect(parentState()).toEqual(before);
    expect(realConflictPath("a/b~0123abcd", ["0123abcd", "ffff"])).toBe("a/b");
    expect(realConflictPath("a/b~HEAD", ["0123abcd"])).toBe("a/b~HEAD");
  });
});

/**
 * A worktree made ready before its child's first step (src/worktree/ready.ts), on real git
 * repositories in temp dirs and, where the machine has it, the real bubblewrap sandbox: what
 * .worktreeinclude brings and how (git does the matching; hostile entries are skipped with a reason),
 * what this machine's file system really allows (no claim of a clone where bytes were copied),
 * relative symlinks kept as they are, the set-up command's output, time limit and failure (nothing
 * left behind), and the one-line hint.
 */
import { execFileSync } from "node:child_process";
import { constants } from "node:fs";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { commitRun, createWorktree, removeWorktree, type SandboxChoice } from "../../../src/worktree/worktree.js";
import { sweepOrphanWorktrees } from "../../../src/worktree/sweep.js";
import { INCLUDE_MAX_ENTRIES, onlyWhatIsMeant, readyWorktree } from "../../../src/worktree/ready.js";
import { worktreeLines } from "../../../src/worktree/describe.js";
import { WorktreeInfoSchema } from "../../../src/task-record.js";
import { sandboxProbe } from "../../../src/worktree/sandbox/probe.js";
import { DEFAULT_OPTIONS, parseOptions } from "../../../src/options.js";
import { writeEscape } from "../../../src/worktree/paths.js";

let root: string;
let repo: string;
let env: NodeJS.ProcessEnv;
const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    env: { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@x", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@x" },
  }).trim();
const write = (rel: string, text: string) => {
  fs.mkdirSync(path.dirname(path.join(repo, rel)), { recursive: true });
  fs.writeFileSync(path.join(repo, rel), text);
};

/** Whether this machine's file system clones (the answer the code must not contradict). */
function machineClones(dir: string): boolean {
  const a = path.join(dir, ".clone-a");
  fs.writeFileSync(a, "x");
  try {
    fs.copyFileSync(a, path.join(dir, ".clone-b"), constants.COPYFILE_FICLONE_FORCE);
    return true;
  } catch {
    return false;
  } finally {
    fs.rmSync(a, { force: true });
    fs.rmSync(path.join(dir, ".clone-b"), { force: true });
  }
}

let bwrap: SandboxChoice | undefined;
beforeEach(async () => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "offshoot-ready-")));
  repo = path.join(root, "repo");
  env = { XDG_DATA_HOME: path.join(root, "data") };
  fs.mkdirSync(repo);
  git(repo, "init", "-q", "-b", "main");
  write("a.txt", "a\n");
  write(".gitignore", "node_modules/\n.env\n*.log\nout\n");
  git(repo, "add", "-A");
  git(repo, "commit", "-q", "-m", "init");
  const probe = await sandboxProbe();
  bwrap = probe.kind === "ready" ? { kind: probe.tool, path: probe.path, caches: [] } : undefined;
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

const none = { worktreeSetup: "", worktreeSetupTimeoutSeconds: 60 };

function nodeModules() {
  write("node_modules/pkg/index.js", "module.exports = 1;\n");
  write("node_modules/pkg/bin.js", "#!/usr/bin/env node\n");
  fs.chmodSync(path.join(repo, "node_modules/pkg/bin.js"), 0o755);
  fs.mkdirSync(path.join(repo, "node_modules/.bin"));
  fs.symlinkSync("../pkg/bin.js", path.join(repo, "node_modules/.bin/pkg"));
}

describe(".worktreeinclude", () => {
  test("git matches it: a directory is one entry, a file is copied, a non-ignored or escaping entry is skipped with its reason", async () => {
    nodeModules();
    write(".env", "SECRET=1\n");
    write("logs/a.log", "x\n");
    write("untracked.txt", "u\n");
    fs.symlinkSync("/etc", path.join(repo, "out")); // ignored, and leads outside
    write(".worktreeinclude", "node_modules/\n.env\n*.log\nuntracked.txt\nout\n../x\n.git/config\n");
    const info = await createWorktree({ projectDir: repo, projectID: "p", taskId: "bg_r1", env, ready: none });
    const clones = machineClones(root);
    const by = Object.fromEntries(info.ready!.brought.map((e) => [e.path, e]));
    expect(Object.keys(by).sort()).toEqual([".env", "logs/a.log", "node_modules/", "out", "untracked.txt"]);
    expect(by["node_modules/"]!.way).toBe(clones ? "reflink" : "copy");
    expect(by[".env"]!.way).toBe(clones ? "reflink" : "copy");
    if (!clones) expect(by[".env"]!.reason).toBe("no copy-on-write on this file system");
    expect(by["untracked.txt"]).toMatchObject({ way: "skipped", reason: expect.stringContaining("git does not ignore it") });
    expect(by["out"]).toMatchObject({ way: "skipped", reason: expect.stringContaining("leads outside the repository") });
    expect(fs.readFileSync(path.join(info.path, ".env"), "utf8")).toBe("SECRET=1\n");
    expect(fs.readFileSync(path.join(info.path, "logs/a.log"), "utf8")).toBe("x\n");
    expect(fs.existsSync(path.join(info.path, "out"))).toBe(false);
    // a real copy (not a link): writing it never reaches the checkout; modes and relative links kept
    const copied = path.join(info.path, "node_modules");
    expect(fs.lstatSync(copied).isSymbolicLink()).toBe(false);
    expect(fs.readlinkSync(path.join(copied, ".bin/pkg"))).toBe("../pkg/bin.js");
    expect(fs.statSync(path.join(copied, "pkg/bin.js")).mode & 0o777).toBe(0o755);
    expect(by["node_modules/"]!.bytes).toBe(
      fs.statSync(path.join(repo, "node_modules/pkg/index.js")).size + fs.statSync(path.join(repo, "node_modules/pkg/bin.js")).size,
    );
    // the record holds it (bounded) and the launch says it
    expect(WorktreeInfoSchema.parse(info).ready).toEqual(info.ready);
    const lines = worktreeLines("bg_r1", info, "active").join("\n");
    expect(lines).toContain(`node_modules/ (${clones ? "copy-on-write clone" : "copied"}`);
    expect(lines).toContain("untracked.txt (not brought: git does not ignore it");
    // nothing brought is the task's change
    fs.writeFileSync(path.join(info.path, "a.txt"), "changed\n");
    const run = await commitRun(info, "t");
    expect(run.changes!.files).toEqual(["a.txt"]);
    await removeWorktree(info);
  });

  test("under bubblewrap without copy-on-write a directory is a link the sandbox makes read-only, never committed", async () => {
    if (!bwrap || machineClones(root)) return expect(bwrap === undefined || machineClones(root)).toBe(true);
    nodeModules();
    write(".worktreeinclude", "node_modules/\n");
    const info = await createWorktree({ projectDir: repo, projectID: "p", taskId: "bg_r2", env, sandbox: bwrap, ready: none });
    expect(info.ready!.brought).toEqual([{ path: "node_modules/", way: "link" }]);
    expect(fs.readlinkSync(path.join(info.path, "node_modules"))).toBe(path.join(repo, "node_modules"));
    expect(info.linked).toContain("node_modules");
    // OpenCode's write/edit run outside the sandbox: they refuse a path that leads through the link into the checkout
    const map = { checkouts: [repo], worktree: info.path, cwd: info.directory };
    expect(await writeEscape("node_modules/pkg/index.js", map, [info.path])).toMatchObject({
      resolved: path.join(repo, "node_modules/pkg/index.js"),
      where: "checkout",
    });
    // inside the sandbox it reads and runs, and a write through it fails
    const r = await readyWorktree({
      repo,
      projectDir: repo,
      worktree: info.path,
      directory: info.directory,
      sandbox: { tool: bwrap, layout: layoutFor(info), branch: info.branch },
      options: {
        worktreeSetup: "cat node_modules/pkg/index.js && node_modules/.bin/pkg; echo hacked > node_modules/pkg/index.js && echo WROTE",
        worktreeSetupTimeoutSeconds: 60,
      },
    }).catch((e: Error) => e);
    expect(r).toBeInstanceOf(Error);
    expect((r as Error).message).toContain("module.exports = 1;");
    expect((r as Error).message).toMatch(/Read-only file system/);
    expect(fs.readFileSync(path.join(repo, "node_modules/pkg/index.js"), "utf8")).toBe("module.exports = 1;\n");
    // the link is never the task's change (the .gitignore says node_modules/, which a link does not match)
    fs.writeFileSync(path.join(info.path, "a.txt"), "changed\n");
    const run = await commitRun(info, "t", bwrap.path);
    expect(run.changes!.files).toEqual(["a.txt"]);
    await removeWorktree(info);
  });

  test("hostile: a huge list is bounded, a symlinked .worktreeinclude and an oversized one are refused", async () => {
    for (let i = 0; i < INCLUDE_MAX_ENTRIES + 30; i++) write(`many/f${i}.log`, "x");
    write(".worktreeinclude", "*.log\n");
    const info = await createWorktree({ projectDir: repo, projectID: "p", taskId: "bg_r3", env, ready: none });
    expect(info.ready!.brought).toHaveLength(50);
    expect(info.ready!.more).toBe(INCLUDE_MAX_ENTRIES + 30 - 50);
    expect(fs.readdirSync(path.join(info.path, "many"))).toHaveLength(INCLUDE_MAX_ENTRIES);
    expect(WorktreeInfoSchema.safeParse(info).success).toBe(true);
    await removeWorktree(info);

    fs.rmSync(path.join(repo, ".worktreeinclude"));
    fs.symlinkSync("/etc/passwd", path.join(repo, ".worktreeinclude"));
    const linked = await createWorktree({ projectDir: repo, projectID: "p", taskId: "bg_r4", env, ready: none });
    expect(linked.ready!.brought).toEqual([{ path: ".worktreeinclude", way: "skipped", reason: expect.stringContaining("not a regular file") }]);
    await removeWorktree(linked);

    fs.rmSync(path.join(repo, ".worktreeinclude"));
    write(".worktreeinclude", `${"x".repeat(70 * 1024)}\n`);
    const big = await createWorktree({ projectDir: repo, projectID: "p", taskId: "bg_r5", env, ready: none });
    expect(big.ready!.brought[0]!.reason).toContain("larger than 65536 bytes");
    await removeWorktree(big);
  });

  test("an entry whose directory in the worktree is a tracked link out of it is not written there", async () => {
    const outside = path.join(root, "outside");
    fs.mkdirSync(outside);
    fs.symlinkSync(outside, path.join(repo, "sub"));
    git(repo, "add", "sub");
    git(repo, "commit", "-q", "-m", "link");
    // in the checkout, sub/x.log lands outside too, so git never lists it there: a real dir in the
    // checkout (git told to leave that path alone: skip-worktree, so the snapshot keeps the link), a link in the worktree
    git(repo, "update-index", "--skip-worktree", "sub");
    fs.rmSync(path.join(repo, "sub"));
    write("sub/x.log", "x\n");
    write(".worktreeinclude", "*.log\n");
    const info = await createWorktree({ projectDir: repo, projectID: "p", taskId: "bg_r6", env, ready: none });
    expect(info.ready!.brought).toEqual([{ path: "sub/x.log", way: "skipped", reason: expect.stringContaining("leads outside the worktree") }]);
    expect(fs.readdirSync(outside)).toEqual([]);
    await removeWorktree(info);
  });
});

function layoutFor(info: { path: string; sandboxDir?: string; gitDir?: string; commonDir?: string }) {
  return { worktree: info.path, gitDir: info.gitDir!, commonDir: info.commonDir!, privateDir: info.sandboxDir!, caches: [], taskId: "t" };
}

describe("the set-up command", () => {
  const leftovers = (taskId: string) => ({
    worktrees: git(repo, "worktree", "list", "--porcelain")
      .split("\n")
      .filter((l) => l.startsWith("worktree ")).length,
    branches: git(repo, "branch", "--list", `offshoot/${taskId}`),
    dataDirs: ["worktrees", "sandboxes"].flatMap((d) =>
      fs.existsSync(path.join(root, "data/opencode/plugins/offshoot", d, "p")) ? fs.readdirSync(path.join(root, "data/opencode/plugins/offshoot", d, "p")) : [],
    ),
  });

  test.each([["bubblewrap"], ["no sandbox"]])("(%s) runs in the child's directory; its output's end is recorded", async (kind) => {
    if (kind === "bubblewrap" && !bwrap) return;
    write("pkg/b.txt", "b\n");
    git(repo, "add", "-A");
    git(repo, "commit", "-q", "-m", "b");
    const info = await createWorktree({
      projectDir: path.join(repo, "pkg"),
      projectID: "p",
      taskId: "bg_s1",
      env,
      sandbox: kind === "bubblewrap" ? bwrap : undefined,
      ready: {
        worktreeSetup: 'pwd; mkdir -p node_modules/dep && echo ok > node_modules/dep/i.js; echo "${OFFSHOOT_SANDBOX:-none}"',
        worktreeSetupTimeoutSeconds: 60,
      },
    });
    expect(info.ready!.setup).toMatchObject({ code: 0, output: `${info.directory}\n${kind === "bubblewrap" ? "t" : "none"}\n`.replace("\nt\n", "\nbg_s1\n") });
    expect(fs.readFileSync(path.join(info.directory, "node_modules/dep/i.js"), "utf8")).toBe("ok\n");
    expect(worktreeLines("bg_s1", info, "active").join("\n")).toMatch(/set-up: "pwd; .*" ended with exit code 0 after/);
    await removeWorktree(info);
  });

  test.each([["bubblewrap"], ["no sandbox"]])("(%s) a failure fails the creation with its output and leaves nothing behind", async (kind) => {
    if (kind === "bubblewrap" && !bwrap) return;
    write("node_modules/x/i.js", "x");
    write(".worktreeinclude", "node_modules/\n");
    const error = await createWorktree({
      projectDir: repo,
      projectID: "p",
      taskId: "bg_s2",
      env,
      sandbox: kind === "bubblewrap" ? bwrap : undefined,
      ready: { worktreeSetup: "echo installing; echo 'npm ERR! missing: left-pad' >&2; exit 3", worktreeSetupTimeoutSeconds: 60 },
    }).catch((e: Error) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toBe(
      "the worktree set-up command \"echo installing; echo 'npm ERR! missing: left-pad' >&2; exit 3\" (plugin option worktreeSetup) failed with exit code 3, so the task's worktree and branch were removed.\nIts output (the end):\ninstalling\nnpm ERR! missing: left-pad",
    );
    expect(leftovers("bg_s2")).toEqual({ worktrees: 1, branches: "", dataDirs: [] });
    expect(fs.readFileSync(path.join(repo, "node_modules/x/i.js"), "utf8")).toBe("x");
  });

  test.each([["bubblewrap"], ["no sandbox"]])("(%s) at the time limit it is killed with every process it started", async (kind) => {
    if (kind === "bubblewrap" && !bwrap) return;
    const pidFile = path.join(root, "grandchild.pid");
    const error = await createWorktree({
      projectDir: repo,
      projectID: "p",
      taskId: "bg_s3",
      env,
      sandbox: kind === "bubblewrap" ? { ...bwrap!, caches: [root] } : undefined,
      // a grandchild in the background that would outlive a kill of the shell alone
      ready: { worktreeSetup: `echo started; (sleep 300; echo late > ${root}/late) & echo $! > ${pidFile}; sleep 300`, worktreeSetupTimeoutSeconds: 1 },
    }).catch((e: Error) => e);
    expect((error as Error).message).toContain("did not finish within 1 s (option worktreeSetupTimeoutSeconds) and was killed with its processes");
    expect((error as Error).message).toContain("started");
    expect(leftovers("bg_s3")).toEqual({ worktrees: 1, branches: "", dataDirs: [] });
    // the background process is gone (in the sandbox its pid is the namespace's: look for any sleep 300 of ours instead)
    const sleeping = execFileSync("ps", ["-eo", "args"], { encoding: "utf8" })
      .split("\n")
      .filter((l) => l.includes(`${root}/late`));
    expect(sleeping).toEqual([]);
  });
});

describe("the caches a sandboxed child may write", () => {
  test("one whose real path is the checkout or lies in its git directory is left out and reported; the others are writable", async () => {
    if (!bwrap) return expect(bwrap).toBeUndefined();
    const cache = path.join(root, "cache");
    fs.mkdirSync(cache);
    const leftOut: string[] = [];
    const info = await createWorktree({
      projectDir: repo,
      projectID: "p",
      taskId: "bg_c1",
      env,
      sandbox: { ...bwrap, caches: [cache, repo, path.join(repo, ".git", "hooks")] },
      ready: {
        worktreeSetup: `touch ${cache}/ok; touch ${repo}/bad 2>/dev/null || echo refused-checkout; touch ${repo}/.git/hooks/bad 2>/dev/null || echo refused-hooks`,
        worktreeSetupTimeoutSeconds: 60,
      },
      onCacheLeftOut: (dir, why) => leftOut.push(`${dir}: ${why}`),
    });
    expect(leftOut).toEqual([
      `${repo}: it is your checkout`,
      `${path.join(repo, ".git", "hooks")}: it is inside your checkout's git directory ${path.join(repo, ".git")}`,
    ]);
    expect(fs.existsSync(path.join(cache, "ok"))).toBe(true);
    expect(fs.existsSync(path.join(repo, "bad"))).toBe(false);
    expect(fs.existsSync(path.join(repo, ".git", "hooks", "bad"))).toBe(false);
    expect(info.ready?.setup?.output).toContain("refused-checkout");
    await removeWorktree(info);
  });
});

describe("the hint", () => {
  test("a checkout with node_modules and nothing that brings it: one line that says how", async () => {
    write("node_modules/x/i.js", "x");
    const info = await createWorktree({ projectDir: repo, projectID: "p", taskId: "bg_h1", env, ready: none });
    const lines = worktreeLines("bg_h1", info, "active");
    expect(lines.filter((l) => l.startsWith("ready:"))).toEqual([
      `ready: your checkout's node_modules/ is not in this worktree (git ignores it); to bring it, add "node_modules/" to .worktreeinclude at the repository's top, or set the plugin option "worktreeSetup" to the command that installs it (e.g. "npm ci --offline")`,
    ]);
    await removeWorktree(info);
    write(".worktreeinclude", ".env\n");
    const quiet = await createWorktree({ projectDir: repo, projectID: "p", taskId: "bg_h2", env, ready: none });
    expect(quiet.ready).toBeUndefined();
    await removeWorktree(quiet);
  });
});

describe("the options", () => {
  test("worktreeSetup is a command string (default none) and its time limit whole seconds; a bad value is logged and the default kept", () => {
    expect(parseOptions({}).options).toMatchObject({ worktreeSetup: "", worktreeSetupTimeoutSeconds: 300 });
    expect(parseOptions({ worktreeSetup: "npm ci --offline", worktreeSetupTimeoutSeconds: 60 })).toEqual({
      options: { ...DEFAULT_OPTIONS, worktreeSetup: "npm ci --offline", worktreeSetupTimeoutSeconds: 60 },
      warnings: [],
    });
    const bad = parseOptions({ worktreeSetup: ["npm", "ci"], worktreeSetupTimeoutSeconds: 0 });
    expect(bad.options).toMatchObject({ worktreeSetup: "", worktreeSetupTimeoutSeconds: 300 });
    expect(bad.warnings).toEqual([
      'offshoot: option "worktreeSetup" must be a shell command of at most 4000 characters, like "npm ci --offline"; got an array. Using the default, "".',
      'offshoot: option "worktreeSetupTimeoutSeconds" must be a whole number of seconds from 1 to 86400; got number 0. Using the default, 300.',
    ]);
  });
});

describe("the start-up sweep", () => {
  test("an orphan worktree whose only untracked entry is its linked node_modules is clean: removed with its branch", async () => {
    if (!bwrap || machineClones(root)) return;
    nodeModules();
    write(".worktreeinclude", "node_modules/\n");
    const info = await createWorktree({ projectDir: repo, projectID: "p", taskId: "bg_w1", env, sandbox: bwrap, ready: none });
    expect(info.ready!.brought).toEqual([{ path: "node_modules/", way: "link" }]);
    const report = await sweepOrphanWorktrees({ projectDir: repo, projectID: "p", isKnown: () => false, env });
    expect(report.kept).toEqual([]);
    expect(report.removed).toEqual([{ path: info.path }]);
    expect(fs.existsSync(info.path)).toBe(false);
    expect(fs.readFileSync(path.join(repo, "node_modules/pkg/index.js"), "utf8")).toBe("module.exports = 1;\n");
  });
});

describe("what git lists for .worktreeinclude", () => {
  test("a directory listed only because it holds a matched file is left out; a matched directory stays", () => {
    expect(onlyWhatIsMeant(["sub/", "node_modules/", "sub/x.log", "sub-y/", ".env"])).toEqual([".env", "node_modules/", "sub-y/", "sub/x.log"]);
  });
  test("tens of thousands of entries, in one pass after the sort", () => {
    const listed = Array.from({ length: 25_000 }, (_, k) => [`d${k}/f.log`, `d${k}/`]).flat();
    expect(onlyWhatIsMeant(listed)).toHaveLength(25_000);
  });
});

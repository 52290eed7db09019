/**
 * The worktree lifecycle (src/worktree/worktree.ts) on real git repositories in temp dirs: the
 * parent's index, HEAD, branch and working tree are never touched; the worktree starts from what the
 * parent sees; linked config is never committed; a removed task leaves no worktree nor branch; the
 * orphan sweep removes only clean worktrees and keeps a branch that holds a task's commits.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { commitRun, createWorktree, recreateWorktree, removeWorktree } from "../../../src/worktree/worktree.js";
import { sweepOrphanWorktrees } from "../../../src/worktree/sweep.js";
import { wrapUpRun } from "../../../src/worktree/lifecycle.js";
import type { Client } from "../../../src/host/client.js";
import type { BackgroundTask } from "../../../src/task-record.js";
import { WorktreeInfoSchema } from "../../../src/task-record.js";

let root: string;
let repo: string;
let env: NodeJS.ProcessEnv;
/** git in `cwd`; a last argument `{ input }` is its standard input. */
const git = (cwd: string, ...args: (string | { input: string })[]) => {
  const last = args[args.length - 1];
  const input = typeof last === "object" ? last.input : undefined;
  return execFileSync(
    "git",
    args.filter((a): a is string => typeof a === "string"),
    {
      cwd,
      encoding: "utf8",
      input,
      env: { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@x", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@x" },
    },
  ).trim();
};

beforeEach(() => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "offshoot-wt-")));
  repo = path.join(root, "repo");
  env = { XDG_DATA_HOME: path.join(root, "data") };
  fs.mkdirSync(repo);
  git(repo, "init", "-q", "-b", "main");
  fs.writeFileSync(path.join(repo, "a.txt"), "a\n");
  fs.writeFileSync(path.join(repo, ".gitignore"), "opencode.json\n.opencode/\nbuild/\n");
  git(repo, "add", "-A");
  git(repo, "commit", "-q", "-m", "init");
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

describe("createWorktree", () => {
  test("starts from HEAD plus staged, unstaged and untracked changes; the parent's index, HEAD and files are untouched", async () => {
    fs.writeFileSync(path.join(repo, "a.txt"), "a\nstaged\n");
    git(repo, "add", "a.txt");
    fs.appendFileSync(path.join(repo, "a.txt"), "unstaged\n");
    fs.writeFileSync(path.join(repo, "new.txt"), "untracked\n");
    fs.mkdirSync(path.join(repo, "build"));
    fs.writeFileSync(path.join(repo, "build/out.bin"), "ignored\n");
    fs.writeFileSync(path.join(repo, "opencode.json"), "{}\n");
    const index = fs.readFileSync(path.join(repo, ".git/index"));
    const head = git(repo, "rev-parse", "HEAD");
    const status = git(repo, "status", "--porcelain");

    const info = await createWorktree({ projectDir: repo, projectID: "p1", taskId: "bg_aaaaaaaa", env });

    expect(fs.readFileSync(path.join(repo, ".git/index")).equals(index)).toBe(true);
    expect(git(repo, "rev-parse", "HEAD")).toBe(head);
    expect(git(repo, "branch", "--show-current")).toBe("main");
    expect(git(repo, "status", "--porcelain")).toBe(status);
    expect(info.path).toBe(path.join(root, "data/opencode/plugins/offshoot/worktrees/p1/bg_aaaaaaaa"));
    expect(info.branch).toBe("offshoot/bg_aaaaaaaa");
    expect(info.parentHead).toBe(head);
    expect(git(repo, "rev-parse", `${info.base}^`)).toBe(head);
    expect(fs.readFileSync(path.join(info.path, "a.txt"), "utf8")).toBe("a\nstaged\nunstaged\n");
    expect(fs.readFileSync(path.join(info.path, "new.txt"), "utf8")).toBe("untracked\n");
    expect(fs.existsSync(path.join(info.path, "build"))).toBe(false); // ignored files stay out
    // the user's ignored config is copied in, so the worktree's OpenCode instance finds it
    expect(info.linked).toEqual([]);
    expect(fs.lstatSync(path.join(info.path, "opencode.json")).isFile()).toBe(true);
    expect(fs.readFileSync(path.join(info.path, "opencode.json"), "utf8")).toBe("{}\n");
  });

  test("eight launches of one turn at once: every worktree is made (git worktree add reads the others' half-made admin files)", async () => {
    fs.writeFileSync(path.join(repo, "dirty.txt"), "untracked\n");
    const ids = Array.from({ length: 8 }, (_, i) => `bg_par${String(i).padStart(5, "0")}`);
    const made = await Promise.allSettled(ids.map((taskId) => createWorktree({ projectDir: repo, projectID: "p1", taskId, env })));
    expect(made.filter((r) => r.status === "rejected").map((r) => String((r as PromiseRejectedResult).reason))).toEqual([]);
    for (const id of ids) expect(git(repo, "rev-parse", "--verify", "-q", `offshoot/${id}`)).toMatch(/^[0-9a-f]{40}$/);
  });

  test("a clean checkout starts the branch at HEAD itself", async () => {
    const info = await createWorktree({ projectDir: repo, projectID: "p1", taskId: "bg_bbbbbbbb", env });
    expect(info.base).toBe(git(repo, "rev-parse", "HEAD"));
  });

  test("not a git repository, or no commit yet: a clear error and nothing created", async () => {
    const plain = path.join(root, "plain");
    fs.mkdirSync(plain);
    await expect(createWorktree({ projectDir: plain, projectID: "p1", taskId: "bg_cccccccc", env })).rejects.toThrow(`${plain} is not inside a git repository`);
    const empty = path.join(root, "empty");
    fs.mkdirSync(empty);
    git(empty, "init", "-q");
    await expect(createWorktree({ projectDir: empty, projectID: "p1", taskId: "bg_cccccccc", env })).rejects.toThrow("has no commit yet");
    expect(fs.existsSync(path.join(root, "data/opencode/plugins/offshoot/worktrees/p1/bg_cccccccc"))).toBe(false);
  });

  test("a branch that already exists: a clear error, and the worktree directory is not left behind", async () => {
    git(repo, "branch", "offshoot/bg_dddddddd");
    await expect(createWorktree({ projectDir: repo, projectID: "p1", taskId: "bg_dddddddd", env })).rejects.toThrow(/already exists/);
    expect(fs.existsSync(path.join(root, "data/opencode/plugins/offshoot/worktrees/p1/bg_dddddddd"))).toBe(false);
    expect(git(repo, "rev-parse", "offshoot/bg_dddddddd")).toBe(git(repo, "rev-parse", "HEAD")); // theirs, untouched
  });
});

describe("commitRun and removeWorktree", () => {
  test("commits the run's changes (author: the plugin, message: the description), never OpenCode's config", async () => {
    fs.writeFileSync(path.join(repo, "opencode.json"), "{}\n");
    fs.mkdirSync(path.join(repo, ".opencode/plugin"), { recursive: true });
    const info = await createWorktree({ projectDir: repo, projectID: "p1", taskId: "bg_eeeeeeee", env });
    // the user's .opencode is a real directory of links to its entries (the sandbox mounts it read-only)
    expect(fs.lstatSync(path.join(info.path, ".opencode")).isDirectory()).toBe(true);
    expect(fs.readlinkSync(path.join(info.path, ".opencode/plugin"))).toBe(path.join(repo, ".opencode/plugin"));
    fs.appendFileSync(path.join(info.path, "a.txt"), "child\n");
    fs.writeFileSync(path.join(info.path, "b.txt"), "b1\nb2\n");
    // a config of the child's own (an unsandboxed child can write it): never committed
    fs.writeFileSync(path.join(info.path, "opencode.json"), '{ "plugin": ["./evil.js"] }\n');
    fs.writeFileSync(path.join(info.path, "opencode.jsonc"), '{ "mcp": {} }\n');
    const { head, changes } = await commitRun(info, "Fix the thing");
    expect(git(info.path, "log", "-1", "--format=%an|%s")).toBe("opencode-offshoot|Fix the thing");
    expect(git(repo, "diff", "--name-only", info.base, info.branch).split("\n").sort()).toEqual(["a.txt", "b.txt"]);
    expect(changes).toEqual({ files: ["a.txt", "b.txt"], fileCount: 2, insertions: 3, deletions: 0 });
    expect(head).toBe(git(repo, "rev-parse", info.branch));
    // the parent's checkout still has no b.txt
    expect(fs.existsSync(path.join(repo, "b.txt"))).toBe(false);
  });

  test("no change: nothing committed, and removing leaves no worktree and no branch", async () => {
    const info = await createWorktree({ projectDir: repo, projectID: "p1", taskId: "bg_ffffffff", env });
    expect((await commitRun(info, "Look around")).changes).toBeUndefined();
    expect(git(repo, "rev-parse", info.branch)).toBe(info.base);
    await removeWorktree(info);
    expect(fs.existsSync(info.path)).toBe(false);
    expect(git(repo, "branch", "--list", info.branch)).toBe("");
    expect(git(repo, "worktree", "list", "--porcelain")).not.toContain(info.path);
  });
});

/** An ended worktree task as wrapUpRun reads it. */
function endedTask(worktree: BackgroundTask["worktree"], status: BackgroundTask["status"] = "completed"): BackgroundTask {
  return { id: "bg_free0001", description: "Write b", status, worktree } as BackgroundTask;
}
const quiet = { client: {} as Client }; // (wrapUpRun logs only a failure; none of these fail)

describe("wrapUpRun frees a committed run's worktree directory; the branch stays", () => {
  test("changes: committed on the branch, the directory and its admin entry gone, the branch holds the file; freedAt recorded", async () => {
    const info = await createWorktree({ projectDir: repo, projectID: "p1", taskId: "bg_free0001", env });
    fs.writeFileSync(path.join(info.path, "b.txt"), "b\n");
    const outcome = await wrapUpRun(quiet, endedTask(info), () => 1234);
    expect(outcome).toMatchObject({ committed: { changes: { files: ["b.txt"], fileCount: 1 } }, freedAt: 1234 });
    expect(fs.existsSync(info.path)).toBe(false);
    expect(git(repo, "worktree", "list", "--porcelain")).not.toContain(info.path);
    expect(git(repo, "show", `${info.branch}:b.txt`)).toBe("b");
    // the record with the flag is a valid task-file entry; `removed` is not set (the branch is there)
    const freed = WorktreeInfoSchema.parse({ ...info, freedAt: 1234 });
    expect(freed.freedAt).toBe(1234);
    expect(freed.removed).toBeUndefined();
  });

  test("a run cut short (interrupted) is committed and keeps its directory: it is continued in place", async () => {
    const info = await createWorktree({ projectDir: repo, projectID: "p1", taskId: "bg_free0002", env });
    fs.writeFileSync(path.join(info.path, "b.txt"), "b\n");
    const outcome = await wrapUpRun(quiet, endedTask(info, "interrupted"));
    expect(outcome).not.toHaveProperty("freedAt");
    expect(fs.existsSync(path.join(info.path, "b.txt"))).toBe(true);
  });

  test("a run that cannot be committed keeps its directory with the change, and says why", async () => {
    const info = await createWorktree({ projectDir: repo, projectID: "p1", taskId: "bg_free0003", env });
    fs.writeFileSync(path.join(info.path, "b.txt"), "b\n");
    git(info.path, "checkout", "-q", "--detach"); // HEAD off its branch: commitRun refuses
    const errors: string[] = [];
    const client = { app: { log: async (o: { body: { message: string } }) => void errors.push(o.body.message) } } as unknown as Client;
    const outcome = await wrapUpRun({ client }, endedTask(info));
    expect(outcome).toMatchObject({ failed: expect.stringContaining("not on its branch") });
    expect(fs.readFileSync(path.join(info.path, "b.txt"), "utf8")).toBe("b\n");
  });

  test("settled again after a kill that came between the removal and the record: nothing to commit, the branch's summary, freed", async () => {
    const info = await createWorktree({ projectDir: repo, projectID: "p1", taskId: "bg_free0004", env });
    fs.writeFileSync(path.join(info.path, "b.txt"), "b\n");
    await wrapUpRun(quiet, endedTask(info), () => 1);
    const again = await wrapUpRun(quiet, endedTask(info), () => 2);
    expect(again).toMatchObject({ committed: { head: git(repo, "rev-parse", info.branch), changes: { files: ["b.txt"] } }, freedAt: 2 });
  });

  test("recreateWorktree makes the directory again from the branch, at the same path, with the run's file and the user's config, not the branch's", async () => {
    fs.writeFileSync(path.join(repo, "opencode.json"), "{}\n");
    const info = await createWorktree({ projectDir: repo, projectID: "p1", taskId: "bg_free0005", env });
    fs.writeFileSync(path.join(info.path, "b.txt"), "b\n");
    const outcome = await wrapUpRun(quiet, endedTask(info), () => 9);
    const freed = { ...info, ...("committed" in outcome ? outcome.committed : {}), freedAt: 9 };
    // a branch that carries config anyway (git can commit any tree: plumbing, no working file)
    const tip = git(repo, "rev-parse", info.branch);
    const planted = git(repo, "hash-object", "-w", "--stdin", { input: '{ "plugin": ["./evil.js"] }\n' });
    const tree = git(repo, "mktree", { input: `${git(repo, "ls-tree", tip)}\n100644 blob ${planted}\topencode.jsonc\n` });
    git(repo, "update-ref", `refs/heads/${info.branch}`, git(repo, "commit-tree", tree, "-p", tip, "-m", "planted"));
    const again = await recreateWorktree(freed, { projectID: "p1", taskId: "bg_free0005", env });
    expect(again.path).toBe(info.path);
    expect(again.freedAt).toBeUndefined();
    expect(fs.readFileSync(path.join(info.path, "opencode.json"), "utf8")).toBe("{}\n");
    expect(fs.existsSync(path.join(info.path, "opencode.jsonc"))).toBe(false); // the user has none: the branch's is gone
    expect(fs.readFileSync(path.join(info.path, "b.txt"), "utf8")).toBe("b\n");
    expect(git(info.path, "branch", "--show-current")).toBe(info.branch);
    // a second run on it is committed on the same branch, and freed again: the branch no longer carries the planted config
    fs.writeFileSync(path.join(info.path, "c.txt"), "c\n");
    expect(await wrapUpRun(quiet, endedTask(again))).toMatchObject({ committed: { changes: { fileCount: 2 } } });
    expect(git(repo, "diff", "--name-only", info.base, info.branch).split("\n").sort()).toEqual(["b.txt", "c.txt"]);
    expect(fs.existsSync(info.path)).toBe(false);
    // the branch gone: a clear error, nothing made
    git(repo, "branch", "-D", info.branch);
    await expect(recreateWorktree(freed, { projectID: "p1", taskId: "bg_free0005", env })).rejects.toThrow(/branch offshoot\/bg_free0005 is gone/);
    expect(fs.existsSync(info.path)).toBe(false);
  });

  test("a resume makes the directory ready again: .worktreeinclude's entries brought and the set-up command run anew", async () => {
    fs.mkdirSync(path.join(repo, "build"));
    fs.writeFileSync(path.join(repo, "build", "out.js"), "built\n");
    fs.writeFileSync(path.join(repo, ".worktreeinclude"), "build/\n");
    git(repo, "add", ".worktreeinclude");
    git(repo, "commit", "-q", "-m", "include build");
    // the set-up command counts its runs in an ignored file of the checkout's build/ copy it cannot see: in the worktree's own
    const ready = { worktreeSetup: "echo ran >> build/setup-runs.txt", worktreeSetupTimeoutSeconds: 30 };
    const info = await createWorktree({ projectDir: repo, projectID: "p1", taskId: "bg_free0009", env, ready });
    expect(info.ready?.setup?.code).toBe(0);
    fs.writeFileSync(path.join(info.path, "b.txt"), "b\n");
    const outcome = await wrapUpRun(quiet, endedTask(info), () => 9);
    expect(fs.existsSync(info.path)).toBe(false);
    const freed = { ...info, ...("committed" in outcome ? outcome.committed : {}), freedAt: 9 };
    const again = await recreateWorktree(freed, { projectID: "p1", taskId: "bg_free0009", env, ready });
    expect(fs.readFileSync(path.join(info.path, "build", "out.js"), "utf8")).toBe("built\n");
    expect(fs.readFileSync(path.join(info.path, "build", "setup-runs.txt"), "utf8")).toBe("ran\n");
    expect(again.ready?.brought).toEqual([expect.objectContaining({ path: "build/" })]);
    expect(again.ready?.setup).toMatchObject({ command: ready.worktreeSetup, code: 0 });
    // the checkout's build/ is as it was (the set-up wrote the worktree's copy)
    expect(fs.existsSync(path.join(repo, "build", "setup-runs.txt"))).toBe(false);
  });

  test("the start-up sweep leaves a freed task's branch alone (its task is known) and removes nothing", async () => {
    const info = await createWorktree({ projectDir: repo, projectID: "p1", taskId: "bg_free0006", env });
    fs.writeFileSync(path.join(info.path, "b.txt"), "b\n");
    await wrapUpRun(quiet, endedTask(info));
    const report = await sweepOrphanWorktrees({ projectDir: repo, projectID: "p1", isKnown: (id) => id === "bg_free0006", env });
    expect(report).toMatchObject({ removed: [], kept: [], branchesRemoved: [], branchesKept: [] });
    expect(git(repo, "show", `${info.branch}:b.txt`)).toBe("b");
  });
});

describe("commitRun with text-level containment trusts nothing the child could rewrite", () => {
  test("a worktree .git file pointed at the checkout's .git: the run is still committed on the task's branch; the user's branch and index are untouched", async () => {
    const info = await createWorktree({ projectDir: repo, projectID: "p", taskId: "bg_redir001", env });
    const userHead = git(repo, "rev-parse", "main");
    const userIndex = fs.readFileSync(path.join(repo, ".git", "index"));
    fs.writeFileSync(path.join(info.path, ".git"), `gitdir: ${path.join(repo, ".git")}\n`);
    fs.writeFileSync(path.join(info.path, "b.txt"), "child\n");
    const { head } = await commitRun(info, "redirected");
    expect(git(repo, "rev-parse", "main")).toBe(userHead);
    expect(fs.readFileSync(path.join(repo, ".git", "index"))).toEqual(userIndex);
    expect(git(repo, "rev-parse", info.branch)).toBe(head);
    expect(git(repo, "show", `${info.branch}:b.txt`)).toBe("child");
  });

  test("a worktree HEAD moved onto the user's branch: nothing is committed, and the error says why", async () => {
    const info = await createWorktree({ projectDir: repo, projectID: "p", taskId: "bg_onmain01", env });
    const userHead = git(repo, "rev-parse", "main");
    fs.writeFileSync(path.join(info.gitDir!, "HEAD"), "ref: refs/heads/main\n");
    fs.writeFileSync(path.join(info.path, "b.txt"), "child\n");
    await expect(commitRun(info, "onto main")).rejects.toThrow(
      `the worktree's HEAD is not on its branch ${info.branch} any more (it is refs/heads/main); nothing was committed`,
    );
    expect(git(repo, "rev-parse", "main")).toBe(userHead);
  });
});

describe("sweepOrphanWorktrees", () => {
  test("a worktree no task names is removed when clean (its branch too, unless it holds a task's commits); one with uncommitted changes is kept; a known one is left alone", async () => {
    const clean = await createWorktree({ projectDir: repo, projectID: "p1", taskId: "bg_11111111", env });
    const committed = await createWorktree({ projectDir: repo, projectID: "p1", taskId: "bg_22222222", env });
    fs.writeFileSync(path.join(committed.path, "c.txt"), "c\n");
    await commitRun(committed, "Committed work");
    const dirty = await createWorktree({ projectDir: repo, projectID: "p1", taskId: "bg_33333333", env });
    fs.writeFileSync(path.join(dirty.path, "wip.txt"), "wip\n");
    const known = await createWorktree({ projectDir: repo, projectID: "p1", taskId: "bg_44444444", env });

    const result = await sweepOrphanWorktrees({ projectDir: repo, projectID: "p1", isKnown: (id) => id === "bg_44444444", env });

    expect(result.removed.map((r) => r.path).sort()).toEqual([clean.path, committed.path].sort());
    expect(result.removed.find((r) => r.path === committed.path)?.branchKept).toBe(committed.branch);
    expect(result.kept).toEqual([dirty.path]);
    expect(git(repo, "branch", "--list", clean.branch)).toBe("");
    expect(git(repo, "show", `${committed.branch}:c.txt`)).toBe("c");
    expect(fs.readFileSync(path.join(dirty.path, "wip.txt"), "utf8")).toBe("wip\n");
    expect(fs.existsSync(known.path)).toBe(true);
  });

  test("a branch a killed launch left (no worktree, no task) is deleted when it holds nothing of its own, and so is a worktree it left half made; one with a task's commits, or that a task names, is kept", async () => {
    // a launch cut after `git worktree add` made the branch, before the task was saved; its worktree gone
    const cut = await createWorktree({ projectDir: repo, projectID: "p1", taskId: "bg_55555555", env });
    fs.rmSync(cut.path, { recursive: true, force: true });
    // the same from a parent with uncommitted changes: the branch starts at a snapshot commit only it reaches
    fs.writeFileSync(path.join(repo, "a.txt"), "dirty\n");
    const cutSnapshot = await createWorktree({ projectDir: repo, projectID: "p1", taskId: "bg_66666666", env });
    fs.rmSync(cutSnapshot.path, { recursive: true, force: true });
    git(repo, "checkout", "--", "a.txt");
    // a branch with a task's work and no worktree: kept (and said)
    const work = await createWorktree({ projectDir: repo, projectID: "p1", taskId: "bg_77777777", env });
    fs.writeFileSync(path.join(work.path, "w.txt"), "w\n");
    await commitRun(work, "Work");
    fs.rmSync(work.path, { recursive: true, force: true });
    // a task names this one: never touched
    const named = await createWorktree({ projectDir: repo, projectID: "p1", taskId: "bg_88888888", env });
    fs.rmSync(named.path, { recursive: true, force: true });
    // a launch killed inside `git worktree add`: its branch, and a directory that is no worktree yet (no .git)
    const half = path.join(root, "data/opencode/plugins/offshoot/worktrees/p1/bg_aaaaaaa1");
    fs.mkdirSync(half, { recursive: true });
    fs.writeFileSync(path.join(half, "a.txt"), "a\n");
    git(repo, "branch", "offshoot/bg_aaaaaaa1", "HEAD");
    // a launch killed in the checkout of `git worktree add` (seen with a real SIGKILL: the .git file and
    // git's "initializing" lock are there, the index not yet, some files are): `git status` calls every
    // file changed, yet nothing but git wrote there
    const cutCheckout = path.join(root, "data/opencode/plugins/offshoot/worktrees/p1/bg_aaaaaaa2");
    git(repo, "worktree", "add", "-q", "--no-checkout", "-b", "offshoot/bg_aaaaaaa2", cutCheckout, "HEAD");
    fs.writeFileSync(path.join(repo, ".git/worktrees/bg_aaaaaaa2/locked"), "initializing");
    fs.writeFileSync(path.join(cutCheckout, "a.txt"), "a\n");
    expect(git(cutCheckout, "status", "--porcelain")).not.toBe("");
    // a temp index a killed launch left in the git dir
    const tempIndex = path.join(repo, ".git/index.offshoot-bg_99999999");
    fs.writeFileSync(tempIndex, "x");

    const result = await sweepOrphanWorktrees({
      projectDir: repo,
      projectID: "p1",
      isKnown: (id) => id === "bg_88888888",
      env,
      now: Date.now() + 2 * 3600_000,
    });

    expect(result.branchesRemoved.sort()).toEqual([cut.branch, cutSnapshot.branch].sort());
    expect(result.removed.sort((a, b) => a.path.localeCompare(b.path))).toEqual([{ path: half }, { path: cutCheckout }]);
    expect(result.kept).toEqual([]);
    expect(fs.existsSync(half)).toBe(false);
    expect(fs.existsSync(cutCheckout)).toBe(false);
    expect(git(repo, "worktree", "list", "--porcelain")).not.toContain(cutCheckout);
    expect(result.branchesKept).toEqual([work.branch]);
    expect(
      git(repo, "branch", "--list", "offshoot/*")
        .split("\n")
        .map((b) => b.trim())
        .sort(),
    ).toEqual([work.branch, named.branch].sort());
    expect(git(repo, "show", `${work.branch}:w.txt`)).toBe("w");
    expect(result.tempIndexes).toEqual([tempIndex]);
    expect(fs.existsSync(tempIndex)).toBe(false);

    // a fresh temp index (a launch in flight in another process) is left alone
    fs.writeFileSync(tempIndex, "x");
    expect((await sweepOrphanWorktrees({ projectDir: repo, projectID: "p1", isKnown: () => false, env })).tempIndexes).toEqual([]);
    expect(fs.existsSync(tempIndex)).toBe(true);
  });
});

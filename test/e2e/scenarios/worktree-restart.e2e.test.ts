/**
 * Worktree tasks across a crash (SIGKILL) of OpenCode, on the real server: the interrupted task keeps
 * its worktree and branch (its changes committed, listed with the commands), a resume continues in
 * that worktree, and start-up removes a worktree no task names only when it holds no uncommitted change.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { getMessages, isToolFollowUp, lastUserText, toolResult } from "../harness/index.js";
import { launchAll, notifications, promptList, promptText, storedTask, until, useOpencode } from "./helpers.js";

const env = useOpencode({ files: { "src/shared.ts": "export const shared = 1;\n" } });

const git = (cwd: string, ...args: string[]) => execFileSync("git", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();

type Stored = {
  status: string;
  worktree?: { path: string; directory: string; branch: string; base: string; removed?: string; changes?: { fileCount: number; insertions: number } };
};

async function worktreesHome(): Promise<string> {
  const project = (await env.server.client.project.current()).data!;
  return path.join(env.server.dataDir, "opencode", "plugins", "offshoot", "worktrees", project.id);
}

describe("worktree tasks and a crash", () => {
  test("SIGKILL mid-run: the task is interrupted, its worktree and branch stay (changes committed, listed); a resume continues there; orphans are swept only when clean", async () => {
    const { model, server } = env;
    const dir = server.directory;
    // the child edits the file, then its next step hangs until the crash
    model.script({
      name: "k-edit",
      match: (r) => lastUserText(r).includes("WT_KILL_CHILD") && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "bash", arguments: { command: "printf 'export const k = 1;\\n' >> src/shared.ts", description: "edit" } }] },
    });
    model.script({ name: "k-hang", match: (r) => lastUserText(r).includes("WT_KILL_CHILD") && isToolFollowUp(r), reply: { text: "never", delayMs: 120_000 } });
    const { parent, ids } = await launchAll(env, "WT_KILL_LAUNCH", [
      { description: "Crash victim", prompt: "WT_KILL_CHILD", agent: "general", isolation: "worktree" },
    ] as never);
    const id = ids[0]!;
    await until("the child's edit, then its hanging step", () => model.requests.some((r) => r.label === "k-hang"));
    const wt = ((await storedTask(server, id)) as Stored).worktree!;
    expect(fs.readFileSync(path.join(wt.directory, "src/shared.ts"), "utf8")).toContain("export const k = 1;");

    // Two worktrees no task names: a clean one (removed at start-up, with its branch) and one with an uncommitted file (kept).
    const home = await worktreesHome();
    const clean = path.join(home, "bg_orphan01");
    const dirty = path.join(home, "bg_orphan02");
    git(dir, "worktree", "add", "-q", "-b", "offshoot/bg_orphan01", clean, "HEAD");
    git(dir, "worktree", "add", "-q", "-b", "offshoot/bg_orphan02", dirty, "HEAD");
    fs.writeFileSync(path.join(dirty, "unsaved.txt"), "work in progress\n");
    // a branch a launch killed before its task was saved left behind: no worktree, no task
    git(dir, "branch", "offshoot/bg_orphan03", "HEAD");

    env.ev.close();
    await server.restart({ signal: "SIGKILL" });
    await env.resubscribe();

    // start-up ends the task as interrupted and commits what its run changed; the worktree stays
    const stored = await until(
      "the task interrupted after the restart",
      async () => {
        const t = (await storedTask(env.server, id)) as Stored | undefined;
        return t?.status === "interrupted" && t.worktree?.changes ? t : undefined;
      },
      30_000,
    );
    expect(stored.worktree!.removed).toBeUndefined();
    expect(fs.existsSync(wt.path)).toBe(true);
    expect(git(dir, "diff", "--name-only", wt.base, wt.branch)).toBe("src/shared.ts");
    expect(git(dir, "log", "-1", "--format=%an|%s", wt.branch)).toBe("opencode-offshoot|Crash victim");
    const list = await promptList(env, parent, "WT_KILL_LIST");
    expect(list).toContain(`${id} `);
    expect(list).toContain(`branch ${wt.branch}`);
    expect(list).toContain("changes: 1 file changed, +1 -0 (src/shared.ts)");
    expect(list).toContain(`take: background_take({ task_id: "${id}" })`);

    // the orphans: the clean one and its branch are gone, the dirty one is kept
    await until("the clean orphan removed", () => !fs.existsSync(clean));
    expect(git(dir, "branch", "--list", "offshoot/bg_orphan01")).toBe("");
    await until("the leaked branch deleted", () => git(dir, "branch", "--list", "offshoot/bg_orphan03") === "");
    expect(env.server.logs()).toContain("deleted branch offshoot/bg_orphan03");
    expect(fs.readFileSync(path.join(dirty, "unsaved.txt"), "utf8")).toBe("work in progress\n");

    // a resume after the restart runs in the same worktree
    model.script({
      name: "k-resume-bash",
      match: (r) => lastUserText(r).includes("WT_KILL_RESUME") && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "bash", arguments: { command: "printf 'export const k2 = 2;\\n' >> src/shared.ts && pwd", description: "more" } }] },
    });
    model.script({ name: "k-resume-done", match: (r) => lastUserText(r).includes("WT_KILL_RESUME") && isToolFollowUp(r), reply: { text: "continued" } });
    model.script({
      name: "k-resume",
      match: (r) => lastUserText(r) === "WT_KILL_DO_RESUME" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "background_task", arguments: { description: "Crash victim", resume: id, prompt: "WT_KILL_RESUME" } }] },
    });
    model.script({ name: "k-resumed", match: (r) => lastUserText(r) === "WT_KILL_DO_RESUME" && isToolFollowUp(r), reply: { text: "resumed" } });
    model.script({ name: "k-wake", match: (r) => lastUserText(r).includes("Background tasks you started have ended"), reply: { text: "ok" } });
    await promptText(env.server.client, parent, "WT_KILL_DO_RESUME");
    await until(
      "the resumed run's notice",
      async () => {
        const m = await getMessages(env.server.client, parent);
        return notifications(m, id).some((n) => JSON.stringify(n).includes("+2 -0")) ? m : undefined;
      },
      30_000,
    );
    const resumed = model.requests.find((r) => r.label === "k-resume-done")!;
    expect(String(toolResult(resumed.body, "bash")?.content)).toContain(wt.directory);
    expect(git(dir, "show", `${wt.branch}:src/shared.ts`)).toBe("export const shared = 1;\nexport const k = 1;\nexport const k2 = 2;");
  }, 120_000); // a launch, a SIGKILL and a start of the server (7 s alone under load), a sweep, a resume: over the 60 s default on a loaded machine
});

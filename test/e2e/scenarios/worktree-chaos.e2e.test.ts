/**
 * The user's repository stays whole around worktree writers, on the real server: three children
 * commit in their worktrees (their commits live in their private object stores, their HEAD, index
 * and reflogs in private copies of their admin directories), OpenCode is SIGKILLed while they run,
 * then restarted, and one task is resumed to its end. `git fsck` in the user's checkout is clean
 * while they run, after the kill, after the restart and after they end (a worktree's reflog in the
 * shared admin directory once named commits only its private store held: "invalid reflog entry").
 */
import { execFileSync, spawnSync } from "node:child_process";
import { describe, expect, test } from "vitest";
import { isToolFollowUp, lastUserText } from "../harness/index.js";
import { launchAll, promptText, storedTask, until, useOpencode } from "./helpers.js";

const env = useOpencode({ files: { "src/shared.ts": "export const shared = 1;\n" } });

/** git fsck in the checkout: what it says, and whether it exited 0. */
function fsck(dir: string): { ok: boolean; said: string } {
  const run = spawnSync("git", ["fsck", "--no-progress", "--no-dangling"], { cwd: dir, encoding: "utf8" });
  return { ok: run.status === 0, said: `${run.stdout}${run.stderr}`.trim() };
}

const TAGS = ["a", "b", "c"];

describe("worktree writers and a kill", () => {
  test("git fsck in the user's checkout is clean while tasks commit, after a SIGKILL mid-run, after the restart and after they end", async () => {
    const { model, server } = env;
    const dir = server.directory;
    for (const tag of TAGS) {
      const cue = `CHAOS_${tag}`;
      // each child commits twenty times on its own branch (and moves back once: a commit only its reflog names), then its next step hangs
      const commits = `for i in $(seq 1 20); do echo "$i" >> ${tag}.txt; git add -A && git -c user.name=c -c user.email=c@x commit -q -m "${tag} $i"; done; git reset -q --hard HEAD~1; git log --oneline | wc -l`;
      model.script({
        name: `${cue}-commits`,
        match: (r) => lastUserText(r).includes(cue) && !isToolFollowUp(r),
        reply: { toolCalls: [{ name: "bash", arguments: { command: commits, description: "commit" } }] },
      });
      model.script({
        name: `${cue}-hang`,
        match: (r) => lastUserText(r).includes(cue) && isToolFollowUp(r) && !lastUserText(r).includes("CHAOS_GO_ON"),
        reply: { text: "never", delayMs: 120_000 },
      });
    }
    const { parent, ids } = await launchAll(
      env,
      "CHAOS_LAUNCH",
      TAGS.map((tag) => ({ description: `Writer ${tag}`, prompt: `CHAOS_${tag}`, agent: "general", isolation: "worktree" })) as never,
    );
    await until("every child committed and hangs", () => TAGS.every((tag) => model.requests.some((r) => r.label === `CHAOS_${tag}-hang`)) || undefined, 60_000);
    expect(fsck(dir)).toEqual({ ok: true, said: "" });

    env.ev.close();
    await server.restart({ signal: "SIGKILL", afterKill: () => expect(fsck(dir)).toEqual({ ok: true, said: "" }) });
    await env.resubscribe();
    // start-up ends them interrupted, committing what each run changed
    await until(
      "each interrupted, its run committed",
      async () => {
        const tasks = (await Promise.all(ids.map((id) => storedTask(server, id)))) as unknown as (
          { status: string; worktree?: { changes?: unknown } } | undefined
        )[];
        return tasks.every((t) => t?.status === "interrupted" && t.worktree?.changes) || undefined;
      },
      30_000,
    );
    expect(fsck(dir)).toEqual({ ok: true, said: "" });
    for (const [i, tag] of TAGS.entries()) {
      const stored = (await storedTask(server, ids[i]!)) as unknown as { worktree: { branch: string } };
      expect(
        execFileSync("git", ["show", `${stored.worktree.branch}:${tag}.txt`], { cwd: dir, encoding: "utf8" })
          .trim()
          .split("\n"),
      ).toHaveLength(19);
    }

    // one goes on to its end: committed, imported, its directory freed
    model.script({ name: "chaos-go-on", match: (r) => lastUserText(r).includes("CHAOS_GO_ON"), reply: { text: "finished" } });
    model.script({
      name: "chaos-resume",
      match: (r) => lastUserText(r) === "CHAOS_RESUME" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "background_task", arguments: { resume: ids[0], prompt: "CHAOS_GO_ON" } }] },
    });
    model.script({ name: "chaos-resumed", match: (r) => lastUserText(r) === "CHAOS_RESUME" && isToolFollowUp(r), reply: { text: "resumed" } });
    await promptText(server.client, parent, "CHAOS_RESUME");
    await until(
      "completed, its run committed and its directory freed",
      async () => {
        const t = (await storedTask(server, ids[0]!)) as unknown as { status: string; worktree?: { freedAt?: number } } | undefined;
        return (t?.status === "completed" && t.worktree?.freedAt !== undefined) || undefined;
      },
      60_000,
    );
    expect(fsck(dir)).toEqual({ ok: true, said: "" });
  }, 180_000);
});

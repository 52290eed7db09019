/**
 * Branches must not leak: OpenCode is SIGKILLed in the middle of a wave of worktree launches (the
 * moment git starts making the first task's branch), twice. After each restart, every
 * `offshoot/bg_…` branch and every task worktree directory left behind is named by a task of the
 * store (and so resumable or discardable), or gone once the restart's sweep is over: a launch cut
 * before its task was saved leaves nothing, even one cut in the checkout of its `git worktree add`.
 * Only the model is scripted.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { isToolFollowUp, lastUserText } from "../harness/index.js";
import { newSession, readTaskFile, until, useOpencode } from "./helpers.js";
import { SWEEP_DONE } from "../../../src/worktree/lifecycle.js";

const env = useOpencode({ files: { "src/shared.ts": "export const shared = 1;\n" } });

const git = (cwd: string, ...args: string[]) => execFileSync("git", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();

async function worktreesHome(): Promise<string> {
  const project = (await env.server.client.project.current()).data!;
  return path.join(env.server.dataDir, "opencode", "plugins", "offshoot", "worktrees", project.id);
}

/** The server's log since its last (re)start. */
const sinceLastStart = (logs: string) => logs.slice(logs.lastIndexOf("===== restart ====="));

/** What is left that no task names: branches `offshoot/<id>` and worktree directories. */
async function unnamedLeftovers(): Promise<string[]> {
  const known = new Set((await readTaskFile(env.server)).tasks.map((t) => t.id));
  const branches = git(env.server.directory, "for-each-ref", "--format=%(refname:short)", "refs/heads/offshoot/")
    .split("\n")
    .filter(Boolean)
    .filter((b) => !known.has(b.slice("offshoot/".length)));
  const home = await worktreesHome();
  const dirs = (fs.existsSync(home) ? fs.readdirSync(home) : []).filter((d) => !known.has(d)).map((d) => path.join(home, d));
  return [...branches, ...dirs];
}

describe("a kill in the middle of worktree launches", () => {
  test("twice: after each restart every leftover branch and worktree is named by a task, or swept", async () => {
    const { model } = env;
    const dir = env.server.directory;
    // the children never finish (they are interrupted by the kill)
    model.script({ name: "hang", match: (r) => lastUserText(r).includes("LK_CHILD"), reply: { text: "never", delayMs: 120_000 } });
    model.script({ name: "wake", match: (r) => lastUserText(r).includes("Background tasks you started have ended"), reply: { text: "ok" } });
    for (const wave of [1, 2]) {
      const cue = `LK_LAUNCH_${wave}`;
      model.script({
        name: cue,
        match: (r) => lastUserText(r) === cue && !isToolFollowUp(r),
        reply: {
          toolCalls: [1, 2, 3].map((n) => ({
            name: "background_task",
            arguments: { description: `Wave ${wave} writer ${n}`, prompt: `LK_CHILD ${wave}.${n}`, agent: "general", isolation: "worktree" },
          })),
        },
      });
      model.script({ name: `${cue}-done`, match: (r) => lastUserText(r) === cue && isToolFollowUp(r), reply: { text: "launched" } });
      const parent = await newSession(env.server.client, `Launch kill ${wave}`);
      // the kill comes the moment git writes under refs/heads/offshoot (a branch being made)
      const watcher = fs.watch(path.join(dir, ".git"), { recursive: true });
      const branchStarted = new Promise<void>((resolve) => watcher.on("change", (_e, name) => String(name).includes("offshoot") && resolve()));
      await env.server.client.session.promptAsync({ path: { id: parent }, body: { parts: [{ type: "text", text: cue }] } });
      await branchStarted;
      watcher.close();
      env.ev.close();
      await env.server.restart({ signal: "SIGKILL" });
      await env.resubscribe();

      // the restart's start-up sweep says when it is over (its own log line): what is left then stays
      await until(`wave ${wave}: the restart's sweep`, () => sinceLastStart(env.server.logs()).includes(SWEEP_DONE), 30_000);
      expect(await unnamedLeftovers()).toEqual([]);
    }
  });
});

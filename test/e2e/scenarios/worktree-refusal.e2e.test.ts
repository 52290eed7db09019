/**
 * isolation: "worktree" in a project that is not a git repository: refused with a clear error, and
 * nothing is created (no task, no child session, no worktree directory). Never a fallback to the
 * shared checkout.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { getMessages } from "../harness/index.js";
import { children, newSession, promptText, readTaskFile, scriptLaunch, toolOutputs, useOpencode } from "./helpers.js";

const env = useOpencode({ git: false, files: { "a.txt": "a\n" } });

describe("worktree task without git", () => {
  test("a project that is not a git repository is refused, and nothing is created", async () => {
    const { model, server } = env;
    scriptLaunch(model, {
      name: "nogit",
      cue: "WT_NOGIT",
      task: { description: "No git", prompt: "WT_NOGIT_CHILD", agent: "general", isolation: "worktree" } as never,
      launched: "refused",
    });
    const parent = await newSession(server.client, "no git");
    await promptText(server.client, parent, "WT_NOGIT");
    const [out] = toolOutputs(await getMessages(server.client, parent), "background_task");
    expect(out).toBe(
      `Error: the background task was not started: ${server.directory} is not inside a git repository. Nothing was left behind; you can call background_task again.`,
    );
    expect(await children(server.client, parent)).toHaveLength(0);
    expect(model.chatRequests().some((r) => lastUser(r.body).includes("WT_NOGIT_CHILD"))).toBe(false);
    expect((await readTaskFile(server).catch(() => ({ tasks: [] }))).tasks).toHaveLength(0);
    expect(fs.existsSync(path.join(server.dataDir, "opencode", "plugins", "offshoot", "worktrees"))).toBe(false);
    expect(fs.readFileSync(path.join(server.directory, "a.txt"), "utf8")).toBe("a\n");
  });
});

function lastUser(body: { messages: { role: string; content?: unknown }[] }): string {
  const m = [...body.messages].reverse().find((x) => x.role === "user");
  return typeof m?.content === "string" ? m.content : JSON.stringify(m?.content ?? "");
}

/**
 * Steering a running worktree task on the real server: the message reaches the child (its stored
 * message is confirmed through the worktree instance's events, which the plugin forwards), the child
 * goes on in the same worktree, and the one notice reports everything on its branch.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { getMessages, isToolFollowUp, lastUserText, textOf, toolResult } from "../harness/index.js";
import { newSession, notifications, promptText, storedTask, taskIdIn, toolOutputs, until, useOpencode } from "./helpers.js";

const env = useOpencode({ files: { "a.txt": "a\n" } });

describe("steering a worktree task", () => {
  test("a steer reaches the running child, which goes on in its worktree; one notice with the branch's whole change", async () => {
    const { model, server } = env;
    let open!: () => void;
    const opened = new Promise<void>((r) => (open = r));
    let arrived!: () => void;
    const reached = new Promise<void>((r) => (arrived = r));
    let taskID = "";
    model.script({
      name: "launch",
      match: (r) => lastUserText(r) === "WT_STEER_LAUNCH" && !isToolFollowUp(r),
      reply: {
        toolCalls: [
          { name: "background_task", arguments: { description: "Steered writer", prompt: "WT_STEER_CHILD", agent: "general", isolation: "worktree" } },
        ],
      },
    });
    model.script({ name: "launched", match: (r) => lastUserText(r) === "WT_STEER_LAUNCH" && isToolFollowUp(r), reply: { text: "launched" } });
    // step 1 is held at the model until the steer is stored
    model.script({
      name: "step1",
      // (its first prompt starts with where it works: worktree/isolation.txt.ts)
      match: (r) => lastUserText(r).endsWith("\n\nWT_STEER_CHILD") && !isToolFollowUp(r),
      reply: async () => {
        arrived();
        await opened;
        return { toolCalls: [{ name: "bash", arguments: { command: "printf 'one\\n' >> a.txt", description: "one" } }] };
      },
    });
    model.script({
      name: "step2",
      match: (r) => lastUserText(r) === "WT_STEER_MSG" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "bash", arguments: { command: "printf 'two\\n' >> a.txt && pwd", description: "two" } }] },
    });
    model.script({ name: "step3", match: (r) => lastUserText(r) === "WT_STEER_MSG" && isToolFollowUp(r), reply: { text: "did both" } });
    model.script({
      name: "steer",
      match: (r) => lastUserText(r) === "WT_STEER_NOW" && !isToolFollowUp(r),
      reply: () => ({ toolCalls: [{ name: "background_task", arguments: { description: "Steered writer", prompt: "WT_STEER_MSG", resume: taskID } }] }),
    });
    model.script({ name: "steered", match: (r) => lastUserText(r) === "WT_STEER_NOW" && isToolFollowUp(r), reply: { text: "steered" } });
    model.script({ name: "wake", match: (r) => lastUserText(r).includes("Background tasks you started have ended"), reply: { text: "noted" } });

    const parent = await newSession(server.client, "steer worktree");
    await promptText(server.client, parent, "WT_STEER_LAUNCH");
    taskID = taskIdIn(toolOutputs(await getMessages(server.client, parent), "background_task")[0]!);
    await reached;
    await promptText(server.client, parent, "WT_STEER_NOW");
    const [, steerOut] = toolOutputs(await getMessages(server.client, parent), "background_task");
    expect(steerOut).toContain(`Message sent to background task ${taskID} "Steered writer"`);
    open();

    const messages = await until(
      "the notice",
      async () => {
        const m = await getMessages(server.client, parent);
        return notifications(m, taskID).length === 1 ? m : undefined;
      },
      30_000,
    );
    const wt = (await storedTask(server, taskID))!.worktree as { directory: string; branch: string; base: string };
    const step3 = model.requests.find((r) => r.label === "step3")!;
    expect(String(toolResult(step3.body, "bash")?.content)).toContain(wt.directory);
    expect(textOf(notifications(messages, taskID)[0]!)).toContain("changes: 1 file changed, +2 -0 (a.txt)");
    expect(execFileSync("git", ["show", `${wt.branch}:a.txt`], { cwd: server.directory, encoding: "utf8" })).toBe("a\none\ntwo\n");
    expect(fs.readFileSync(path.join(server.directory, "a.txt"), "utf8")).toBe("a\n");
  });
});

/**
 * A machine where no sandbox can run (here: bubblewrap left off the server's PATH). A worktree
 * launch is refused with the probe's reason and fix, and nothing is created; with the plugin option
 * `allowUnsandboxedWorktrees` it starts, contained by the text-level checks only, and the notice and
 * background_list say so.
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { getMessages } from "../harness/index.js";
import { isToolFollowUp, lastUserText } from "../harness/index.js";
import {
  children,
  launchAll,
  pathWithoutBwrap,
  newSession,
  notifications,
  promptList,
  promptText,
  scriptLaunch,
  toolOutputs,
  until,
  useOpencode,
} from "./helpers.js";

const bin = pathWithoutBwrap();
afterAll(() => fs.rmSync(bin, { recursive: true, force: true }));

describe("no sandbox on this machine", () => {
  const env = useOpencode({ files: { "a.txt": "a\n" }, env: { PATH: bin } });
  test("a worktree launch is refused with the reason and the fix; nothing is created", async () => {
    scriptLaunch(env.model, {
      name: "nosbx",
      cue: "NOSBX_LAUNCH",
      task: { description: "Needs a sandbox", prompt: "NOSBX_CHILD", agent: "general", isolation: "worktree" } as never,
      launched: "refused",
    });
    const parent = await newSession(env.server.client, "no sandbox");
    await promptText(env.server.client, parent, "NOSBX_LAUNCH");
    const outputs = toolOutputs(await getMessages(env.server.client, parent), "background_task");
    expect(outputs[0]).toBe(
      "Error: the background task was not started: bubblewrap (bwrap) is not installed, so a worktree task cannot run in an OS sandbox. " +
        "To fix: install it (Debian/Ubuntu: sudo apt-get install bubblewrap; Fedora: sudo dnf install bubblewrap; Arch: sudo pacman -S bubblewrap), " +
        'or, to run worktree tasks with only the weaker text-level checks, set the plugin option "allowUnsandboxedWorktrees": true. ' +
        "Nothing was left behind; you can call background_task again.",
    );
    expect(await children(env.server.client, parent)).toHaveLength(0);
    expect(fs.existsSync(path.join(env.server.dataDir, "opencode", "plugins", "offshoot", "worktrees"))).toBe(false);
  });
});

describe("no sandbox, and the user accepted text-level containment", () => {
  const env = useOpencode({ files: { "a.txt": "a\n" }, env: { PATH: bin }, pluginOptions: { allowUnsandboxedWorktrees: true } });
  test("the task runs, and the notice and the list say it was not sandboxed", async () => {
    const mine = (r: Parameters<typeof isToolFollowUp>[0]) => lastUserText(r).includes("WEAK_CHILD");
    env.model.script({
      name: "weak-child",
      match: (r) => mine(r) && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "bash", arguments: { command: "echo weak > weak.txt", description: "write" } }] },
    });
    env.model.script({ name: "weak-done", match: (r) => mine(r) && isToolFollowUp(r), reply: { text: "WEAK_CHILD done" } });
    const { parent, ids } = await launchAll(env, "WEAK_LAUNCH", [
      { description: "Weak containment", prompt: "WEAK_CHILD", agent: "general", isolation: "worktree" },
    ] as never);
    const notice = await until("the notice", async () => notifications(await getMessages(env.server.client, parent), ids[0]!)[0], 30_000);
    const text = "containment: text-level checks only, no OS sandbox (a script it ran could reach your checkout)";
    expect(JSON.stringify(notice)).toContain(text);
    expect(await promptList(env, parent, "WEAK_LIST")).toContain(text);
  });
});

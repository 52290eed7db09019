/**
 * A task on another machine in the REAL OpenCode TUI (1.18.33) under tmux: two real servers, A (the
 * TUI's, with the option `remotes`) and B (behind a password, its own HOME and clone), a bare
 * repository as the git remote both share. B's child asks a permission there; the TUI on A shows the
 * task waiting, with where it runs, and a person answers it from /tasks: the reply goes to B (this TUI
 * cannot reach B), the command runs there, and the task ends here. Only the model is scripted.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  DIST_PLUGIN,
  isToolFollowUp,
  lastUserText,
  printServerLogOnFailure,
  startOpencode,
  startScriptedModel,
  type OpencodeServer,
  type ScriptedModel,
} from "../e2e/harness/index.js";
import { bwrapWorks, readTaskFile, until } from "../e2e/scenarios/helpers.js";
import { openParent, stopScenario, type TuiSession } from "./harness.js";
import { tmuxAvailable } from "./tmux.js";
import { printTuiLogOnFailure } from "./vitest.js";

const PASSWORD = "pw-B-tui-remote";
const git = (cwd: string, ...args: string[]) => execFileSync("git", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();

let model: ScriptedModel;
let a: OpencodeServer;
let b: OpencodeServer;
let tui: TuiSession;
let parentID = "";
let bare = "";

printServerLogOnFailure(() => ({ server: a, model }));
printTuiLogOnFailure(() => tui);

beforeAll(async () => {
  if (!tmuxAvailable()) throw new Error("tmux is required for the TUI scenarios (apt-get install tmux; .ci/run installs it)");
  model = await startScriptedModel();
  bare = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "offshoot-tui-bare-")));
  git(bare, "init", "-q", "--bare", "-b", "main");
  b = await startOpencode({
    plugins: [DIST_PLUGIN],
    model,
    password: PASSWORD,
    files: { "a.txt": "a\n" },
    // (a bash command that starts with "echo ASK" waits for a person's permission on B)
    config: { permission: { bash: { "*": "allow", "echo ASK*": "ask" } } },
    beforeStart: (dir) => {
      git(dir, "remote", "add", "origin", bare);
      git(dir, "push", "-q", "origin", "main");
    },
  });
  a = await startOpencode({
    plugins: [[DIST_PLUGIN, { remotes: { box: { url: b.url, passwordEnv: "BOX_PASSWORD", directory: b.directory, allowUnsandboxed: !bwrapWorks() } } }]],
    model,
    files: { "a.txt": "a\n" },
    env: { BOX_PASSWORD: PASSWORD },
    beforeStart: (dir) => {
      git(dir, "remote", "add", "origin", bare);
      git(dir, "fetch", "-q", "origin");
    },
  });
  model.script({
    name: "launch",
    match: (r) => lastUserText(r) === "go remote" && !isToolFollowUp(r),
    reply: {
      toolCalls: [{ name: "background_task", arguments: { description: "Ask on the box", agent: "general", remote: "box", prompt: "TASK-rp: run it" } }],
    },
  });
  model.script({ name: "launched", match: (r) => lastUserText(r) === "go remote" && isToolFollowUp(r), reply: { text: "Started it." } });
  model.script({
    name: "child",
    match: (r) => lastUserText(r).includes("TASK-rp") && !isToolFollowUp(r),
    reply: { toolCalls: [{ name: "bash", arguments: { command: "echo ASK_TUI_RAN", description: "Ask first" } }] },
  });
  model.script({ name: "child-done", match: (r) => lastUserText(r).includes("TASK-rp") && isToolFollowUp(r), reply: { text: "It ran." } });
  model.script({ name: "wake", match: (r) => lastUserText(r).includes("Background tasks you started have ended"), reply: { text: "Noted." } });
  ({ parentID, tui } = await openParent(a, "Remote parent"));
}, 180_000);

afterAll(async () => {
  await stopScenario({ tui, server: a, model });
  await b?.stop();
  if (bare) fs.rmSync(bare, { recursive: true, force: true });
});

describe("a task on another machine in the TUI", () => {
  test("its child waits on a permission there: the sidebar and /tasks show it, with where it runs; answered from /tasks, the command runs there and the task ends here", async () => {
    await a.client.session.promptAsync({ path: { id: parentID }, body: { parts: [{ type: "text", text: "go remote" }] } });
    const task = await until("the task in A's task file", async () => (await readTaskFile(a)).tasks[0], 60_000);
    // the sidebar: the task waits for a person, and runs on "box"
    await tui.waitFor((s) => s.includes("⚠ Ask on the box") && s.includes("on box"), { timeoutMs: 60_000, what: "the waiting remote task in the sidebar" });
    tui.keys("C-x", "o");
    await tui.waitFor((s) => s.includes("⚠ Ask on the box") && s.includes("echo ASK_TUI_RAN"), { timeoutMs: 15_000, what: "/tasks with the waiting task" });
    tui.keys("Enter");
    await tui.waitFor("Answer permission", { timeoutMs: 15_000, what: "the task's actions" });
    tui.keys("Enter");
    await tui.waitFor('"Ask on the box" asks: bash', { timeoutMs: 15_000, what: "the permission choices" });
    tui.keys("Enter"); // Allow once
    // the reply went to B: the command ran there, and the run ended here
    await until(
      "the task ended here",
      async () => ((await readTaskFile(a)).tasks.find((t) => t.id === task.id)?.status === "completed" ? true : undefined),
      60_000,
    );
    const after = model.requests.find((r) => lastUserText(r.body).includes("TASK-rp") && isToolFollowUp(r.body))!;
    expect(JSON.stringify(after.body.messages)).toContain("ASK_TUI_RAN");
  }, 180_000);
});

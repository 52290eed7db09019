/**
 * A worktree is ready to work at once, on the real server under the bubblewrap sandbox: a Node
 * project with real dependencies (test/fixtures/node-project: typescript, ms, semver; installed once
 * per run with `npm ci` into a temp dir) and a failing test. A worktree child runs the project's own
 * `npm test` as its first step (after printing where `ms` resolves), and the test RUNS: its failure names the failing assertion, not a
 * missing module. Once with `.worktreeinclude` (node_modules/ is linked read-only from the checkout),
 * once with the set-up command `npm ci --offline` (installed inside the sandbox from the npm cache the
 * sandbox may write). The launch reply says which way each was brought, or what the set-up printed.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { getMessages, isToolFollowUp, lastUserText } from "../harness/index.js";
import {
  children,
  launchAll,
  newSession,
  notifications,
  promptText,
  readTaskFile,
  scriptLaunch,
  storedTask,
  toolOutputs,
  until,
  useOpencode,
  type Env,
} from "./helpers.js";

const FIXTURE = path.resolve(__dirname, "../../fixtures/node-project");
const work = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "offshoot-ready-e2e-")));
/** the npm cache the fixture's install filled (the set-up command installs from it, offline) */
const cache = path.join(work, "npm-cache");
const installed = path.join(work, "installed");
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

/** The fixture project's files, committed in the server's project (node_modules is ignored). */
const projectFiles = (extra: Record<string, string>) => ({
  ".gitignore": "node_modules/\n",
  "package.json": fs.readFileSync(path.join(FIXTURE, "package.json"), "utf8"),
  "package-lock.json": fs.readFileSync(path.join(FIXTURE, "package-lock.json"), "utf8"),
  "test.js": fs.readFileSync(path.join(FIXTURE, "test.js"), "utf8"),
  ...extra,
});

// once per run: the fixture's dependencies, installed from the registry (its cache kept for the offline set-up)
beforeAll(() => {
  fs.mkdirSync(installed);
  for (const name of ["package.json", "package-lock.json", "test.js"]) fs.copyFileSync(path.join(FIXTURE, name), path.join(installed, name));
  execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: installed, env: { ...process.env, npm_config_cache: cache }, stdio: "ignore" });
}, 300_000);

/** The child runs `npm test` as its first step; returns the launch reply and what the test printed. */
async function childRunsNpmTest(env: Env, tag: string) {
  const cue = `READY_${tag}_LAUNCH`;
  const mine = (r: Parameters<typeof isToolFollowUp>[0]) => lastUserText(r).includes(`READY_${tag}_CHILD`);
  env.model.script({
    name: `ready-${tag}-child`,
    match: (r) => mine(r) && !isToolFollowUp(r),
    reply: {
      toolCalls: [{ name: "bash", arguments: { command: `node -p "'resolved: ' + require.resolve('ms')" 2>&1; npm test 2>&1`, description: "run the tests" } }],
    },
  });
  env.model.script({ name: `ready-${tag}-done`, match: (r) => mine(r) && isToolFollowUp(r), reply: { text: `READY_${tag}_CHILD done` } });
  const { parent, outputs, ids } = await launchAll(env, cue, [
    { description: `Fix the failing test (${tag})`, prompt: `READY_${tag}_CHILD`, agent: "general", isolation: "worktree" },
  ] as never);
  await until("the notice", async () => notifications(await getMessages(env.server.client, parent), ids[0]!)[0], 60_000);
  const [child] = await children(env.server.client, parent);
  const [testOutput] = toolOutputs(await getMessages(env.server.client, child!.id), "bash");
  return { launch: outputs[0]!, testOutput: testOutput!, task: (await storedTask(env.server, ids[0]!))! };
}

function expectTheTestRan(testOutput: string) {
  expect(testOutput).toContain("FIXTURE_FAILING_ASSERTION: ms('2 days') is two days and one millisecond");
  expect(testOutput).toContain("expected: 172800001");
  expect(testOutput).not.toContain("Cannot find module");
}

describe("with .worktreeinclude", () => {
  const env = useOpencode({ files: projectFiles({ ".worktreeinclude": "node_modules/\n" }) });
  beforeAll(() => {
    execFileSync("cp", ["-a", path.join(installed, "node_modules"), path.join(env.server.directory, "node_modules")]);
  });

  test("the child's first `npm test` runs the project's test: node_modules is linked read-only from the checkout", async () => {
    const { launch, testOutput, task } = await childRunsNpmTest(env, "INCLUDE");
    // (`node_modules/` also matches .opencode/node_modules/, which the worktree has through its linked config: not listed)
    expect(launch).toContain("\nbrought in (.worktreeinclude): node_modules/ (linked to your checkout's, read-only in the sandbox)\n");
    expect(launch).toContain("containment: bubblewrap sandbox");
    expectTheTestRan(testOutput);
    // node follows the link: the modules are the checkout's own (read-only in the sandbox)
    expect(testOutput).toContain(`resolved: ${env.server.directory}/node_modules/ms/index.js\n`);
    expect((task.worktree as { ready: unknown }).ready).toEqual({ brought: [{ path: "node_modules/", way: "link" }] });
    // the link is never the task's change
    expect((task.worktree as { changes?: unknown }).changes).toBeUndefined();
  });
});

describe("with the set-up command", () => {
  const env = useOpencode({
    files: projectFiles({}),
    env: { npm_config_cache: cache },
    pluginOptions: { worktreeSetup: "npm ci --offline --no-audit --no-fund", worktreeSetupTimeoutSeconds: 300, sandboxWritable: [cache] },
  });

  test("the child's first `npm test` runs the project's test: the set-up installed node_modules inside the sandbox", async () => {
    const { launch, testOutput, task } = await childRunsNpmTest(env, "SETUP");
    expect(launch).toMatch(/set-up: "npm ci --offline --no-audit --no-fund" ended with exit code 0 after [\d.]+ s \(its output's last line: /);
    expectTheTestRan(testOutput);
    // installed in the worktree itself
    expect(testOutput).toContain(`resolved: ${(task.worktree as { path: string }).path}/node_modules/ms/index.js\n`);
    const worktree = task.worktree as { ready: { setup: { code: number; output: string } }; changes?: unknown };
    expect(worktree.ready.setup).toMatchObject({ code: 0, output: expect.stringContaining("added 3 packages") });
    expect(worktree.changes).toBeUndefined();
  });
});

describe("with a set-up command that fails", () => {
  const env = useOpencode({ files: projectFiles({}), pluginOptions: { worktreeSetup: "echo resolving; echo 'npm ERR! missing: left-pad' >&2; exit 7" } });

  test("the launch fails with its output, and nothing is left: no child, worktree, branch, sandbox or task", async () => {
    scriptLaunch(env.model, {
      name: "ready-fail",
      cue: "READY_FAIL_LAUNCH",
      task: { description: "Never starts", prompt: "READY_FAIL_CHILD", agent: "general", isolation: "worktree" } as never,
      launched: "refused",
    });
    const parent = await newSession(env.server.client, "failing set-up");
    await promptText(env.server.client, parent, "READY_FAIL_LAUNCH");
    const outputs = toolOutputs(await getMessages(env.server.client, parent), "background_task");
    expect(outputs[0]).toBe(
      "Error: the background task was not started: the worktree set-up command \"echo resolving; echo 'npm ERR! missing: left-pad' >&2; exit 7\" (plugin option worktreeSetup) failed with exit code 7, so the task's worktree and branch were removed.\n" +
        "Its output (the end):\nresolving\nnpm ERR! missing: left-pad. Nothing was left behind; you can call background_task again.",
    );
    expect(await children(env.server.client, parent)).toHaveLength(0);
    const git = (...args: string[]) => execFileSync("git", args, { cwd: env.server.directory, encoding: "utf8" }).trim();
    expect(
      git("worktree", "list", "--porcelain")
        .split("\n")
        .filter((l) => l.startsWith("worktree ")),
    ).toHaveLength(1);
    expect(git("branch", "--list", "offshoot/*")).toBe("");
    const home = path.join(env.server.dataDir, "opencode", "plugins", "offshoot");
    for (const kind of ["worktrees", "sandboxes"]) {
      const dir = path.join(home, kind);
      const left = fs.existsSync(dir) ? (fs.readdirSync(dir, { recursive: true }) as string[]).filter((n) => n.includes("bg_")) : [];
      expect(left).toEqual([]);
    }
    expect((await readTaskFile(env.server)).tasks).toEqual([]);
  });
});

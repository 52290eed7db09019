/**
 * A worktree is ready to work at once, on the real server under the bubblewrap sandbox: a Node
 * project with real dependencies (test/fixtures/node-project: typescript, ms, semver; installed once
 * per run with `npm ci` into a temp dir) and a failing test. A worktree child runs the project's own
 * `npm test` as its first step (after printing where `ms` resolves), and the test RUNS: its failure names the failing assertion, not a
 * missing module. Once with `.worktreeinclude` (node_modules/ is linked read-only from the checkout),
 * once with the set-up command `npm ci --offline` (installed inside the sandbox from an npm cache the
 * user chose to share: option sandboxWritable, with npm_config_cache pointing there), and once with
 * `npm ci` and the registry this machine uses allowed (option sandboxNetwork: the child has no other
 * network; npm reaches the registry through the plugin's proxy and fills the tasks' own cache). The
 * launch reply says which way each was brought, or what the set-up printed.
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

/** The registry this machine's npm uses (its host: what the option allows). */
const registry = new URL(execFileSync("npm", ["config", "get", "registry"], { encoding: "utf8" }).trim());

describe("with the set-up command and the registry allowed", () => {
  const env = useOpencode({
    files: projectFiles({}),
    pluginOptions: { worktreeSetup: "npm ci --no-audit --no-fund", worktreeSetupTimeoutSeconds: 300, sandboxNetwork: [registry.host] },
  });

  test("npm ci reaches the registry through the proxy, into the tasks' own cache; the child's `npm test` runs", async () => {
    const { launch, testOutput, task } = await childRunsNpmTest(env, "NET");
    expect(launch).toMatch(/set-up: "npm ci --no-audit --no-fund" ended with exit code 0 after [\d.]+ s/);
    expectTheTestRan(testOutput);
    expect(testOutput).toContain(`resolved: ${(task.worktree as { path: string }).path}/node_modules/ms/index.js\n`);
    // fetched into the tasks' cache, not the user's
    const tasksCache = path.join(env.server.dataDir, "opencode/plugins/offshoot/caches/npm/_cacache");
    expect(fs.readdirSync(tasksCache)).toContain("index-v5");
    expect(fs.existsSync(path.join(env.server.root, ".npm"))).toBe(false);
  }, 180_000);
});

describe("with hosts allowed and no set-up", () => {
  // (localhost listed on purpose: a listed name that resolves to this machine is refused all the same)
  const env = useOpencode({ files: projectFiles({}), pluginOptions: { sandboxNetwork: [registry.host, "localhost"] } });

  test("a loopback address, and a listed name that resolves to one, are refused through the proxy; the command's output names the option", async () => {
    const command = [
      `curl -sS -m 5 --noproxy "" -x "$HTTPS_PROXY" https://127.0.0.1:${env.server.port}/session -o /dev/null`,
      `curl -sS -m 5 --noproxy "" https://localhost:443/ -o /dev/null`,
      "echo tried",
    ].join("; ");
    env.model.script({
      name: "net-refused-child",
      match: (r) => lastUserText(r).includes("READY_REFUSED_CHILD") && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "bash", arguments: { command, description: "reach this machine" } }] },
    });
    env.model.script({ name: "net-refused-done", match: (r) => lastUserText(r).includes("READY_REFUSED_CHILD") && isToolFollowUp(r), reply: { text: "done" } });
    const { parent, ids } = await launchAll(env, "READY_REFUSED_LAUNCH", [
      { description: "Reach this machine", prompt: "READY_REFUSED_CHILD", agent: "general", isolation: "worktree" },
    ] as never);
    await until("the notice", async () => notifications(await getMessages(env.server.client, parent), ids[0]!)[0], 120_000);
    const [child] = await children(env.server.client, parent);
    const [out] = toolOutputs(await getMessages(env.server.client, child!.id), "bash");
    expect(out).toContain("CONNECT tunnel failed, response 403");
    expect(out).toContain("[sandbox: the network requests were refused:");
    expect(out).toContain(
      `127.0.0.1:${env.server.port} is not among the hosts this task may reach; a person allows it with the plugin option "sandboxNetwork"`,
    );
    expect(out).toContain(
      "localhost resolves to 127.0.0.1 (loopback): a worktree task never reaches this machine's or its network's own services, even through a host listed in \"sandboxNetwork\"",
    );
  }, 180_000);
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

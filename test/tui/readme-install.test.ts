/**
 * The README's install forms, tried as written: the JSON of each `<!-- readme-install: … -->` block is
 * read from README.md, its placeholder paths replaced by real ones, and the real OpenCode server and
 * TUI load both halves from it. The tarball form runs the README's own commands.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DIST_PLUGIN, REPO_ROOT, type OpencodeServer, type ScriptedModel, startOpencode, startScriptedModel } from "../e2e/harness/index.js";
import { DIST_TUI, startTui } from "./harness.js";
import { tmuxAvailable } from "./tmux.js";

const README = fs.readFileSync(path.join(REPO_ROOT, "README.md"), "utf8");
const VERSION = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")).version as string;

/** The code block right after `<!-- readme-install: name -->`. */
function block(name: string): string {
  const marker = `<!-- readme-install: ${name} -->`;
  const at = README.indexOf(marker);
  if (at < 0) throw new Error(`README.md has no block "${name}"`);
  const open = README.indexOf("```", at);
  const start = README.indexOf("\n", open) + 1;
  return README.slice(start, README.indexOf("```", start));
}

/** The one plugin path of a README config block, with `from` replaced by `to`. */
function pluginPath(name: string, from: string, to: string): string {
  const config = JSON.parse(block(name)) as { plugin: string[] };
  expect(config.plugin).toHaveLength(1);
  expect(config.plugin[0]!.startsWith(from)).toBe(true);
  return to + config.plugin[0]!.slice(from.length);
}

let model: ScriptedModel;
beforeAll(async () => {
  if (!tmuxAvailable()) throw new Error("tmux is required for the TUI scenarios (apt-get install tmux; .ci/run installs it)");
  model = await startScriptedModel();
});
afterAll(async () => {
  await model?.close();
});

/** Starts OpenCode with the server half from `serverPlugin` and the TUI with `tuiPlugin`: both load. */
async function bothHalvesLoad(serverPlugin: string, tuiPlugin: string) {
  let server: OpencodeServer | undefined;
  let tui: Awaited<ReturnType<typeof startTui>> | undefined;
  try {
    server = await startOpencode({ plugins: [serverPlugin], model });
    const ids = await server.client.tool.ids();
    expect(ids.data).toContain("background_task");
    const parent = (await server.client.session.create({ body: { title: "Install check" } })).data!.id;
    tui = await startTui(server, { sessionID: parent, plugin: tuiPlugin });
    await tui.waitFor("Install check", { timeoutMs: 30_000, what: "the TUI" });
    tui.keys("C-x", "o");
    await tui.waitFor("No background tasks in this session", { what: "/tasks from the TUI half" });
  } finally {
    tui?.kill();
    await server?.stop();
  }
}

describe("README install forms", () => {
  test("from a checkout: the built files by absolute path in opencode.json and tui.json", async () => {
    // The checkout's build (OFFSHOOT_DIST / OFFSHOOT_TUI_DIST point at another build of it).
    const serverPlugin = pluginPath("checkout opencode.json", "/abs/path/to/opencode-offshoot/dist/", `${path.dirname(DIST_PLUGIN)}/`);
    const tuiPlugin = pluginPath("checkout tui.json", "/abs/path/to/opencode-offshoot/dist/", `${path.dirname(DIST_TUI)}/`);
    expect(fs.existsSync(serverPlugin) && fs.existsSync(tuiPlugin)).toBe(true);
    await bothHalvesLoad(serverPlugin, tuiPlugin);
  }, 120_000);

  test("from a packed tarball: the README's npm pack and npm install, then the installed files by path", async () => {
    const commands = block("tarball commands");
    const tarball = `opencode-offshoot-${VERSION}.tgz`;
    const install = `npm install --prefix "$HOME/.local/share/opencode-offshoot" ./${tarball}`;
    expect(commands).toMatch(/^npm pack\b/m);
    expect(commands).toContain(install);
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "offshoot-readme-"));
    const work = fs.mkdtempSync(path.join(os.tmpdir(), "offshoot-pack-"));
    try {
      // `npm pack` packs the repository's dist/ (npm test builds it first).
      execFileSync("npm", ["pack", "--silent", "--pack-destination", work], { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] });
      expect(fs.existsSync(path.join(work, tarball))).toBe(true);
      execFileSync("bash", ["-c", install], { cwd: work, env: { ...process.env, HOME: home }, stdio: ["ignore", "pipe", "pipe"] });
      const serverPlugin = pluginPath("tarball opencode.json", "/home/you/", `${home}/`);
      const tuiPlugin = pluginPath("tarball tui.json", "/home/you/", `${home}/`);
      await bothHalvesLoad(serverPlugin, tuiPlugin);
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
      fs.rmSync(work, { recursive: true, force: true });
    }
  }, 180_000);
});

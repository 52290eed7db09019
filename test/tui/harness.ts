/**
 * The real OpenCode TUI (1.18.33) attached to a harness server (`opencode attach <url>`), with
 * the TUI half of the plugin listed in the project's `tui.json`, under tmux. The server is the
 * harness's isolated `opencode serve` (scripted model, temp HOME/XDG), so a test can also talk to
 * it through the SDK while it watches the screen.
 */
import fs from "node:fs";
import path from "node:path";
import { OPENCODE_BIN, REPO_ROOT, type OpencodeServer, isolationEnv } from "../e2e/harness/opencode.js";
import type { ScriptedModel } from "../e2e/harness/scripted-model.js";
import { startTmux, type Tmux } from "./tmux.js";

/**
 * The built TUI entry. OFFSHOOT_TUI_DIST points at another build (e.g. `npx tsup --out-dir
 * .build/mine` then `.build/mine/tui.js`), like OFFSHOOT_DIST for the server half.
 */
export const DIST_TUI = process.env.OFFSHOOT_TUI_DIST ? path.resolve(process.env.OFFSHOOT_TUI_DIST) : path.join(REPO_ROOT, "dist/tui.js");

export interface TuiSession extends Tmux {
  /** Everything the TUI process printed to its log file (for failure reports). */
  log(): string;
}

let counter = 0;

/** The env of the TUI process: the server's isolation (same HOME and XDG dirs), a real TERM. */
export function tuiEnv(server: OpencodeServer): Record<string, string> {
  const env: Record<string, string> = {
    ...isolationEnv(server.root),
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    TERM: "xterm-256color",
    COLORTERM: "truecolor",
    LANG: "C.UTF-8",
    LC_ALL: "C.UTF-8",
    NO_PROXY: "127.0.0.1,localhost",
  };
  if (process.env.TMPDIR) env.TMPDIR = process.env.TMPDIR;
  return env;
}

/** Write `<project>/tui.json` listing the TUI plugin (what a user does, see README "Install"). */
export function writeTuiConfig(directory: string, plugin = DIST_TUI, options?: Record<string, unknown>) {
  if (!fs.existsSync(plugin)) throw new Error(`TUI plugin not built: ${plugin} (run npx tsup, or set OFFSHOOT_TUI_DIST)`);
  const entry = options ? [plugin, options] : plugin;
  fs.writeFileSync(path.join(directory, "tui.json"), JSON.stringify({ $schema: "https://opencode.ai/tui.json", plugin: [entry] }, null, 2) + "\n");
}

export async function startTui(
  server: OpencodeServer,
  opts: { sessionID?: string; width?: number; height?: number; plugin?: string; options?: Record<string, unknown> } = {},
): Promise<TuiSession> {
  writeTuiConfig(server.directory, opts.plugin, opts.options);
  const logFile = path.join(server.root, `tui-${process.pid}-${counter}.log`);
  const socket = `offshoot-tui-${process.pid}-${counter++}`;
  const args = [OPENCODE_BIN, "attach", server.url, "--dir", server.directory, "--log-level", "DEBUG"];
  if (opts.sessionID) args.push("--session", opts.sessionID);
  const t = startTmux({
    socket,
    cwd: server.directory,
    env: tuiEnv(server),
    command: ["bash", "-c", `exec "$@" 2>>'${logFile}'`, "tui", ...args],
    width: opts.width,
    height: opts.height,
  });
  const session: TuiSession = {
    ...t,
    log: () => {
      try {
        return fs.readFileSync(logFile, "utf8");
      } catch {
        return "";
      }
    },
  };
  return session;
}

/**
 * A scenario's start: a new parent session titled `title`, opened in a TUI on `server`, once the TUI
 * shows it. (A TUI that never shows it is stopped, and the error carries the tail of its log.)
 */
export async function openParent(
  server: OpencodeServer,
  title: string,
  opts: Omit<NonNullable<Parameters<typeof startTui>[1]>, "sessionID"> = {},
): Promise<{ parentID: string; tui: TuiSession }> {
  const parentID = (await server.client.session.create({ body: { title } })).data!.id;
  const tui = await startTui(server, { ...opts, sessionID: parentID });
  try {
    await tui.waitFor(title, { timeoutMs: 30_000, what: "the TUI to show the parent session" });
  } catch (error) {
    tui.kill();
    throw new Error(`${(error as Error).message}\n----- TUI log (tail) -----\n${tui.log().slice(-8_000)}`);
  }
  return { parentID, tui };
}

/** Stops what a scenario started (as much of it as did start): the TUI, the event stream, the server, the model. */
export async function stopScenario(parts: { tui?: TuiSession; ev?: { close(): void }; server?: OpencodeServer; model?: ScriptedModel }): Promise<void> {
  parts.tui?.kill();
  parts.ev?.close();
  await parts.server?.stop();
  await parts.model?.close();
}

/**
 * Whether the screen shows /tasks' row of an ended worktree task (`✓ <description> completed after
 * 9s · ⎇ offshoot/bg_…`). The dialog cuts the row at its width, so how much of the branch shows
 * depends on how long the task ran ("after 9s" leaves one more character than "after 10s"): the row
 * is recognised by its description and the branch sign on the same line, not by the branch's name.
 */
export function showsEndedWorktreeRow(screen: string, description: string): boolean {
  return screen.split("\n").some((line) => line.includes(`✓ ${description}`) && line.includes("⎇"));
}

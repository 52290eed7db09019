/**
 * The real OpenCode TUI (1.18.33) attached to a harness server (`opencode attach <url>`), with
 * the TUI half of the plugin listed in the project's `tui.json`, under tmux. The server is the
 * harness's isolated `opencode serve` (scripted model, temp HOME/XDG), so a test can also talk to
 * it through the SDK while it watches the screen.
 */
import fs from "node:fs";
import path from "node:path";
import { OPENCODE_BIN, REPO_ROOT, type OpencodeServer, isolationEnv } from "../e2e/harness/opencode.js";
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

/** Write `<project>/tui.json` listing the TUI plugin (what a user does, see README). */
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

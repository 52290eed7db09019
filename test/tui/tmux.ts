/**
 * Drive the REAL OpenCode TUI under tmux: its own tmux server socket (`tmux -L <name>`), a
 * 200x50 window (or another size), `send-keys` to type, `capture-pane -p` to read, and polling
 * with deadlines (no fixed sleeps).
 */
import { execFileSync } from "node:child_process";

export interface Tmux {
  socket: string;
  /** The visible screen, as plain text. */
  capture(): string;
  /** tmux key names (`Enter`, `Escape`, `C-x`, `Down`) or literal text with `{ literal: true }`. */
  keys(...keys: string[]): void;
  type(text: string): void;
  /** Poll the screen until `pred` holds; throws with the last screen on timeout. */
  waitFor(pred: string | RegExp | ((screen: string) => boolean), opts?: { timeoutMs?: number; what?: string }): Promise<string>;
  /** Until `text` is no longer on screen. */
  waitGone(text: string, opts?: { timeoutMs?: number }): Promise<string>;
  resize(width: number, height: number): void;
  kill(): void;
}

function tmux(socket: string, args: string[]): string {
  return execFileSync("tmux", ["-L", socket, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

export function tmuxAvailable(): boolean {
  try {
    execFileSync("tmux", ["-V"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

// Safety net: tmux servers still alive when this process exits (a test failed before its
// afterAll, the runner stops) are killed, and with them the TUI they run.
const liveSockets = new Set<string>();
let exitHook = false;
function track(socket: string) {
  liveSockets.add(socket);
  if (exitHook) return;
  exitHook = true;
  process.once("exit", () => {
    for (const s of liveSockets) {
      try {
        execFileSync("tmux", ["-L", s, "kill-server"], { stdio: "ignore" });
      } catch {
        /* gone */
      }
    }
  });
}

export function startTmux(opts: { socket: string; command: string[]; cwd: string; env: Record<string, string>; width?: number; height?: number }): Tmux {
  const width = opts.width ?? 200;
  const height = opts.height ?? 50;
  // The environment of the pane: `env -i` with exactly the given variables (isolated HOME/XDG).
  const envArgs = Object.entries(opts.env).map(([k, v]) => `${k}=${v}`);
  const cmd = ["env", "-i", ...envArgs, ...opts.command].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(" ");
  tmux(opts.socket, ["-f", "/dev/null", "new-session", "-d", "-s", "main", "-x", String(width), "-y", String(height), "-c", opts.cwd, cmd]);
  track(opts.socket);
  tmux(opts.socket, ["set-option", "-g", "remain-on-exit", "on"]);
  const t: Tmux = {
    socket: opts.socket,
    capture: () => {
      try {
        return tmux(opts.socket, ["capture-pane", "-p", "-t", "main"]);
      } catch {
        return "";
      }
    },
    keys: (...keys) => void tmux(opts.socket, ["send-keys", "-t", "main", ...keys]),
    type: (text) => void tmux(opts.socket, ["send-keys", "-t", "main", "-l", text]),
    async waitFor(pred, o = {}) {
      const timeoutMs = o.timeoutMs ?? 20_000;
      const test = typeof pred === "string" ? (s: string) => s.includes(pred) : pred instanceof RegExp ? (s: string) => pred.test(s) : pred;
      const deadline = Date.now() + timeoutMs;
      let screen = "";
      for (;;) {
        screen = t.capture();
        if (test(screen)) return screen;
        if (Date.now() > deadline) {
          throw new Error(`tmux: timed out after ${timeoutMs} ms waiting for ${o.what ?? String(pred)}\n----- screen -----\n${screen}\n------------------`);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    waitGone(text, o = {}) {
      return t.waitFor((s) => !s.includes(text), { ...o, what: `"${text}" to disappear` });
    },
    resize(w, h) {
      tmux(opts.socket, ["resize-window", "-t", "main", "-x", String(w), "-y", String(h)]);
    },
    kill() {
      liveSockets.delete(opts.socket);
      try {
        tmux(opts.socket, ["kill-server"]);
      } catch {
        /* already gone */
      }
    },
  };
  return t;
}

/** Both texts are on the screen and `first` comes before `second` (reading order). */
export function inOrder(screen: string, first: string, second: string): boolean {
  const a = screen.indexOf(first);
  const b = screen.indexOf(second);
  return a >= 0 && b >= 0 && a < b;
}

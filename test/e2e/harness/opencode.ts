/**
 * Start a REAL `opencode serve` (npm opencode-ai, the Bun binary) isolated in temp dirs,
 * offline, with its language model pointed at a ScriptedModel.
 *
 * Layout (one temp root per server; it is the server's HOME):
 *   <root>/                 HOME
 *   <root>/.config          XDG_CONFIG_HOME   (opencode/ with the npm-install skip files)
 *   <root>/.local/share     XDG_DATA_HOME     (opencode/opencode.db, opencode/log/, opencode/storage/...)
 *   <root>/.cache           XDG_CACHE_HOME
 *   <root>/.local/state     XDG_STATE_HOME
 *   <root>/project          the project directory (cwd of the server, `opencode.json`, `.opencode/`)
 *
 * Replacing `<root>` with `/home/dev` in recorded JSON gives `/home/dev/project` paths.
 */
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createOpencodeClient, type OpencodeClient } from "@opencode-ai/sdk";
import type { ScriptedModel } from "./scripted-model.js";

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
export const OPENCODE_BIN = path.join(REPO_ROOT, "node_modules/opencode-ai/bin/opencode.exe");
export const OPENCODE_VERSION = "1.18.33";
/** The probe plugin used by the smoke test and the recorder. */
export const PROBE_PLUGIN = path.join(REPO_ROOT, "test/e2e/fixtures/probe-plugin.js");
/**
 * Where the built plugin lives (`npm run build`). OFFSHOOT_DIST points at another build of it
 * (e.g. `npx tsup --out-dir .build/mine`, inside the repo so its imports resolve): several people
 * can then build and run end-to-end tests in one checkout without replacing each other's dist/.
 */
export const DIST_PLUGIN = process.env.OFFSHOOT_DIST ? path.resolve(process.env.OFFSHOOT_DIST) : path.join(REPO_ROOT, "dist/index.js");

export interface StartOptions {
  /** Absolute paths of plugin entry files (put in `"plugin"` of opencode.json). */
  plugins: PluginSpec[];
  model: ScriptedModel;
  /** Files to create in the project, relative path -> content. */
  files?: Record<string, string>;
  /** Extra env for the server (wins over the harness defaults). */
  env?: Record<string, string>;
  /** Deep-merged over the generated opencode.json (e.g. `{ agent: {...}, compaction: {...} }`). */
  config?: Record<string, unknown>;
  /**
   * `git init` + one commit (fixed author and date) in the project. Default true. OpenCode's
   * project id is the root commit hash, so it is stable for the same files; without git the
   * project id is "global" and its worktree "/".
   */
  git?: boolean;
  /** Ready-line timeout (ms). Default 30 000. */
  startTimeoutMs?: number;
  /** Server log level (`--log-level`). Default "INFO". */
  logLevel?: "DEBUG" | "INFO" | "WARN" | "ERROR";
  /**
   * Debugging only: a command put in front of the server command line (e.g.
   * `["strace", "-f", "-e", "trace=connect", "-o", "/tmp/x"]`). stop() signals this wrapper's PID.
   */
  spawnPrefix?: string[];
  /**
   * By default the harness boots the project instance right after start (`tool.ids`, which
   * also loads the plugins) and THROWS if OpenCode reports a plugin that failed to load
   * (an import that does not resolve, `server()` throwing, ...): OpenCode itself only
   * publishes such failures as a `session.error` without sessionID and carries on.
   * Set true to get them in `pluginErrors()` instead.
   */
  allowPluginErrors?: boolean;
  /**
   * The server's password (`OPENCODE_SERVER_PASSWORD`, user `opencode`): the server then asks every
   * request for HTTP Basic auth, and `client` sends it.
   */
  password?: string;
  /** Called once the project exists (after its git commit) and before the server first starts (e.g. to add a git remote). */
  beforeStart?: (directory: string) => void;
}

export interface OpencodeServer {
  /** `http://127.0.0.1:PORT` */
  url: string;
  port: number;
  /** v1 SDK client with baseUrl and directory set. Replaced by `restart()` (read it again after). */
  client: OpencodeClient;
  /** Temp root = HOME of the server. */
  root: string;
  /** The project directory. */
  directory: string;
  /** XDG_DATA_HOME (OpenCode keeps `opencode/opencode.db` under it). */
  dataDir: string;
  configDir: string;
  /** Everything the server wrote to stdout/stderr (all runs, incl. before restarts). */
  logs(): string;
  /** The server process id (current run). */
  pid(): number | undefined;
  /** Plugin load failures OpenCode reported during the last (re)start. */
  pluginErrors(): string[];
  /** Kill the server (SIGTERM, then SIGKILL) and delete the temp dirs. Idempotent. */
  stop(): Promise<void>;
  /**
   * Runs another `opencode` command (e.g. `["run", "hello"]`) in the same project, with the same
   * isolated environment and config, next to the server; resolves when it exits (killed after
   * `timeoutMs`).
   */
  exec(args: string[], opts?: { timeoutMs?: number }): Promise<{ code: number | null; output: string }>;
  /**
   * Stop the process but keep dirs and data, then start again (new port unless `samePort`).
   * `signal: "SIGKILL"` kills it at once (a crash: no dispose hook runs); default SIGTERM (a quit).
   */
  /** `afterKill`: called once the old process is gone and before the new one starts (what the kill left). */
  restart(opts?: { samePort?: boolean; signal?: "SIGTERM" | "SIGKILL"; afterKill?: () => void }): Promise<void>;
}

/** The HTTP Basic auth header of OpenCode's server user (`opencode`) with this password. */
export function basicAuth(password: string, user = "opencode"): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
}

/** A free TCP port on 127.0.0.1 (bind to 0, read, close). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function deepMerge(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) {
    out[k] = isPlainObject(v) && isPlainObject(out[k]) ? deepMerge(out[k] as Record<string, unknown>, v) : v;
  }
  return out;
}

/** The npm-install skip: OpenCode sees @opencode-ai/plugin as already installed. */
function writeInstallSkip(dir: string) {
  fs.mkdirSync(path.join(dir, "node_modules"), { recursive: true });
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ dependencies: { "@opencode-ai/plugin": OPENCODE_VERSION } }, null, 2) + "\n");
  fs.writeFileSync(
    path.join(dir, "package-lock.json"),
    JSON.stringify({ packages: { "": { dependencies: { "@opencode-ai/plugin": OPENCODE_VERSION } } } }, null, 2) + "\n",
  );
}

/** A plugin entry of opencode.json: an absolute path, or `[path, options]` (the plugin's options). */
export type PluginSpec = string | [string, Record<string, unknown>];

export function buildConfig(model: ScriptedModel, plugins: PluginSpec[], extra?: Record<string, unknown>) {
  const base: Record<string, unknown> = {
    $schema: "https://opencode.ai/config.json",
    provider: {
      mock: {
        // The scripted server answers both APIs; the model's `api` picks the provider package.
        npm: model.api === "anthropic" ? "@ai-sdk/anthropic" : "@ai-sdk/openai-compatible",
        name: "Mock",
        options: { baseURL: model.url, apiKey: "x" },
        models: {
          "mock-model": {
            name: "Mock Model",
            tool_call: true,
            limit: { context: 200000, output: 8000 },
          },
          // A second model of the same scripted server, for tasks that choose their model; it has
          // a variant ("high") and a price ($ per million tokens), as a real provider's model would.
          "other-model": {
            name: "Other Model",
            tool_call: true,
            limit: { context: 200000, output: 8000 },
            cost: { input: 1, output: 2 },
            variants: { high: { reasoningEffort: "high" } },
          },
        },
      },
    },
    enabled_providers: ["mock"],
    model: "mock/mock-model",
    small_model: "mock/mock-model",
    autoupdate: false,
    share: "disabled",
    snapshot: false,
    lsp: false,
    formatter: false,
    permission: { "*": "allow" },
    plugin: plugins,
  };
  return extra ? deepMerge(base, extra) : base;
}

/** What isolates an OpenCode process (server or TUI) in `root` and keeps it offline. */
export function isolationEnv(root: string): Record<string, string> {
  return {
    HOME: root,
    SHELL: "/bin/bash",
    XDG_CONFIG_HOME: path.join(root, ".config"),
    XDG_DATA_HOME: path.join(root, ".local/share"),
    XDG_CACHE_HOME: path.join(root, ".cache"),
    XDG_STATE_HOME: path.join(root, ".local/state"),
    OPENCODE_DISABLE_MODELS_FETCH: "1",
    OPENCODE_DISABLE_AUTOUPDATE: "1",
    OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
    OPENCODE_DISABLE_SHARE: "1",
    OPENCODE_DISABLE_CLAUDE_CODE: "1",
    OPENCODE_DISABLE_EXTERNAL_SKILLS: "1",
  };
}

/** Env for the server: a small whitelist of the parent env + isolation + offline switches. */
function buildEnv(root: string, extra?: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const k of ["PATH", "LANG", "LC_ALL", "TZ", "TERM", "TMPDIR", "USER", "LOGNAME"]) {
    if (process.env[k] !== undefined) env[k] = process.env[k];
  }
  Object.assign(env, isolationEnv(root), {
    OPENCODE_EXPERIMENTAL_DISABLE_FILEWATCHER: "1",
    // No git prompts / pagers from the bash tool or the VCS probe.
    GIT_TERMINAL_PROMPT: "0",
    GIT_CONFIG_NOSYSTEM: "1",
    NO_COLOR: "1",
    // Belt and braces: anything that tries a proxy-less fetch to the internet fails fast.
    NO_PROXY: "127.0.0.1,localhost",
  });
  return { ...env, ...(extra ?? {}) };
}

const GRACE_MS = 3_000;

/** `pid -> starttime` of every descendant of `root` (Linux /proc; empty elsewhere). */
function descendants(root: number): Map<number, string> {
  const out = new Map<number, string>();
  let entries: string[];
  try {
    entries = fs.readdirSync("/proc");
  } catch {
    return out;
  }
  const parent = new Map<number, { ppid: number; start: string }>();
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${e}/stat`, "utf8");
      // Fields after the ")" of the command name: state ppid pgrp ... (starttime is field 22).
      const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      parent.set(Number(e), { ppid: Number(rest[1]), start: rest[19] ?? "" });
    } catch {
      /* exited */
    }
  }
  const queue = [root];
  while (queue.length) {
    const p = queue.shift()!;
    for (const [pid, info] of parent) {
      if (info.ppid === p && !out.has(pid)) {
        out.set(pid, info.start);
        queue.push(pid);
      }
    }
  }
  return out;
}

/** SIGKILL the given processes if they are still the same processes (same start time). */
function killLeftovers(procs: Map<number, string>) {
  for (const [pid, start] of procs) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
      const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (rest[19] !== start) continue;
      process.kill(pid, "SIGKILL");
    } catch {
      /* gone */
    }
  }
}

// Safety net: servers still running when this Node process exits (a test forgot stop(),
// or the runner is shutting down) are killed with their process group.
const live = new Set<number>();
let exitHookInstalled = false;
function track(pid: number) {
  live.add(pid);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const id of live) {
      try {
        process.kill(-id, "SIGKILL");
      } catch {
        /* gone */
      }
    }
  });
}

function waitExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      child.off("exit", onExit);
      resolve(false);
    }, ms);
    function onExit() {
      clearTimeout(t);
      resolve(true);
    }
    child.once("exit", onExit);
  });
}

export async function startOpencode(opts: StartOptions): Promise<OpencodeServer> {
  if (!fs.existsSync(OPENCODE_BIN)) throw new Error(`opencode binary not found at ${OPENCODE_BIN}`);
  for (const spec of opts.plugins) {
    const p = typeof spec === "string" ? spec : spec[0];
    if (!path.isAbsolute(p)) throw new Error(`plugin path must be absolute: ${p}`);
    if (!fs.existsSync(p)) throw new Error(`plugin not found: ${p}`);
  }

  // realpath: on some systems /tmp is a symlink, and OpenCode reports real paths.
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "offshoot-e2e-")));
  const directory = path.join(root, "project");
  const env = buildEnv(root, { ...(opts.password ? { OPENCODE_SERVER_PASSWORD: opts.password } : {}), ...opts.env });
  const configDir = env.XDG_CONFIG_HOME!;
  const dataDir = env.XDG_DATA_HOME!;
  for (const d of [directory, configDir, dataDir, env.XDG_CACHE_HOME!, env.XDG_STATE_HOME!]) fs.mkdirSync(d, { recursive: true });

  writeInstallSkip(path.join(directory, ".opencode"));
  writeInstallSkip(path.join(configDir, "opencode"));
  fs.writeFileSync(path.join(directory, "opencode.json"), JSON.stringify(buildConfig(opts.model, opts.plugins, opts.config), null, 2) + "\n");
  for (const [rel, content] of Object.entries(opts.files ?? {})) {
    const p = path.join(directory, rel);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, content);
  }
  if (opts.git ?? true) {
    const gitEnv = {
      ...env,
      GIT_AUTHOR_NAME: "e2e",
      GIT_AUTHOR_EMAIL: "e2e@example.invalid",
      GIT_COMMITTER_NAME: "e2e",
      GIT_COMMITTER_EMAIL: "e2e@example.invalid",
      GIT_AUTHOR_DATE: "2026-01-01T00:00:00Z",
      GIT_COMMITTER_DATE: "2026-01-01T00:00:00Z",
    };
    const git = (...args: string[]) => execFileSync("git", args, { cwd: directory, env: gitEnv, stdio: "ignore" });
    git("init", "-q", "-b", "main");
    // opencode.json holds the model's random port: keep it out so the root commit (= project id) is stable.
    fs.appendFileSync(path.join(directory, ".gitignore"), ".opencode/\nopencode.json\n");
    git("add", "-A");
    git("commit", "-q", "-m", "init", "--no-gpg-sign");
  }
  opts.beforeStart?.(directory);

  let log = "";
  let child: ChildProcess | undefined;
  let port = 0;
  let stopped = false;
  let pluginErrors: string[] = [];

  const server: OpencodeServer = {
    url: "",
    port: 0,
    client: undefined as unknown as OpencodeClient,
    root,
    directory,
    dataDir,
    configDir,
    logs: () => log,
    pid: () => child?.pid,
    pluginErrors: () => [...pluginErrors],
    exec(args, o = {}) {
      return new Promise((resolve) => {
        const c = spawn(OPENCODE_BIN, args, { cwd: directory, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
        let output = "";
        c.stdout!.setEncoding("utf8").on("data", (d: string) => (output += d));
        c.stderr!.setEncoding("utf8").on("data", (d: string) => (output += d));
        const timer = setTimeout(() => {
          try {
            process.kill(-c.pid!, "SIGKILL");
          } catch {
            /* gone */
          }
        }, o.timeoutMs ?? 60_000);
        c.once("exit", (code) => {
          clearTimeout(timer);
          resolve({ code, output });
        });
      });
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await killChild();
      fs.rmSync(root, { recursive: true, force: true, maxRetries: 3 });
    },
    async restart(r = {}) {
      if (stopped) throw new Error("server was stopped");
      await killChild(r.signal);
      r.afterKill?.();
      log += `\n===== restart =====\n`;
      if (r.samePort) await launch(port);
      else await launchOnFreePort();
    },
  };

  async function killChild(first: NodeJS.Signals = "SIGTERM") {
    const c = child;
    child = undefined;
    if (!c || c.pid === undefined) return;
    if (c.exitCode !== null || c.signalCode !== null) return;
    // The server runs in its own process group (detached), so processes it started (bash tool
    // commands, ...) go with it: signal the group -pid, which is the id of what we spawned.
    const signal = (sig: NodeJS.Signals) => {
      try {
        process.kill(-c.pid!, sig);
        return true;
      } catch {
        try {
          process.kill(c.pid!, sig);
          return true;
        } catch {
          return false;
        }
      }
    };
    // Tool processes (the bash tool) run in process groups of their own and outlive the
    // server: remember the server's descendants now and kill those left after it exits.
    const kids = descendants(c.pid);
    if (!signal(first)) return;
    if (!(await waitExit(c, GRACE_MS))) {
      signal("SIGKILL");
      await waitExit(c, GRACE_MS);
    }
    // Whatever is left in the group (the server exited on SIGTERM but a tool process did not).
    try {
      process.kill(-c.pid, "SIGKILL");
    } catch {
      /* group empty */
    }
    killLeftovers(kids);
  }

  async function launch(p: number) {
    const timeoutMs = opts.startTimeoutMs ?? 30_000;
    const started = Date.now();
    const argv = [
      ...(opts.spawnPrefix ?? []),
      OPENCODE_BIN,
      ...["serve", "--hostname", "127.0.0.1", "--port", String(p), "--print-logs", "--log-level", opts.logLevel ?? "INFO"],
    ];
    const c = spawn(argv[0]!, argv.slice(1), { cwd: directory, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    child = c;
    if (c.pid !== undefined) {
      const id = c.pid;
      track(id);
      c.once("exit", () => live.delete(id));
    }
    const readyLine = `opencode server listening on http://127.0.0.1:${p}`;
    await new Promise<void>((resolve, reject) => {
      let out = "";
      let settled = false;
      const finish = (err?: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) reject(err);
        else resolve();
      };
      const timer = setTimeout(() => {
        finish(new Error(`opencode did not print "${readyLine}" within ${timeoutMs} ms.\n----- server log -----\n${log}`));
      }, timeoutMs);
      c.stdout!.setEncoding("utf8");
      c.stderr!.setEncoding("utf8");
      c.stdout!.on("data", (d: string) => {
        log += d;
        out += d;
        if (out.includes(readyLine)) finish();
      });
      c.stderr!.on("data", (d: string) => {
        log += d;
      });
      c.once("error", (err) => finish(new Error(`failed to spawn opencode: ${err.message}\n----- server log -----\n${log}`)));
      c.once("exit", (code, sig) => {
        log += `\n[opencode exited: code=${code} signal=${sig}]\n`;
        finish(new Error(`opencode exited before it was ready (code=${code} signal=${sig}).\n----- server log -----\n${log}`));
      });
    }).catch(async (err) => {
      await killChild();
      throw err;
    });
    log += `\n[harness: ready after ${Date.now() - started} ms on port ${p}]\n`;
    port = p;
    server.port = p;
    server.url = `http://127.0.0.1:${p}`;
    server.client = createOpencodeClient({
      baseUrl: server.url,
      directory,
      ...(opts.password ? { headers: { Authorization: basicAuth(opts.password) } } : {}),
    });
    await bootstrap();
  }

  /** Create the project instance (loads plugins) and collect plugin load failures. */
  async function bootstrap() {
    const logStart = log.length;
    const ac = new AbortController();
    const errors: string[] = [];
    let connected!: () => void;
    const connectedP = new Promise<void>((r) => (connected = r));
    // Global events: instance-scoped subscriptions start only after the plugins loaded.
    const sub = await server.client.global.event({ signal: ac.signal, sseMaxRetryAttempts: 1 } as any);
    const reader = (async () => {
      try {
        for await (const raw of sub.stream as AsyncIterable<any>) {
          const e = raw?.payload;
          if (e?.type === "server.connected") connected();
          const msg = e?.type === "session.error" && !e.properties?.sessionID ? e.properties?.error?.data?.message : undefined;
          if (typeof msg === "string" && /plugin/i.test(msg)) errors.push(msg);
        }
      } catch {
        /* aborted */
      }
    })();
    try {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([connectedP, new Promise((r) => (timer = setTimeout(r, 5_000)))]);
      clearTimeout(timer);
      const ids = await server.client.tool.ids();
      if (ids.error) throw new Error(`tool.ids failed after start: ${JSON.stringify(ids.error)}\n----- server log -----\n${log}`);
      // The failure events are published from a forked fiber during bootstrap: give them a moment.
      await new Promise((r) => setTimeout(r, 250));
    } finally {
      ac.abort();
      await reader;
    }
    for (const line of log.slice(logStart).split("\n")) {
      if (/failed to load (internal )?plugin/i.test(line)) errors.push(line.trim());
    }
    pluginErrors = errors;
    if (errors.length && !opts.allowPluginErrors) {
      throw new Error(`OpenCode failed to load plugin(s):\n  ${errors.join("\n  ")}\n----- server log -----\n${log}`);
    }
  }

  /** Launch on a free port; one retry on a fresh port if the picked one was taken meanwhile. */
  async function launchOnFreePort() {
    const mark = log.length;
    try {
      await launch(await freePort());
    } catch (err) {
      // OpenCode exits with "ServeError" when the port is taken.
      if (!/EADDRINUSE|address already in use|ServeError/i.test(log.slice(mark))) throw err;
      log += `\n[harness: port taken, retrying on another port]\n`;
      await launch(await freePort());
    }
  }

  try {
    await launchOnFreePort();
  } catch (err) {
    await server.stop();
    throw err;
  }
  return server;
}

// ---------------------------------------------------------------------------------------
// Events

/** Runtime envelope of a bus event on `/event`. */
export interface OcEvent {
  id?: string;
  type: string;
  properties: Record<string, any>;
}

export interface EventCollector {
  /** Every event received so far (including `server.connected`). */
  readonly events: OcEvent[];
  /**
   * First event matching the predicate: among those already received (after the last
   * `clear()`, or from index `since` as returned by `mark()`), else the next one to arrive.
   * Rejects after `timeoutMs` (default 15 000) with the last events in the message.
   */
  waitFor(predicate: (e: OcEvent) => boolean, timeoutMs?: number, opts?: { since?: number }): Promise<OcEvent>;
  /**
   * A position in the stream, to pass as `since`: by default the current end (only events
   * after this point match); given a received event, that event's own position (it and the
   * events after it match).
   */
  mark(from?: OcEvent): number;
  /** When this process received the event (`Date.now()` on arrival), e.g. for latency figures. */
  arrivedAt(e: OcEvent): number;
  /** Events of one session (`properties.sessionID`, or `info.id` / `part.sessionID`). */
  forSession(sessionID: string): OcEvent[];
  /** Forget the events received so far (waitFor then only sees later events). */
  clear(): void;
  close(): void;
}

/** The session an event belongs to, if any. */
export function eventSessionID(e: OcEvent): string | undefined {
  const p = e.properties ?? {};
  return p.sessionID ?? p.info?.sessionID ?? p.part?.sessionID ?? (e.type.startsWith("session.") ? p.info?.id : undefined);
}

/**
 * Subscribe to `/event` (SSE) with the SDK and collect events, each with its arrival time
 * (`arrivedAt`). Resolves once the subscription is live (after the `server.connected` event),
 * so nothing emitted after `await events(client)` is missed. The subscription does not
 * survive `restart()`: subscribe again with the new `server.client`.
 */
export async function events(client: OpencodeClient, opts: { connectTimeoutMs?: number } = {}): Promise<EventCollector> {
  const ac = new AbortController();
  const list: OcEvent[] = [];
  /** Position in `list` and arrival time of every received event. */
  const received = new WeakMap<OcEvent, { index: number; at: number }>();
  const receipt = (e: OcEvent) => {
    const r = received.get(e);
    if (!r) throw new Error(`not an event of this collector: ${e?.type}`);
    return r;
  };
  let base = 0;
  const waiters = new Set<{ pred: (e: OcEvent) => boolean; resolve: (e: OcEvent) => void }>();
  let connected!: () => void;
  const connectedP = new Promise<void>((r) => (connected = r));

  const sub = await client.event.subscribe({ signal: ac.signal, sseMaxRetryAttempts: 1 } as any);
  void (async () => {
    try {
      for await (const raw of sub.stream as AsyncIterable<unknown>) {
        const e = raw as OcEvent;
        if (!e || typeof e !== "object" || typeof e.type !== "string") continue;
        received.set(e, { index: list.push(e) - 1, at: Date.now() });
        if (e.type === "server.connected") connected();
        for (const w of [...waiters]) {
          let ok = false;
          try {
            ok = w.pred(e);
          } catch {
            ok = false;
          }
          if (ok) {
            waiters.delete(w);
            w.resolve(e);
          }
        }
      }
    } catch {
      /* aborted or server gone */
    }
  })();

  const timeout = opts.connectTimeoutMs ?? 10_000;
  await Promise.race([
    connectedP,
    new Promise<never>((_, rej) => setTimeout(() => rej(new Error(`no server.connected event within ${timeout} ms`)), timeout).unref()),
  ]);

  return {
    get events() {
      return list.slice(base);
    },
    waitFor(predicate, timeoutMs = 15_000, wopts = {}) {
      const found = list.slice(Math.max(base, wopts.since ?? 0)).find((e) => {
        try {
          return predicate(e);
        } catch {
          return false;
        }
      });
      if (found) return Promise.resolve(found);
      return new Promise<OcEvent>((resolve, reject) => {
        const w = {
          pred: predicate,
          resolve: (e: OcEvent) => {
            clearTimeout(timer);
            resolve(e);
          },
        };
        const timer = setTimeout(() => {
          waiters.delete(w);
          const tail = list
            .slice(-15)
            .map((e) => `${e.type} ${eventSessionID(e) ?? ""}`)
            .join("\n  ");
          reject(new Error(`no matching event within ${timeoutMs} ms; last events:\n  ${tail}`));
        }, timeoutMs);
        waiters.add(w);
      });
    },
    forSession(sessionID) {
      return list.slice(base).filter((e) => eventSessionID(e) === sessionID);
    },
    clear() {
      base = list.length;
    },
    mark(from) {
      return from === undefined ? list.length : receipt(from).index;
    },
    arrivedAt(e) {
      return receipt(e).at;
    },
    close() {
      ac.abort();
    },
  };
}

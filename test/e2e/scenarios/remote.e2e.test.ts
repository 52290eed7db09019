/**
 * A worktree task on another machine (docs/remote.md), on two real OpenCode servers: A (the parent's,
 * with the option `remotes`) and B (behind a password), each with its own HOME and its own clone of
 * the project, a bare repository as the git remote both share, and a TCP proxy between A and B that
 * the tests cut and heal. One scripted model answers both servers (rules match on each task's cue).
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "vitest";
import {
  DIST_PLUGIN,
  basicAuth,
  events,
  getMessages,
  isToolFollowUp,
  lastUserText,
  startOpencode,
  startScriptedModel,
  describeFailure,
  type EventCollector,
  type OpencodeServer,
  type ScriptedModel,
} from "../harness/index.js";
import { type Env, isWake, newSession, notifications, promptText, storedTask, taskIdIn, toolOutputs, until, wakePrompts } from "./helpers.js";

/** B's password: it must never be written anywhere on A's side (the task store, session metadata, logs). */
const PASSWORD = "pw-B-7Kq2-remote-only";
const SHARED = "export const shared = 1;\n";

const git = (cwd: string, ...args: string[]) => execFileSync("git", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();

/** A TCP proxy from A to B that a test cuts (every connection destroyed, new ones refused) and heals. */
class Cable {
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();
  private cut = false;
  port = 0;
  constructor(public target: number) {
    this.server = net.createServer((inbound) => {
      if (this.cut) return void inbound.destroy();
      const outbound = net.connect(this.target, "127.0.0.1");
      for (const s of [inbound, outbound]) {
        this.sockets.add(s);
        s.on("error", () => {});
        s.on("close", () => {
          this.sockets.delete(s);
          inbound.destroy();
          outbound.destroy();
        });
      }
      inbound.pipe(outbound);
      outbound.pipe(inbound);
    });
  }
  listen(): Promise<number> {
    return new Promise((resolve) => this.server.listen(0, "127.0.0.1", () => resolve((this.port = (this.server.address() as net.AddressInfo).port))));
  }
  /** The connection A→B cut: what is open is destroyed, and new connections are refused until heal(). */
  cutNow(): void {
    this.cut = true;
    for (const s of this.sockets) s.destroy();
  }
  heal(): void {
    this.cut = false;
  }
  close(): Promise<void> {
    this.cutNow();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

let model: ScriptedModel;
let a: OpencodeServer;
let b: OpencodeServer;
let ev: EventCollector;
let cable: Cable;
let bare: string;
/** A as the helpers read it (its server, the shared model, its events). */
const envA = {} as Env;

beforeAll(async () => {
  if (!fs.existsSync(DIST_PLUGIN)) throw new Error(`${DIST_PLUGIN} missing: run npm run build`);
  model = await startScriptedModel();
  bare = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "offshoot-e2e-bare-")));
  git(bare, "init", "-q", "--bare", "-b", "main");
  // both clones are made by the harness from the same files at the same date: the same root commit
  b = await startOpencode({
    plugins: [DIST_PLUGIN],
    model,
    password: PASSWORD,
    files: { "src/shared.ts": SHARED },
    // (a bash command that starts with "echo ASK" waits for a person's permission on B)
    config: { permission: { bash: { "*": "allow", "echo ASK*": "ask" } } },
    beforeStart: (dir) => {
      git(dir, "remote", "add", "origin", bare);
      git(dir, "push", "-q", "origin", "main");
    },
  });
  cable = new Cable(b.port);
  const proxied = `http://127.0.0.1:${await cable.listen()}`;
  const remote = { url: proxied, passwordEnv: "B_PASSWORD", directory: b.directory, allowUnsandboxed: !bwrapWorks() };
  a = await startOpencode({
    plugins: [
      [
        DIST_PLUGIN,
        {
          remotes: {
            b: remote,
            // the same server with a password it refuses, and a directory it does not have
            bwrong: { ...remote, passwordEnv: "B_WRONG_PASSWORD" },
            bnodir: { ...remote, directory: path.join(b.root, "no-such-clone") },
          },
        },
      ],
    ],
    model,
    files: { "src/shared.ts": SHARED },
    env: { B_PASSWORD: PASSWORD, B_WRONG_PASSWORD: "not-the-password" },
    beforeStart: (dir) => {
      git(dir, "remote", "add", "origin", bare);
      git(dir, "fetch", "-q", "origin");
    },
  });
  ev = await events(a.client);
  Object.assign(envA, { model, server: a, ev, later: () => {}, resubscribe: async () => {} });
}, 180_000);

afterAll(async () => {
  ev?.close();
  await cable?.close();
  await a?.stop();
  await b?.stop();
  await model?.close();
  if (bare) fs.rmSync(bare, { recursive: true, force: true });
});

// on a failure: both servers' logs and the model's requests
beforeEach((ctx) => {
  ctx.onTestFailed(() => {
    process.stderr.write(`\n===== ${ctx.task.name}: failed =====\n----- A -----\n${describeFailure({ server: a, model })}\n----- B -----\n${describeFailure({ server: b })}\n`);
  });
});

function bwrapWorks(): boolean {
  try {
    execFileSync("bwrap", ["--ro-bind", "/", "/", "true"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

// ─── reading both sides ───

/** B's call as the harness client cannot make it for a session outside B's project directory. */
async function bGet<T>(route: string): Promise<T> {
  const r = await fetch(`${b.url}${route}`, { headers: { Authorization: basicAuth(PASSWORD) } });
  if (!r.ok) throw new Error(`B ${route}: HTTP ${r.status}`);
  return (await r.json()) as T;
}

/** Every session B holds, in any directory (its project's and its worktrees'). */
async function bSessions(): Promise<{ id: string; title: string; directory: string; parentID?: string }[]> {
  return bGet("/experimental/session?limit=1000").catch(() => bGet("/session"));
}

/** The task's refs on the shared git remote. */
function bareRefs(id: string): string {
  return git(bare, "for-each-ref", "--format=%(refname)", `refs/heads/offshoot/${id}`, `refs/heads/offshoot/${id}-base`);
}

/** B's worktree directory of the task (the offshoot worktrees home under B's HOME). */
function bWorktreesOf(id: string): string[] {
  const home = path.join(b.dataDir, "opencode", "plugins", "offshoot", "worktrees");
  if (!fs.existsSync(home)) return [];
  return fs.readdirSync(home).flatMap((project) => (fs.existsSync(path.join(home, project, id)) ? [path.join(home, project, id)] : []));
}

/** A parent turn on A that makes one tool call (user text `cue`); its output. */
async function toolTurn(parent: string, cue: string, tool: string, args: object): Promise<string> {
  model.script({ name: `${cue}-call`, match: (r) => lastUserText(r) === cue && !isToolFollowUp(r), reply: { toolCalls: [{ name: tool, arguments: args }] } });
  model.script({ name: `${cue}-done`, match: (r) => lastUserText(r) === cue && isToolFollowUp(r), reply: { text: `done ${cue}` } });
  await promptText(a.client, parent, cue);
  return toolOutputs(await getMessages(a.client, parent), tool).at(-1)!;
}

/** The child's script on B: one bash command, then its answer. */
function scriptChild(cue: string, command: string, answer: string): void {
  model.script({ name: `${cue}-bash`, match: (r) => lastUserText(r).includes(cue) && !isToolFollowUp(r), reply: { toolCalls: [{ name: "bash", arguments: { command, description: "edit" } }] } });
  model.script({ name: `${cue}-answer`, match: (r) => lastUserText(r).includes(cue) && isToolFollowUp(r), reply: { text: answer } });
}

/** A new parent on A that launches one task on `remote`; the parent, the launch's output. */
async function launch(cue: string, description: string, prompt: string, remote = "b"): Promise<{ parent: string; output: string }> {
  model.script({ name: `${cue}-wake`, match: (r) => isWake(r) && lastUserText(r).includes(description), reply: { text: `noted ${cue}` } });
  const parent = await newSession(a.client, cue);
  const output = await toolTurn(parent, cue, "background_task", { description, prompt, agent: "general", remote });
  return { parent, output };
}

async function noticesOf(parent: string, id: string) {
  const messages = await getMessages(a.client, parent);
  return { notices: notifications(messages, id), wakes: wakePrompts(messages) };
}

// ─── the cases ───

describe("a worktree task on a remote", () => {
  test("happy path: the child edits on B, exactly one notice here, and the take applies its change here; nothing is left on B or the shared remote", async () => {
    scriptChild("R_HAPPY_CHILD", "printf 'export const fromB = 2;\\n' >> src/shared.ts", "edited on B");
    const { parent, output } = await launch("R_HAPPY", "Edit on B", "R_HAPPY_CHILD");
    const id = taskIdIn(output);
    expect(output).toContain('"b"');
    expect(output).not.toContain(PASSWORD);

    await until("the notice of the run that ended on B", async () => (await noticesOf(parent, id)).notices.length > 0, 60_000);
    await until("the wake answered", async () => (await getMessages(a.client, parent)).some((m) => m.parts.some((p) => p.type === "text" && p.text === "noted R_HAPPY")), 30_000);
    const stored = await storedTask(a, id);
    expect(stored?.status).toBe("completed");
    expect((stored as { remote?: { name: string } }).remote?.name).toBe("b");
    // the branch came back here
    const branch = `offshoot/${id}`;
    const base = (stored as { worktree?: { base: string } }).worktree!.base;
    expect(git(a.directory, "diff", "--name-only", base, branch)).toBe("src/shared.ts");

    const taken = await toolTurn(parent, "R_HAPPY_TAKE", "background_take", { task_id: id });
    expect(taken).toMatch(/took|applied/i);
    expect(fs.readFileSync(path.join(a.directory, "src/shared.ts"), "utf8")).toBe(`${SHARED}export const fromB = 2;\n`);

    // nothing left there: its worktree on B, its refs on the shared remote
    await until("B's worktree and the shared remote's refs removed", () => bWorktreesOf(id).length === 0 && bareRefs(id) === "", 30_000);
    // and still exactly one notice, one wake
    const { notices, wakes } = await noticesOf(parent, id);
    expect(notices).toHaveLength(1);
    expect(wakes.filter((w) => JSON.stringify(w).includes(id))).toHaveLength(1);
  }, 120_000);
});

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
import { REQUEST_KEY } from "../../../src/task-state.js";
import {
  type Env,
  bwrapWorks,
  isWake,
  newSession,
  pathWithoutBwrap,
  readTaskFile,
  notifications,
  promptText,
  storedTask,
  taskIdIn,
  toolOutputs,
  until,
  wakePrompts,
} from "./helpers.js";

/** B's password: it must never be written anywhere on A's side (the task store, session metadata, logs). */
const PASSWORD = "pw-B-7Kq2-remote-only";
const SHARED = "export const shared = 1;\n";
/** A's maxToolCalls (B's is its default, 1000): a child on B that makes more is stopped from here. */
const CAP_CALLS = 4;
/** A's session budget of background work, in tokens: a child on B that reports more in one step pauses. */
const BUDGET = 20_000;

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
/** a third server like B, but with no bubblewrap on its PATH: no OS sandbox there */
let c: OpencodeServer;
let noBwrapBin = "";
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
  noBwrapBin = pathWithoutBwrap();
  c = await startOpencode({
    // (it may run a task unsandboxed when the parent does not ask for a sandbox: remotes.<name>.allowUnsandboxed)
    plugins: [[DIST_PLUGIN, { allowUnsandboxedWorktrees: true }]],
    model,
    password: PASSWORD,
    files: { "src/shared.ts": SHARED },
    env: { PATH: noBwrapBin },
    beforeStart: (dir) => {
      git(dir, "remote", "add", "origin", bare);
      git(dir, "fetch", "-q", "origin");
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
          // this side's caps and budget apply to a remote task too (each test's parent spends far less)
          maxToolCalls: CAP_CALLS,
          sessionBudgetTokens: BUDGET,
          remotes: {
            b: remote,
            // the same server with a password it refuses, and a directory it does not have
            bwrong: { ...remote, passwordEnv: "B_WRONG_PASSWORD" },
            bnodir: { ...remote, directory: path.join(b.root, "no-such-clone") },
            // the same server with a limit of one task at a time
            bone: { ...remote, concurrency: 1 },
            // a server with no OS sandbox: refused unless accepted
            cnosbx: { url: c.url, passwordEnv: "B_PASSWORD", directory: c.directory },
            cweak: { url: c.url, passwordEnv: "B_PASSWORD", directory: c.directory, allowUnsandboxed: true },
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
  // (debugging: OFFSHOOT_E2E_DUMP=<dir> keeps both servers' logs and the model's requests)
  const dump = process.env.OFFSHOOT_E2E_DUMP;
  if (dump && a && b) {
    fs.mkdirSync(dump, { recursive: true });
    fs.writeFileSync(path.join(dump, "a.log"), a.logs());
    fs.writeFileSync(path.join(dump, "b.log"), b.logs());
    fs.writeFileSync(path.join(dump, "model.txt"), describeFailure({ model }));
  }
  ev?.close();
  await cable?.close();
  await a?.stop();
  await b?.stop();
  await c?.stop();
  if (noBwrapBin) fs.rmSync(noBwrapBin, { recursive: true, force: true });
  await model?.close();
  if (bare) fs.rmSync(bare, { recursive: true, force: true });
});

// on a failure: both servers' logs and the model's requests
beforeEach((ctx) => {
  ctx.onTestFailed(() => {
    process.stderr.write(
      `\n===== ${ctx.task.name}: failed =====\n----- A -----\n${describeFailure({ server: a, model })}\n----- B -----\n${describeFailure({ server: b })}\n`,
    );
  });
});

// ─── reading both sides ───

/** B's call as the harness client cannot make it for a session outside B's project directory. */
async function bGet<T>(route: string): Promise<T> {
  const r = await fetch(`${b.url}${route}`, { headers: { Authorization: basicAuth(PASSWORD) } });
  if (!r.ok) throw new Error(`B ${route}: HTTP ${r.status}`);
  return (await r.json()) as T;
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
  model.script({
    name: `${cue}-bash`,
    match: (r) => lastUserText(r).includes(cue) && !isToolFollowUp(r),
    reply: { toolCalls: [{ name: "bash", arguments: { command, description: "edit" } }] },
  });
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

/** Every session B's (or another server's) database holds (any directory, any project: a `global` one too). */
function bSessionRows(server: OpencodeServer = b): string[] {
  const db = path.join(server.dataDir, "opencode", "opencode.db");
  const out = execFileSync("sqlite3", ["-readonly", db, "select id || ' ' || directory || ' ' || title from session order by id"], { encoding: "utf8" });
  return out.split("\n").filter(Boolean);
}

/** Every task ref on the shared git remote. */
function allBareTaskRefs(): string {
  return git(bare, "for-each-ref", "--format=%(refname)", "refs/heads/offshoot/");
}

/** The child's script on B: one bash command, then its answer once the test opens the gate. */
function gatedChild(cue: string, command: string, answer: string): { release: () => void } {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  model.script({
    name: `${cue}-bash`,
    match: (r) => lastUserText(r).includes(cue) && !isToolFollowUp(r),
    reply: { toolCalls: [{ name: "bash", arguments: { command, description: "edit" } }] },
  });
  model.script({
    name: `${cue}-answer`,
    match: (r) => lastUserText(r).includes(cue) && isToolFollowUp(r),
    reply: async () => {
      await gate;
      return { text: answer };
    },
  });
  return { release };
}

/** The gated child's last step was asked for (its label is set only once its reply is chosen). */
function childWaits(cue: string): boolean {
  return model.requests.some((r) => lastUserText(r.body).includes(cue) && isToolFollowUp(r.body));
}

type RemoteStored = {
  status: string;
  error?: string;
  remote?: { name: string; session: string; relay: string; directory: string; run: number };
  worktree?: { base: string; branch: string; containment?: string };
};

async function storedRemote(id: string): Promise<RemoteStored> {
  return (await storedTask(a, id)) as unknown as RemoteStored;
}

/** B's own record of its child (its published state), read from B directly (not through the cable). */
async function bState(id: string): Promise<{ status?: string; worktree?: { pushed?: string } } | undefined> {
  const remote = (await storedRemote(id)).remote!;
  const session = await bGet<{ metadata?: { offshoot?: { status?: string; worktree?: { pushed?: string } } } }>(`/session/${remote.session}`);
  return session.metadata?.offshoot;
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
    await until(
      "the wake answered",
      async () => (await getMessages(a.client, parent)).some((m) => m.parts.some((p) => p.type === "text" && p.text === "noted R_HAPPY")),
      30_000,
    );
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
    await until(
      "B's worktree and branch and the shared remote's refs removed",
      () => bWorktreesOf(id).length === 0 && git(b.directory, "branch", "--list", `offshoot/${id}`) === "" && bareRefs(id) === "",
      30_000,
    );
    // and still exactly one notice, one wake
    const { notices, wakes } = await noticesOf(parent, id);
    expect(notices).toHaveLength(1);
    expect(wakes.filter((w) => JSON.stringify(w).includes(id))).toHaveLength(1);
  }, 120_000);

  test("a password B refuses, and a B directory that does not exist: refused with a plain reason, nothing created on B or the shared remote", async () => {
    const sessionsBefore = bSessionRows();
    const refsBefore = allBareTaskRefs();
    const parent = await newSession(a.client, "R_REFUSED");
    const wrong = await toolTurn(parent, "R_WRONG_PW", "background_task", {
      description: "Wrong password",
      prompt: "R_NEVER",
      agent: "general",
      remote: "bwrong",
    });
    expect(wrong).toMatch(/^Error/);
    expect(wrong).toContain('remote "bwrong" refused the password');
    const nodir = await toolTurn(parent, "R_NO_DIR", "background_task", { description: "No directory", prompt: "R_NEVER", agent: "general", remote: "bnodir" });
    expect(nodir).toMatch(/^Error/);
    expect(nodir).toContain('remote "bnodir" has no git repository at');
    expect(nodir).toContain("nothing was created there");
    const unknown = await toolTurn(parent, "R_UNKNOWN", "background_task", { description: "Unknown", prompt: "R_NEVER", agent: "general", remote: "nowhere" });
    expect(unknown).toContain('there is no remote "nowhere"');
    // nothing made on B (no session in any project, a `global` one included) or on the shared remote, no task here
    expect(bSessionRows()).toEqual(sessionsBefore);
    expect(allBareTaskRefs()).toBe(refsBefore);
    expect(model.requests.some((r) => lastUserText(r.body).includes("R_NEVER"))).toBe(false);
    for (const text of [wrong, nodir]) expect(text).not.toContain(PASSWORD);
  }, 60_000);

  test("B cannot be reached at the launch: refused with the reason, nothing made on the shared remote or here", async () => {
    const refsBefore = allBareTaskRefs();
    const parent = await newSession(a.client, "R_DOWN");
    cable.cutNow();
    let refused: string;
    try {
      refused = await toolTurn(parent, "R_DOWN_TRY", "background_task", { description: "B is down", prompt: "R_NEVER", agent: "general", remote: "b" });
    } finally {
      cable.heal();
    }
    expect(refused).toMatch(/^Error/);
    expect(refused).toContain('remote "b" is unreachable');
    expect(allBareTaskRefs()).toBe(refsBefore);
    // no task of that parent in A's task store
    expect((await readTaskFile(a)).tasks.filter((t) => (t as { parentSessionID?: string }).parentSessionID === parent)).toEqual([]);
    expect(refused).not.toContain(PASSWORD);
  }, 60_000);

  test("a discard leaves nothing on B (its worktree, its sessions) or on the shared remote (its refs)", async () => {
    scriptChild("R_DISCARD_CHILD", "printf 'export const discarded = 3;\\n' >> src/shared.ts", "edited, to be discarded");
    const { parent, output } = await launch("R_DISCARD", "Discard on B", "R_DISCARD_CHILD");
    const id = taskIdIn(output);
    await until("its notice", async () => (await noticesOf(parent, id)).notices.length > 0, 60_000);
    const stored = await storedRemote(id);
    // (B freed its worktree directory once the run was committed: its branch there holds the run)
    expect(git(b.directory, "branch", "--list", `offshoot/${id}`)).not.toBe("");
    expect(bareRefs(id)).not.toBe("");
    expect(bSessionRows().some((row) => row.startsWith(stored.remote!.session))).toBe(true);

    const discarded = await toolTurn(parent, "R_DISCARD_IT", "background_cancel", { task_id: id, discard: true });
    expect(discarded).toContain(`On remote "b"`);
    await until("nothing left on B or the shared remote", () => bWorktreesOf(id).length === 0 && bareRefs(id) === "", 30_000);
    const rows = bSessionRows();
    expect(rows.some((row) => row.startsWith(stored.remote!.session) || row.startsWith(stored.remote!.relay))).toBe(false);
    expect(git(b.directory, "branch", "--list", `offshoot/${id}`)).toBe("");
    expect(git(a.directory, "branch", "--list", `offshoot/${id}`)).toBe("");
    // the change never reached A's checkout
    expect(fs.readFileSync(path.join(a.directory, "src/shared.ts"), "utf8")).not.toContain("discarded");
  }, 120_000);

  test("a hostile branch on the shared remote (a commit with a .git/ path) is refused: the task ends in error and the take refuses it", async () => {
    const child = gatedChild("R_HOSTILE_CHILD", "printf 'export const h = 4;\\n' >> src/shared.ts", "edited");
    const { parent, output } = await launch("R_HOSTILE", "Hostile branch", "R_HOSTILE_CHILD");
    const id = taskIdIn(output);
    await until("the child's edit on B", () => childWaits("R_HOSTILE_CHILD"), 30_000);
    // A cannot read B while B's run ends and pushes; then its branch on the shared remote is replaced
    cable.cutNow();
    try {
      child.release();
      const tip = await until("B's branch pushed", () => git(bare, "for-each-ref", "--format=%(objectname)", `refs/heads/offshoot/${id}`), 30_000);
      const blob = execFileSync("git", ["hash-object", "-w", "--stdin"], {
        cwd: bare,
        input: "[core]\n\tfsmonitor = touch /tmp/pwned\n",
        encoding: "utf8",
      }).trim();
      const inner = execFileSync("git", ["mktree"], { cwd: bare, input: `100644 blob ${blob}\tconfig\n`, encoding: "utf8" }).trim();
      const tree = execFileSync("git", ["mktree"], { cwd: bare, input: `040000 tree ${inner}\t.git\n`, encoding: "utf8" }).trim();
      const env = { ...process.env, GIT_AUTHOR_NAME: "x", GIT_AUTHOR_EMAIL: "x@x", GIT_COMMITTER_NAME: "x", GIT_COMMITTER_EMAIL: "x@x" };
      const hostile = execFileSync("git", ["commit-tree", "-p", tip, "-m", "hostile", tree], { cwd: bare, env, encoding: "utf8" }).trim();
      git(bare, "update-ref", `refs/heads/offshoot/${id}`, hostile);
    } finally {
      cable.heal();
    }
    await until("its notice", async () => (await noticesOf(parent, id)).notices.length > 0, 60_000);
    const stored = await storedRemote(id);
    expect(stored.status).toBe("error");
    expect(stored.error).toContain("was refused");
    expect(stored.error).toContain(".git");
    const notice = JSON.stringify((await noticesOf(parent, id)).notices[0]);
    expect(notice).toContain("refused");
    // nothing of it came into A's repository
    expect(git(a.directory, "branch", "--list", `offshoot/${id}`)).toBe("");
    const taken = await toolTurn(parent, "R_HOSTILE_TAKE", "background_take", { task_id: id });
    expect(taken).toMatch(/^Error/);
    expect(taken).toContain("refused");
    expect(fs.readFileSync(path.join(a.directory, "src/shared.ts"), "utf8")).not.toContain("export const h");
    expect(fs.existsSync("/tmp/pwned")).toBe(false);
  }, 120_000);

  test("a cut mid-run while B finishes: nothing ends here during the cut, exactly one notice after the heal", async () => {
    const child = gatedChild("R_CUT_CHILD", "printf 'export const cut = 5;\\n' >> src/shared.ts", "finished during the cut");
    const { parent, output } = await launch("R_CUT", "Cut mid-run", "R_CUT_CHILD");
    const id = taskIdIn(output);
    await until("the child's edit on B", () => childWaits("R_CUT_CHILD"), 30_000);
    cable.cutNow();
    try {
      // a message to the task during the cut is refused with the reason, nothing kept
      const steer = await toolTurn(parent, "R_CUT_STEER", "background_task", { resume: id, prompt: "also this" });
      expect(steer).toContain('remote "b" cannot be reached now');
      child.release();
      await until(
        "B's run ended and its branch pushed",
        async () => (await bState(id))?.status === "completed" && (await bState(id))?.worktree?.pushed,
        30_000,
      );
      // A still reads the task as running: it cannot know
      expect((await storedRemote(id)).status).toBe("running");
      expect((await noticesOf(parent, id)).notices).toHaveLength(0);
      const listed = await toolTurn(parent, "R_CUT_LIST", "background_list", {});
      expect(listed).toContain('"b" unreachable since');
    } finally {
      cable.heal();
    }
    await until("its notice after the heal", async () => (await noticesOf(parent, id)).notices.length > 0, 60_000);
    await until(
      "the wake answered",
      async () => (await getMessages(a.client, parent)).some((m) => m.parts.some((p) => p.type === "text" && p.text === "noted R_CUT")),
      30_000,
    );
    expect((await storedRemote(id)).status).toBe("completed");
    const taken = await toolTurn(parent, "R_CUT_TAKE", "background_take", { task_id: id });
    expect(taken).not.toMatch(/^Error/);
    expect(fs.readFileSync(path.join(a.directory, "src/shared.ts"), "utf8")).toContain("export const cut = 5;");
    const { notices, wakes } = await noticesOf(parent, id);
    expect(notices).toHaveLength(1);
    expect(wakes).toHaveLength(1);
  }, 150_000);

  test("a permission asked on B is shown here and answered from here as /tasks answers it: the child goes on there", async () => {
    scriptChild("R_PERM_CHILD", "echo ASK_PERM_RAN", "asked, allowed, ran");
    const { parent, output } = await launch("R_PERM", "Permission on B", "R_PERM_CHILD");
    const id = taskIdIn(output);
    const mirror = (await storedRemote(id)) as RemoteStored & { sessionID: string };
    // the mirror child here publishes the permission its child waits on there
    const metadataOf = async () =>
      ((await a.client.session.get({ path: { id: mirror.sessionID } })).data as { metadata?: Record<string, unknown> } | undefined)?.metadata;
    type Asked = { id: string; permission: string };
    const asked = await until<Asked>(
      "the permission shown here",
      async () => ((await metadataOf())?.offshoot as { permission?: Asked } | undefined)?.permission,
      30_000,
    );
    expect(asked.permission).toBe("bash");
    expect((await storedRemote(id)).status).toBe("running");
    // what /tasks writes (src/tui/request.ts): a one-shot request in the task's child session here
    const current = (await metadataOf()) ?? {};
    const request = { kind: "permission", id: `tui_${Date.now().toString(36)}`, requestID: asked.id, reply: "once" };
    const patched = await fetch(`${a.url}/session/${mirror.sessionID}?directory=${encodeURIComponent(a.directory)}`, {
      method: "PATCH",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ metadata: { ...current, offshootRequest: request } }),
    });
    expect(patched.ok).toBe(true);
    await until("its notice", async () => (await noticesOf(parent, id)).notices.length > 0, 60_000);
    expect((await storedRemote(id)).status).toBe("completed");
    const answered = (await metadataOf())?.offshoot as { answered?: { id: string; message: string } };
    expect(answered.answered?.id).toBe(request.id);
    expect(answered.answered?.message).toContain('on remote "b"');
    // the command ran on B once allowed
    const after = model.requests.find((r) => lastUserText(r.body).includes("R_PERM_CHILD") && isToolFollowUp(r.body))!;
    expect(JSON.stringify(after.body.messages)).toContain("ASK_PERM_RAN");
  }, 120_000);

  test("a question asked on B is answered by the parent here (background_output answer): the child reads the answer there", async () => {
    model.script({
      name: "R_QUESTION_CHILD-ask",
      match: (r) => lastUserText(r).includes("R_QUESTION_CHILD") && !isToolFollowUp(r),
      reply: {
        toolCalls: [
          {
            name: "question",
            arguments: {
              questions: [
                {
                  question: "Which database should I use?",
                  header: "Database",
                  options: [
                    { label: "Postgres", description: "a server" },
                    { label: "SQLite", description: "a file" },
                  ],
                },
              ],
            },
          },
        ],
      },
    });
    model.script({
      name: "R_QUESTION_CHILD-answer",
      match: (r) => lastUserText(r).includes("R_QUESTION_CHILD") && isToolFollowUp(r),
      reply: { text: "using it" },
    });
    const { parent, output } = await launch("R_QUESTION", "Question on B", "R_QUESTION_CHILD");
    const id = taskIdIn(output);
    const mirror = (await storedRemote(id)) as RemoteStored & { sessionID: string };
    await until(
      "the question shown here",
      async () => {
        const session = (await a.client.session.get({ path: { id: mirror.sessionID } })).data as
          { metadata?: { offshoot?: { question?: unknown } } } | undefined;
        return session?.metadata?.offshoot?.question;
      },
      30_000,
    );
    const answered = await toolTurn(parent, "R_QUESTION_ANSWER", "background_output", { task_id: id, answer: "Postgres" });
    expect(answered).not.toMatch(/^Error/);
    await until("its notice", async () => (await noticesOf(parent, id)).notices.length > 0, 60_000);
    expect((await storedRemote(id)).status).toBe("completed");
    const after = model.requests.find((r) => lastUserText(r.body).includes("R_QUESTION_CHILD") && isToolFollowUp(r.body))!;
    expect(JSON.stringify(after.body.messages)).toContain('\\"Which database should I use?\\"=\\"Postgres\\"');
  }, 120_000);

  test("a cancel given during a cut is kept, and sent once the connection is back: the task ends cancelled there and here", async () => {
    gatedChild("R_CANCEL_CUT_CHILD", "printf 'export const cc = 11;\\n' >> src/shared.ts", "never answered");
    const { parent, output } = await launch("R_CANCEL_CUT", "Cancel in a cut", "R_CANCEL_CUT_CHILD");
    const id = taskIdIn(output);
    await until("the child's edit on B", () => childWaits("R_CANCEL_CUT_CHILD"), 30_000);
    cable.cutNow();
    try {
      const cancelled = await toolTurn(parent, "R_CANCEL_CUT_DO", "background_cancel", { task_id: id });
      expect(cancelled).toContain('remote "b" cannot be reached now');
      expect(cancelled).toContain("the cancel is kept and sent as soon as it answers again");
      expect((await storedRemote(id)).status).toBe("running");
      expect((await bState(id))?.status).toBe("running");
    } finally {
      cable.heal();
    }
    await until("the task cancelled on B", async () => (await bState(id))?.status === "cancelled", 60_000);
    await until("the task cancelled here", async () => (await storedRemote(id)).status === "cancelled", 60_000);
    expect((await noticesOf(parent, id)).notices.length).toBeLessThanOrEqual(1);
  }, 150_000);

  test("A's server SIGKILLed mid-run: the task is reattached at start-up (not interrupted) and ends with exactly one notice", async () => {
    const child = gatedChild("R_KILL_A_CHILD", "printf 'export const ka = 12;\\n' >> src/shared.ts", "finished while A was down");
    const { parent, output } = await launch("R_KILL_A", "Kill A", "R_KILL_A_CHILD");
    const id = taskIdIn(output);
    await until("the child's edit on B", () => childWaits("R_KILL_A_CHILD"), 30_000);
    ev.close();
    // B finishes while A is down
    await a.restart({ signal: "SIGKILL", afterKill: () => child.release() });
    ev = await events(a.client);
    Object.assign(envA, { server: a, ev });
    await until("its notice", async () => (await noticesOf(parent, id)).notices.length > 0, 60_000);
    await until(
      "the wake answered",
      async () => (await getMessages(a.client, parent)).some((m) => m.parts.some((p) => p.type === "text" && p.text === "noted R_KILL_A")),
      30_000,
    );
    expect((await storedRemote(id)).status).toBe("completed");
    expect(git(a.directory, "show", `offshoot/${id}:src/shared.ts`)).toContain("export const ka = 12;");
    const { notices, wakes } = await noticesOf(parent, id);
    expect(notices).toHaveLength(1);
    expect(wakes).toHaveLength(1);
  }, 150_000);

  test("A's server restarted mid-run: the task is reattached (not interrupted) and ends with exactly one notice", async () => {
    const child = gatedChild("R_RESTART_A_CHILD", "printf 'export const ra = 8;\\n' >> src/shared.ts", "finished while A restarted");
    const { parent, output } = await launch("R_RESTART_A", "Restart A", "R_RESTART_A_CHILD");
    const id = taskIdIn(output);
    await until("the child's edit on B", () => childWaits("R_RESTART_A_CHILD"), 30_000);
    ev.close();
    await a.restart();
    ev = await events(a.client);
    Object.assign(envA, { server: a, ev });
    expect((await storedRemote(id)).status).toBe("running");
    child.release();
    await until("its notice", async () => (await noticesOf(parent, id)).notices.length > 0, 60_000);
    await until(
      "the wake answered",
      async () => (await getMessages(a.client, parent)).some((m) => m.parts.some((p) => p.type === "text" && p.text === "noted R_RESTART_A")),
      30_000,
    );
    const stored = await storedRemote(id);
    expect(stored.status).toBe("completed");
    expect(git(a.directory, "show", `offshoot/${id}:src/shared.ts`)).toContain("export const ra = 8;");
    const { notices, wakes } = await noticesOf(parent, id);
    expect(notices).toHaveLength(1);
    expect(wakes).toHaveLength(1);
  }, 150_000);

  test("B's server SIGKILLed mid-run: the task is interrupted here, then resumed on B and runs to completion", async () => {
    gatedChild("R_KILL_B_CHILD", "printf 'export const kb = 9;\\n' >> src/shared.ts", "never answered");
    const { parent, output } = await launch("R_KILL_B", "Kill B", "R_KILL_B_CHILD");
    const id = taskIdIn(output);
    await until("the child's edit on B", () => childWaits("R_KILL_B_CHILD"), 30_000);
    await b.restart({ signal: "SIGKILL", samePort: true });
    cable.target = b.port;
    await until("the interrupted notice", async () => (await noticesOf(parent, id)).notices.length > 0, 60_000);
    expect((await storedRemote(id)).status).toBe("interrupted");
    // what the run did before the kill came back as its branch
    expect(git(a.directory, "show", `offshoot/${id}:src/shared.ts`)).toContain("export const kb = 9;");

    scriptChild("R_KILL_B_RESUME", "printf 'export const kb2 = 10;\\n' >> src/shared.ts", "finished after the resume");
    const resumed = await toolTurn(parent, "R_KILL_B_DO_RESUME", "background_task", { resume: id, prompt: "R_KILL_B_RESUME" });
    expect(resumed).not.toMatch(/^Error/);
    await until("the resumed run's notice", async () => (await noticesOf(parent, id)).notices.length > 1, 60_000);
    const stored = await storedRemote(id);
    expect(stored.status).toBe("completed");
    expect(stored.remote!.run).toBe(2);
    const shared = git(a.directory, "show", `offshoot/${id}:src/shared.ts`);
    expect(shared).toContain("export const kb = 9;");
    expect(shared).toContain("export const kb2 = 10;");
    expect((await noticesOf(parent, id)).notices).toHaveLength(2);
  }, 180_000);

  test("A's maxToolCalls applies to a child on B: the read that shows it past the cap cancels it there, and it ends here as an error with the cap's reason", async () => {
    let calls = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // a child that makes one more bash call per step (each a new command), and never finishes on its own
    model.script({
      name: "R_CAP_CHILD",
      match: (r) => lastUserText(r).includes("R_CAP_CHILD"),
      reply: async () => {
        if (++calls <= CAP_CALLS + 1) return { toolCalls: [{ name: "bash", arguments: { command: `echo CAP_${calls}`, description: "step" } }] };
        await gate;
        return { text: "never read" };
      },
    });
    try {
      const { parent, output } = await launch("R_CAP", "Cap on B", "R_CAP_CHILD");
      const id = taskIdIn(output);
      await until("its notice", async () => (await noticesOf(parent, id)).notices.length > 0, 60_000);
      const stored = await storedRemote(id);
      expect(stored.status).toBe("error");
      expect(stored.error).toBe(`stopped: more than ${CAP_CALLS} tool calls in one run (maxToolCalls: ${CAP_CALLS})`);
      // cancelled there, not by B's own caps: its child made no step past the one that showed it
      expect((await bState(id))?.status).toBe("cancelled");
      expect(calls).toBeLessThanOrEqual(CAP_CALLS + 2);
      expect(JSON.stringify((await noticesOf(parent, id)).notices[0])).toContain("maxToolCalls");
      expect((await noticesOf(parent, id)).notices).toHaveLength(1);
    } finally {
      release();
    }
  }, 120_000);

  test("A's session budget reached by a child on B: it pauses there and here; a person raises the budget and continues it from /tasks, it goes on in place there to one notice", async () => {
    const CUE = "R_BUDGET_CHILD";
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // its first step reports more than A's whole budget; its next step waits (aborted by the pause)
    model.script({
      name: `${CUE}-edit`,
      match: (r) => lastUserText(r).includes(CUE) && !isToolFollowUp(r),
      reply: {
        toolCalls: [{ name: "bash", arguments: { command: "printf 'export const bu = 13;\\n' >> src/shared.ts", description: "edit" } }],
        usage: { prompt_tokens: BUDGET + 10_000, completion_tokens: 0 },
      },
    });
    model.script({
      name: `${CUE}-held`,
      match: (r) => lastUserText(r).includes(CUE) && isToolFollowUp(r),
      reply: async () => {
        await gate;
        return { text: "never read" };
      },
    });
    model.script({
      name: `${CUE}-continued`,
      match: (r) => lastUserText(r).includes("Continue the task where you stopped") && JSON.stringify(r.messages).includes(CUE),
      reply: { text: "finished after the continue" },
    });
    model.script({ name: `${CUE}-told`, match: (r) => lastUserText(r).startsWith("[background budget reached]"), reply: { text: "budget noted" } });
    try {
      const { parent, output } = await launch("R_BUDGET", "Budget on B", CUE);
      const id = taskIdIn(output);
      await until("paused here", async () => (await storedRemote(id)).status === "paused", 60_000);
      await until("paused on B", async () => (await bState(id))?.status === "paused", 30_000);
      expect((await storedRemote(id)).error).toContain("budget");
      expect((await noticesOf(parent, id)).notices).toHaveLength(0);
      // a launch now is refused, remote or not
      const refused = await toolTurn(parent, "R_BUDGET_MORE", "background_task", { description: "More", prompt: "R_NEVER", agent: "general", remote: "b" });
      expect(refused).toMatch(/^Error/);
      expect(refused).toContain("budget");

      // what /tasks writes in the task's child session here: raise, then Continue
      const mirror = ((await storedRemote(id)) as RemoteStored & { sessionID: string }).sessionID;
      const tui = async (kind: string) => {
        const requestId = `tui_${kind}_${Date.now().toString(36)}`;
        const current = ((await a.client.session.get({ path: { id: mirror } })).data as { metadata?: Record<string, unknown> }).metadata ?? {};
        await a.client.session.update({ path: { id: mirror }, body: { metadata: { ...current, [REQUEST_KEY]: { kind, id: requestId } } } as never });
        return until(`the answer to ${kind}`, async () => {
          const meta = (
            (await a.client.session.get({ path: { id: mirror } })).data as { metadata?: { offshoot?: { answered?: { id: string; error?: string } } } }
          ).metadata;
          const answered = meta?.offshoot?.answered;
          return answered?.id === requestId && answered;
        });
      };
      expect((await tui("raise-budget")).error).toBeUndefined();
      expect((await tui("continue")).error).toBeUndefined();
      await until("its notice", async () => (await noticesOf(parent, id)).notices.length > 0, 60_000);
      const stored = await storedRemote(id);
      expect(stored.status).toBe("completed");
      expect(stored.remote!.run).toBe(1); // (in place: the same run, not a new one)
      expect(git(a.directory, "show", `offshoot/${id}:src/shared.ts`)).toContain("export const bu = 13;");
      const after = model.requests.find(
        (r) => lastUserText(r.body).includes("Continue the task where you stopped") && JSON.stringify(r.body.messages).includes(CUE),
      );
      expect(after).toBeDefined();
      expect((await noticesOf(parent, id)).notices).toHaveLength(1);
    } finally {
      release();
    }
  }, 150_000);

  test("a message into a task running on B is stored there and read by its child at its next step; the run ends with one notice", async () => {
    const child = gatedChild("R_STEER_CHILD", "printf 'export const st = 14;\\n' >> src/shared.ts", "edited, then read the message");
    model.script({
      name: "R_STEER_READ",
      match: (r) => lastUserText(r).includes("R_STEER_MESSAGE"),
      reply: { text: "read the message from the parent" },
    });
    const { parent, output } = await launch("R_STEER", "Steer on B", "R_STEER_CHILD");
    const id = taskIdIn(output);
    await until("the child's edit on B", () => childWaits("R_STEER_CHILD"), 30_000);
    const steered = await toolTurn(parent, "R_STEER_SEND", "background_task", { resume: id, prompt: "R_STEER_MESSAGE: also say hello" });
    expect(steered).not.toMatch(/^Error/);
    expect(steered).toContain(`Message sent to background task ${id}`);
    child.release();
    await until("its notice", async () => (await noticesOf(parent, id)).notices.length > 0, 60_000);
    expect((await storedRemote(id)).status).toBe("completed");
    // the child on B read it (its request carried the message) before it ended
    expect(model.requests.some((r) => lastUserText(r.body).includes("R_STEER_MESSAGE"))).toBe(true);
    expect((await noticesOf(parent, id)).notices).toHaveLength(1);
  }, 120_000);

  test("B's child session deleted there mid-run: the task ends here as an error that says so, with one notice", async () => {
    const child = gatedChild("R_GONE_CHILD", "printf 'export const gone = 15;\\n' >> src/shared.ts", "never answered");
    try {
      const { parent, output } = await launch("R_GONE", "Gone on B", "R_GONE_CHILD");
      const id = taskIdIn(output);
      await until("the child's edit on B", () => childWaits("R_GONE_CHILD"), 30_000);
      const remote = (await storedRemote(id)).remote!;
      const deleted = await fetch(`${b.url}/session/${remote.session}?directory=${encodeURIComponent(remote.directory)}`, {
        method: "DELETE",
        headers: { Authorization: basicAuth(PASSWORD) },
      });
      expect(deleted.ok).toBe(true);
      await until("its notice", async () => (await noticesOf(parent, id)).notices.length > 0, 60_000);
      const stored = await storedRemote(id);
      expect(stored.status).toBe("error");
      expect(stored.error).toContain('its child session on remote "b" no longer exists');
      expect((await noticesOf(parent, id)).notices).toHaveLength(1);
    } finally {
      child.release();
    }
  }, 120_000);

  test("B could not push the branch (the shared remote refused it): the run does not end here until a later push there succeeds, then one notice", async () => {
    const child = gatedChild("R_PUSH_CHILD", "printf 'export const pu = 16;\\n' >> src/shared.ts", "edited, pushed late");
    const hook = path.join(bare, "hooks", "pre-receive");
    const { parent, output } = await launch("R_PUSH", "Push refused", "R_PUSH_CHILD");
    const id = taskIdIn(output);
    await until("the child's edit on B", () => childWaits("R_PUSH_CHILD"), 30_000);
    // the shared remote refuses this task's branch (its base went at the launch)
    fs.writeFileSync(
      hook,
      `#!/bin/sh\nwhile read old new ref; do [ "$ref" = "refs/heads/offshoot/${id}" ] && { echo refused by the test >&2; exit 1; }; done\nexit 0\n`,
      {
        mode: 0o755,
      },
    );
    try {
      child.release();
      await until(
        "B's run ended and its push refused",
        async () => {
          const state = (await bState(id)) as { status?: string; worktree?: { pushError?: string } } | undefined;
          return state?.status === "completed" && state.worktree?.pushError;
        },
        30_000,
      );
      expect((await storedRemote(id)).status).toBe("running");
      expect((await noticesOf(parent, id)).notices).toHaveLength(0);
    } finally {
      fs.rmSync(hook, { force: true });
    }
    // (the next check asks B to push again: the reconcile's tick reads every remote task)
    await until("its notice once the push went through", async () => (await noticesOf(parent, id)).notices.length > 0, 60_000);
    expect((await storedRemote(id)).status).toBe("completed");
    expect(git(a.directory, "show", `offshoot/${id}:src/shared.ts`)).toContain("export const pu = 16;");
    expect((await noticesOf(parent, id)).notices).toHaveLength(1);
  }, 150_000);

  test("a launch past the remote's limit waits here in the queue (nothing made there yet), takes a message into its prompt, and is launched there when the running one ends; one notice each", async () => {
    const first = gatedChild("R_QUEUE_FIRST", "printf 'export const q1 = 17;\\n' >> src/shared.ts", "first done");
    scriptChild("R_QUEUE_SECOND", "printf 'export const q2 = 18;\\n' >> src/shared.ts", "second done");
    const one = await launch("R_QUEUE_1", "Queue first", "R_QUEUE_FIRST", "bone");
    const id1 = taskIdIn(one.output);
    await until("the first child's edit on B", () => childWaits("R_QUEUE_FIRST"), 30_000);
    const two = await launch("R_QUEUE_2", "Queue second", "R_QUEUE_SECOND", "bone");
    const id2 = taskIdIn(two.output);
    expect(two.output).toContain("queued");
    expect(two.output).toContain('remote "bone"');
    expect(two.output).toContain("remotes.bone.concurrency 1");
    let stored = await storedTask(a, id2);
    expect(stored?.status).toBe("queued");
    // nothing of it there yet: no ref on the shared remote, no request of its child
    expect(bareRefs(id2)).toBe("");
    expect(model.requests.some((r) => lastUserText(r.body).includes("R_QUEUE_SECOND"))).toBe(false);
    const listed = await toolTurn(two.parent, "R_QUEUE_LIST", "background_list", {});
    expect(listed).toContain('remote "bone"');
    // a message to it while it waits goes with its prompt
    const steered = await toolTurn(two.parent, "R_QUEUE_STEER", "background_task", { resume: id2, prompt: "R_QUEUE_EXTRA also this" });
    expect(steered).toContain("is queued");

    first.release();
    await until("the first one's notice", async () => (await noticesOf(one.parent, id1)).notices.length > 0, 60_000);
    await until("the second one's notice", async () => (await noticesOf(two.parent, id2)).notices.length > 0, 90_000);
    stored = await storedTask(a, id2);
    expect(stored?.status).toBe("completed");
    expect((stored as RemoteStored).remote?.name).toBe("bone");
    expect(git(a.directory, "show", `offshoot/${id2}:src/shared.ts`)).toContain("export const q2 = 18;");
    // its child there got its prompt with the message
    const firstAsk = model.requests.find((r) => lastUserText(r.body).includes("R_QUEUE_SECOND"))!;
    expect(lastUserText(firstAsk.body)).toContain("R_QUEUE_EXTRA also this");
    expect((await noticesOf(one.parent, id1)).notices).toHaveLength(1);
    expect((await noticesOf(two.parent, id2)).notices).toHaveLength(1);
  }, 180_000);

  test("a remote with no OS sandbox: a launch is refused with the reason, nothing left there or on the shared remote; accepted with allowUnsandboxed, the task runs there and says how it was contained", async () => {
    const sessionsBefore = bSessionRows(c);
    const refsBefore = allBareTaskRefs();
    const parent = await newSession(a.client, "R_NOSBX");
    const refused = await toolTurn(parent, "R_NOSBX_TRY", "background_task", {
      description: "No sandbox",
      prompt: "R_NEVER",
      agent: "general",
      remote: "cnosbx",
    });
    expect(refused).toMatch(/^Error/);
    expect(refused).toContain('remote "cnosbx" refused the launch');
    expect(refused).toMatch(/sandbox|bubblewrap/);
    expect(bSessionRows(c)).toEqual(sessionsBefore);
    expect(allBareTaskRefs()).toBe(refsBefore);
    expect(model.requests.some((r) => lastUserText(r.body).includes("R_NEVER"))).toBe(false);

    scriptChild("R_WEAK_CHILD", "printf 'export const weak = 19;\\n' >> src/shared.ts", "edited without a sandbox");
    const { parent: weakParent, output } = await launch("R_WEAK", "Unsandboxed", "R_WEAK_CHILD", "cweak");
    const id = taskIdIn(output);
    expect(output).toContain("text-level checks only");
    await until("its notice", async () => (await noticesOf(weakParent, id)).notices.length > 0, 60_000);
    const stored = await storedRemote(id);
    expect(stored.status).toBe("completed");
    expect(stored.worktree?.containment).toBe("text");
    expect(git(a.directory, "show", `offshoot/${id}:src/shared.ts`)).toContain("export const weak = 19;");
  }, 120_000);

  test("a fork on the caller's own agent (native here) goes as a text fork, and its reply says so: the child on B starts knowing the parent's conversation", async () => {
    scriptChild("R_FORK_CHILD", "printf 'export const fk = 20;\\n' >> src/shared.ts", "forked and edited");
    const cue = "R_FORK the code word is PLUM-4471";
    model.script({ name: "R_FORK-wake", match: (r) => isWake(r) && lastUserText(r).includes("Fork on B"), reply: { text: "noted R_FORK" } });
    const parent = await newSession(a.client, "R_FORK");
    const output = await toolTurn(parent, cue, "background_task", {
      description: "Fork on B",
      prompt: "R_FORK_CHILD",
      agent: "build",
      fork: true,
      remote: "b",
    });
    expect(output).not.toMatch(/^Error/);
    expect(output).toContain("a native fork cannot share a prompt cache across machines");
    const id = taskIdIn(output);
    await until("its notice", async () => (await noticesOf(parent, id)).notices.length > 0, 60_000);
    expect((await storedRemote(id)).status).toBe("completed");
    // the child's first request there carried the parent's conversation
    const first = model.requests.find((r) => lastUserText(r.body).includes("R_FORK_CHILD") && !isToolFollowUp(r.body))!;
    expect(JSON.stringify(first.body.messages)).toContain("PLUM-4471");
  }, 120_000);

  test("a task cancelled while it waits for a slot of its remote ends here and is never launched there; nothing of it on the shared remote", async () => {
    const first = gatedChild("R_QCANCEL_FIRST", "printf 'export const qc = 21;\\n' >> src/shared.ts", "first done");
    const one = await launch("R_QCANCEL_1", "Holds the slot", "R_QCANCEL_FIRST", "bone");
    const id1 = taskIdIn(one.output);
    await until("the first child's edit on B", () => childWaits("R_QCANCEL_FIRST"), 30_000);
    const two = await launch("R_QCANCEL_2", "Waits, then cancelled", "R_QCANCEL_NEVER", "bone");
    const id2 = taskIdIn(two.output);
    expect((await storedTask(a, id2))?.status).toBe("queued");
    const cancelled = await toolTurn(two.parent, "R_QCANCEL_DO", "background_cancel", { task_id: id2 });
    expect(cancelled).not.toMatch(/^Error/);
    expect((await storedTask(a, id2))?.status).toBe("cancelled");
    first.release();
    await until("the first one's notice", async () => (await noticesOf(one.parent, id1)).notices.length > 0, 60_000);
    // the slot is free (the cancelled one did not take it): a new launch runs there at once
    scriptChild("R_QCANCEL_THIRD", "printf 'export const qc3 = 22;\\n' >> src/shared.ts", "third done");
    const three = await launch("R_QCANCEL_3", "Takes the free slot", "R_QCANCEL_THIRD", "bone");
    expect(three.output).not.toContain("queued");
    await until("the third one's notice", async () => (await noticesOf(three.parent, taskIdIn(three.output))).notices.length > 0, 60_000);
    expect(model.requests.some((r) => lastUserText(r.body).includes("R_QCANCEL_NEVER"))).toBe(false);
    expect(bareRefs(id2)).toBe("");
    expect((await storedTask(a, id2))?.status).toBe("cancelled");
  }, 150_000);

  test("B's password is nowhere on A: not in its task store, its sessions' metadata, its logs or any file under its HOME", async () => {
    const token = Buffer.from(`opencode:${PASSWORD}`).toString("base64");
    const found: string[] = [];
    // (A's server runs on: a file listed may be gone when read, as its lock files are; what is gone holds nothing)
    const gone = <T>(read: () => T): T | undefined => {
      try {
        return read();
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
        throw error;
      }
    };
    const walk = (dir: string) => {
      for (const entry of gone(() => fs.readdirSync(dir, { withFileTypes: true })) ?? []) {
        const p = path.join(dir, entry.name);
        if (entry.isSymbolicLink()) continue;
        if (entry.isDirectory()) walk(p);
        else if (entry.isFile()) {
          const bytes = gone(() => fs.readFileSync(p));
          if (bytes && (bytes.includes(PASSWORD) || bytes.includes(token))) found.push(path.relative(a.root, p));
        }
      }
    };
    walk(a.root);
    expect(found).toEqual([]);
    expect(a.logs()).not.toContain(PASSWORD);
    expect(a.logs()).not.toContain(token);
    // (the files looked at include the task store and OpenCode's database, where session metadata lives)
    const store = path.join(a.dataDir, "opencode", "plugins", "offshoot");
    expect(fs.existsSync(store)).toBe(true);
    expect(fs.existsSync(path.join(a.dataDir, "opencode", "opencode.db"))).toBe(true);
  }, 60_000);
});

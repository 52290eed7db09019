/**
 * Shared glue for the offshoot end-to-end scenarios: one real OpenCode server per file with the
 * built plugin (dist/index.js), a scripted model, and small readers for what the plugin leaves in
 * the server (notifications, wake prompts, tool outputs, the task file).
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { OpencodeClient } from "@opencode-ai/sdk";
import {
  DIST_PLUGIN,
  events,
  getMessages,
  isToolFollowUp,
  lastUserText,
  printServerLogOnFailure,
  startOpencode,
  startScriptedModel,
  textOf,
  toolParts,
  waitIdle,
  type ChatRequest,
  type EventCollector,
  type MessageWithParts,
  type OpencodeServer,
  type PluginSpec,
  type RecordedRequest,
  type ScriptedModel,
  type ScriptedModelOptions,
  type StartOptions,
} from "../harness/index.js";
import { readStoredTasks } from "../../stored-tasks.js";

export const TASK_ID_RE = /bg_[0-9a-z]{8}/;
export const TASK_ID_RE_G = /bg_[0-9a-z]{8}/g;
export const WAKE_PREFIX = "Background tasks you started have ended:";
export const NOTIFICATION_PREFIX = "[background task ";
export const PREAMBLE_START = "You are working with forked context from a parent agent session.";
export const MOCK_MODEL = { providerID: "mock", modelID: "mock-model" } as const;

// ─── one server per file ───

export interface Env {
  model: ScriptedModel;
  server: OpencodeServer;
  ev: EventCollector;
  /** Re-subscribe the event collector (after server.restart()). */
  resubscribe(): Promise<void>;
  /** A check run by `registerLateChecks()` at the end of the file (late duplicate deliveries). */
  later(name: string, check: () => Promise<void>): void;
}

/**
 * Call at the top level of a test file: starts the scripted model and ONE OpenCode server with the
 * built plugin in beforeAll, stops both in afterAll, prints the server log when a test fails.
 */
export function useOpencode(
  opts: Omit<StartOptions, "plugins" | "model"> & {
    pluginOptions?: Record<string, unknown>;
    modelOptions?: ScriptedModelOptions;
    /** other plugins' entry files listed before and after ours (the coexistence suite) */
    around?: () => Promise<{ before?: string[]; after?: string[] }>;
  } = {},
): Env {
  const lateChecks: { name: string; check: () => Promise<void> }[] = [];
  const env = {
    later(name: string, check: () => Promise<void>) {
      lateChecks.push({ name, check });
    },
    async resubscribe() {
      env.ev?.close();
      env.ev = await events(env.server.client);
    },
    lateChecks,
  } as unknown as Env & { lateChecks: typeof lateChecks };
  printServerLogOnFailure(() => ({ server: env.server, model: env.model }));
  beforeAll(async () => {
    if (!fs.existsSync(DIST_PLUGIN)) throw new Error(`${DIST_PLUGIN} missing: run npm run build`);
    const { pluginOptions, modelOptions, around, ...start } = opts;
    const others = (await around?.()) ?? {};
    env.model = await startScriptedModel(modelOptions);
    const ours: PluginSpec = pluginOptions ? [DIST_PLUGIN, pluginOptions] : DIST_PLUGIN;
    env.server = await startOpencode({ plugins: [...(others.before ?? []), ours, ...(others.after ?? [])], model: env.model, ...start });
    env.ev = await events(env.server.client);
  });
  afterAll(async () => {
    env.ev?.close();
    await env.server?.stop();
    await env.model?.close();
  });
  return env;
}

/**
 * Adds a last test to the file that runs the checks registered with `env.later()`: by then the
 * other tests' time has passed, so a notification delivered twice late would show up.
 */
export function registerLateChecks(env: Env) {
  test("nothing is delivered twice later, and the model got no unscripted request", async () => {
    // Every chat request of the file was expected by some rule: an unmatched one (answered by the
    // harness default "ok") would be a turn nobody asked for (e.g. a reply to a noReply message).
    const unexpected = env.model.chatRequests().filter((r) => r.label === "default:ok");
    expect(unexpected.map((r) => lastUserText(r.body).slice(0, 200))).toEqual([]);
    const checks = (env as Env & { lateChecks: { name: string; check: () => Promise<void> }[] }).lateChecks;
    for (const { name, check } of checks) {
      try {
        await check();
      } catch (error) {
        throw new Error(`late check "${name}": ${(error as Error).message}`);
      }
    }
  });
}

/**
 * Registers a late check (`env.later`) that the parent session still has exactly this many
 * notifications and wake prompts.
 */
export function checkDeliveriesLater(env: Env, name: string, parentID: string, counts: { notifications: number; wakes: number }) {
  env.later(name, async () => {
    const msgs = await getMessages(env.server.client, parentID);
    expect(notifications(msgs)).toHaveLength(counts.notifications);
    expect(wakePrompts(msgs)).toHaveLength(counts.wakes);
  });
}

// ─── sessions and prompts ───

export async function newSession(client: OpencodeClient, title: string): Promise<string> {
  const r = await client.session.create({ body: { title } });
  if (r.error || !r.data) throw new Error(`session.create failed: ${JSON.stringify(r.error)}`);
  return r.data.id;
}

/** `session.prompt` (runs the whole turn); throws on HTTP error. */
export async function promptText(client: OpencodeClient, sessionID: string, text: string) {
  const r = await client.session.prompt({ path: { id: sessionID }, body: { parts: [{ type: "text", text }] } });
  if (r.error || !r.data) throw new Error(`session.prompt(${sessionID}) failed: ${JSON.stringify(r.error)}`);
  return r.data;
}

export async function children(client: OpencodeClient, sessionID: string) {
  const r = await client.session.children({ path: { id: sessionID } });
  if (r.error || !r.data) throw new Error(`session.children(${sessionID}) failed: ${JSON.stringify(r.error)}`);
  return r.data;
}

// ─── reading what the plugin left ───

export function userMessages(messages: MessageWithParts[]) {
  return messages.filter((m) => m.info.role === "user");
}

/** The parent's notification messages (noReply user messages `[background task <id> ...`). */
export function notifications(messages: MessageWithParts[], taskID?: string) {
  const prefix = taskID ? `${NOTIFICATION_PREFIX}${taskID} ` : NOTIFICATION_PREFIX;
  return userMessages(messages).filter((m) => textOf(m).startsWith(prefix));
}

/** The parent's wake prompts. */
export function wakePrompts(messages: MessageWithParts[]) {
  return userMessages(messages).filter((m) => textOf(m).startsWith(WAKE_PREFIX));
}

/** Completed outputs of a tool's parts, in order. */
export function toolOutputs(messages: MessageWithParts[], tool: string): string[] {
  return toolParts(messages, tool).map((p) => {
    if (p.state?.status !== "completed") throw new Error(`${tool} part ${p.id} is ${p.state?.status}: ${JSON.stringify(p.state).slice(0, 500)}`);
    return p.state.output as string;
  });
}

export function lastAssistant(messages: MessageWithParts[]) {
  return messages.filter((m) => m.info.role === "assistant").at(-1);
}

/** The first task id in a text (throws when there is none). */
export function taskIdIn(text: string): string {
  const m = TASK_ID_RE.exec(text);
  if (!m) throw new Error(`no task id in: ${text.slice(0, 300)}`);
  return m[0];
}

/** Every message text of a request (user, assistant, tool), joined. */
export function userTextsJoined(req: ChatRequest): string {
  return req.messages
    .filter((m) => m.role === "user")
    .map((m) => (typeof m.content === "string" ? m.content : (m.content ?? []).map((p) => p.text ?? "").join("\n")))
    .join("\n");
}

export function isWake(req: ChatRequest): boolean {
  return lastUserText(req).startsWith(WAKE_PREFIX);
}

// ─── scripted parent turns ───

/** The arguments of a `background_task` call. */
export interface TaskArgs {
  description: string;
  prompt: string;
  agent?: string;
  fork?: boolean;
  resume?: string;
  /** "provider/model" (or "provider/model#variant") */
  model?: string;
}

/**
 * Scripts a parent turn that only launches a task: the user text `cue` is answered with one
 * `background_task` call (rule `<name>-launch`), the call's result with the text `launched`
 * (rule `<name>-launched`).
 */
export function scriptLaunch(model: ScriptedModel, launch: { name: string; cue: string; task: TaskArgs; launched: string }) {
  const { name, cue, task, launched } = launch;
  model.script({
    name: `${name}-launch`,
    match: (r) => lastUserText(r) === cue && !isToolFollowUp(r),
    reply: { toolCalls: [{ name: "background_task", arguments: task }] },
  });
  model.script({ name: `${name}-launched`, match: (r) => lastUserText(r) === cue && isToolFollowUp(r), reply: { text: launched } });
}

// ─── the task file ───

export interface StoredTask {
  id: string;
  sessionID: string;
  parentSessionID: string;
  status: string;
  run: number;
  notifiedRun: number;
  isForked: boolean;
  error?: string;
  [key: string]: unknown;
}

/** The version 2 task file's path (`…/offshoot/<projectID>.json`); the store lives in the directory beside it, without `.json`. */
export async function taskFilePath(server: OpencodeServer): Promise<string> {
  const project = await server.client.project.current();
  if (project.error || !project.data) throw new Error(`project.current failed: ${JSON.stringify(project.error)}`);
  return path.join(server.dataDir, "opencode", "plugins", "offshoot", `${project.data.id}.json`);
}

/** Every task the project's store holds (open.json and the history's newest lines; see test/stored-tasks.ts). */
export async function readTaskFile(server: OpencodeServer): Promise<{ tasks: StoredTask[] }> {
  return { tasks: readStoredTasks<StoredTask>(await taskFilePath(server)).tasks };
}

export async function storedTask(server: OpencodeServer, id: string): Promise<StoredTask | undefined> {
  return (await readTaskFile(server)).tasks.find((t) => t.id === id);
}

// ─── waiting ───

/**
 * Polls `check` (every 50 ms) until it returns a truthy value; for server state that no event
 * announces exactly (a file written, a count reached). Throws with `what` after `timeoutMs`.
 */
export async function until<T>(
  what: string,
  check: () => Promise<T | undefined | false | null> | T | undefined | false | null,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v as T;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ""}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The request the named rule answered (already received or future). */
export function requestOf(model: ScriptedModel, label: string, timeoutMs = 20_000): Promise<RecordedRequest> {
  return model.waitForRequest((r) => r.label === label, timeoutMs);
}

/**
 * Waits for the request answered by the rule `label` (the last step of a parent's turn), then for
 * the session's idle after it: the turn is over.
 */
export async function turnEndsAfter(env: Pick<Env, "model" | "ev" | "server">, sessionID: string, label: string, timeoutMs = 20_000): Promise<RecordedRequest> {
  const req = await requestOf(env.model, label, timeoutMs);
  // The request may have come, and its turn ended, long before this call (its caller waited for
  // something else first, and the turn was quick): then the server says the session is idle, and no
  // idle event is still to come. Marked before asking, so an idle after a "busy" answer is not missed.
  const since = env.ev.mark();
  const status = (await env.server.client.session.status()).data as Record<string, { type?: string }> | undefined;
  if ((status?.[sessionID]?.type ?? "idle") === "idle") return req; // (an idle session is not listed)
  await waitIdle(env.ev, sessionID, { since, timeoutMs });
  return req;
}

// ─── whole turns ───

/**
 * Scripts and runs a parent turn that launches `tasks` at once (and a reply to its wake-up);
 * returns the parent id, the launch outputs and the task ids.
 */
export async function launchAll(env: Env, cue: string, tasks: TaskArgs[]) {
  env.model.script({
    name: `${cue}-launch`,
    match: (r) => lastUserText(r) === cue && !isToolFollowUp(r),
    reply: { toolCalls: tasks.map((t) => ({ name: "background_task", arguments: t })) },
  });
  env.model.script({ name: `${cue}-launched`, match: (r) => lastUserText(r) === cue && isToolFollowUp(r), reply: { text: `launched ${cue}` } });
  env.model.script({
    name: `${cue}-wake`,
    match: (r) => isWake(r) && tasks.some((t) => lastUserText(r).includes(t.description)),
    reply: { text: `noted ${cue}` },
  });
  const parent = await newSession(env.server.client, cue);
  await promptText(env.server.client, parent, cue);
  const outputs = toolOutputs(await getMessages(env.server.client, parent), "background_task");
  return { parent, outputs, ids: outputs.map(taskIdIn) };
}

/**
 * Waits until the parent's wake-up turn after `launchAll(env, cue, …)` was answered (`noted <cue>`)
 * and the parent is idle: a prompt sent before that can land in the wake turn and be answered by it
 * (OpenCode answers the newest user message of a busy session), so its own script never runs.
 */
export async function untilWakeServed(env: Env, parent: string, cue: string, timeoutMs = 30_000): Promise<void> {
  await until(
    `the wake after ${cue} answered and the parent idle`,
    async () => {
      const answered = (await getMessages(env.server.client, parent)).some(
        (m) => m.info.role === "assistant" && m.parts.some((p) => p.type === "text" && p.text === `noted ${cue}`),
      );
      const busy = ((await env.server.client.session.status()).data as Record<string, unknown> | undefined)?.[parent];
      return (answered && !busy) || undefined;
    },
    timeoutMs,
  );
}

/** Waits until the parent holds at least one notice of each task. */
export async function untilNoticed(env: Env, parent: string, ids: readonly string[], timeoutMs = 60_000): Promise<void> {
  await until(
    "every task's notice",
    async () => {
      const m = await getMessages(env.server.client, parent);
      return ids.every((id) => notifications(m, id).length >= 1) || undefined;
    },
    timeoutMs,
  );
}

/** The parent runs background_list in a new turn (user text `cue`); returns its output. */
export async function promptList(env: Env, parent: string, cue: string): Promise<string> {
  env.model.script({
    name: `${cue}-list`,
    match: (r) => lastUserText(r) === cue && !isToolFollowUp(r),
    reply: { toolCalls: [{ name: "background_list", arguments: {} }] },
  });
  env.model.script({ name: `${cue}-listed`, match: (r) => lastUserText(r) === cue && isToolFollowUp(r), reply: { text: "listed" } });
  await promptText(env.server.client, parent, cue);
  return toolOutputs(await getMessages(env.server.client, parent), "background_list").at(-1)!;
}

/** A PATH with every command of this machine but bwrap (a machine where no sandbox can run). */
export function pathWithoutBwrap(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "offshoot-nobwrap-"));
  for (const from of (process.env.PATH ?? "").split(path.delimiter)) {
    for (const name of fs.existsSync(from) ? fs.readdirSync(from) : []) {
      if (name === "bwrap" || fs.existsSync(path.join(dir, name))) continue;
      fs.symlinkSync(path.join(from, name), path.join(dir, name));
    }
  }
  return dir;
}

/** Whether bubblewrap runs on this machine. */
export function bwrapWorks(): boolean {
  try {
    execFileSync("bwrap", ["--ro-bind", "/", "/", "true"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/**
 * opencode-offshoot demo: a forked background task, end to end, on the REAL OpenCode server.
 *
 *   npm run demo            (= npm run build && tsx scripts/demo.ts)
 *
 * What happens:
 *   1. A scripted OpenAI-compatible model and a real `opencode serve` (isolated temp HOME, offline)
 *      start, with the built plugin (dist/index.js) loaded.
 *   2. A short parent conversation: the (scripted) parent model reads a file of the temp project,
 *      runs a bash command and answers.
 *   3. The parent model calls background_task({ fork: true, agent: "general", ... }). The plugin
 *      creates a child session, gives it a processed copy of the parent's conversation, and sends
 *      the prompt; the (scripted) child answers.
 *   4. The plugin notifies the parent and wakes it; the parent model calls background_list.
 *   5. The script prints, from the real server: the child session, the preamble, the start of the
 *      inherited context, the fork stats (from the plugin's task file), the notification the
 *      parent received, and the background_list output. Then everything is shut down.
 *
 * Only the language model is scripted: sessions, tools, events and the plugin are real.
 * Exit code 0 on success; 1 (with the tail of the server log) on failure.
 */
import fs from "node:fs";
import path from "node:path";
import type { BackgroundTask } from "../src/task-record.js";
import { formatReceipt } from "../src/format.js";
import { getMessages, textOf, type MessageWithParts } from "../test/e2e/harness/messages.js";
import { DIST_PLUGIN, events, type EventCollector, type OcEvent, type OpencodeServer, startOpencode } from "../test/e2e/harness/opencode.js";
import {
  type ChatRequest,
  type RecordedRequest,
  type ScriptedModel,
  allText,
  isToolFollowUp,
  lastUserText,
  startScriptedModel,
  toolResult,
} from "../test/e2e/harness/scripted-model.js";
import { readStoredTasks } from "../test/stored-tasks.js";

const started = Date.now();
const WATCHDOG_MS = 90_000;
const WAIT_MS = 30_000;
const CONTEXT_LINES = 25;
const LOG_TAIL_CHARS = 6_000;

// ─── The temp project ─────────────────────────────────────────────────────────────────────────

const RATE_LIMITER = `// A token-bucket rate limiter.
export interface RateLimiterOptions {
  /** tokens added per second */
  rate: number;
  /** bucket size */
  burst: number;
  now?: () => number;
}

export class RateLimiter {
  private tokens: number;
  private last: number;
  private readonly now: () => number;

  constructor(private readonly options: RateLimiterOptions) {
    this.now = options.now ?? Date.now;
    this.tokens = options.burst;
    this.last = this.now();
  }

  /** Takes one token if there is one. */
  tryTake(): boolean {
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  private refill(): void {
    const now = this.now();
    // TODO: clock going backwards makes elapsed negative
    const elapsed = (now - this.last) / 1000;
    this.tokens = Math.min(this.options.burst, this.tokens + elapsed * this.options.rate);
    this.last = now;
  }

  // TODO: tryTake(n) for batches
}
`;

/** Design notes the parent reads too: a conversation of some size, as real ones are (~24 KB). */
const DESIGN_NOTES = [
  "# Rate limiter design notes",
  "",
  ...Array.from(
    { length: 240 },
    (_, i) =>
      `- note ${String(i + 1).padStart(3, "0")}: bucket refill ${i % 9} tokens per tick; burst ${10 + (i % 5)}; clock source ${i % 2 ? "monotonic" : "wall"}; reviewed ${2020 + (i % 6)}.`,
  ),
  "",
].join("\n");

const FILES = {
  "docs/design-notes.md": DESIGN_NOTES,
  "src/rate-limiter.ts": RATE_LIMITER,
  "src/index.ts": 'export { RateLimiter } from "./rate-limiter.js";\n',
  "README.md": "# limiter\n\nA tiny token-bucket rate limiter.\n",
};

// ─── The script: what each (scripted) model turn does ───────────────────────────────────────

const ASK = "What does src/rate-limiter.ts do, and what is left to do in src/?";
const BASH_COMMAND = "grep -rn TODO src";
const ANSWER =
  "src/rate-limiter.ts is a token-bucket rate limiter (rate tokens/s, bucket of size burst). Two TODOs remain: a negative elapsed time when the clock goes backwards, and a batch tryTake(n).";
const DELEGATE = "Please have the clock-skew TODO looked into in the background while we keep going.";
const TASK = {
  description: "Plan fix for clock skew TODO",
  agent: "general",
  prompt: "Propose a fix and the unit tests for the clock-going-backwards TODO in RateLimiter.refill(). Answer with a short plan.",
  fork: true,
};
const NATIVE_TASK = {
  description: "Draft tryTake(n) for batches",
  prompt: "Implement the batch TODO: tryTake(n) takes n tokens at once or none. Answer with the code.",
  fork: true,
};
const LAUNCHED_ANSWER = "I started two forked background tasks (the clock-skew TODO and tryTake(n)); I'll report when they end.";
const WAKE_PREFIX = "Background tasks you started have ended:";
const WAKE_ANSWER = "The background task finished: clamp elapsed at 0 and add a test with a clock that goes backwards.";

function scriptModel(model: ScriptedModel, server: OpencodeServer) {
  const file = path.join(server.directory, "src/rate-limiter.ts");
  const ask = (r: ChatRequest) => lastUserText(r) === ASK;
  // Rules are tried newest first; each matches one step of one turn.
  model.script({
    name: "parent: read",
    match: (r) => ask(r) && !isToolFollowUp(r),
    reply: {
      text: "Let me look at the file and the design notes.",
      toolCalls: [
        { name: "read", arguments: { filePath: file } },
        { name: "read", arguments: { filePath: path.join(server.directory, "docs/design-notes.md") } },
      ],
    },
  });
  model.script({
    name: "parent: bash",
    match: (r) =>
      ask(r) &&
      isToolFollowUp(r) &&
      toolResult(r, "read", { sinceLastUser: true }) !== undefined &&
      toolResult(r, "bash", { sinceLastUser: true }) === undefined,
    reply: { toolCalls: [{ name: "bash", arguments: { command: BASH_COMMAND, description: "List the TODOs in src" } }] },
  });
  model.script({ name: "parent: answer", match: (r) => ask(r) && toolResult(r, "bash", { sinceLastUser: true }) !== undefined, reply: { text: ANSWER } });

  const delegate = (r: ChatRequest) => lastUserText(r) === DELEGATE;
  model.script({
    name: "parent: background_task",
    match: (r) => delegate(r) && !isToolFollowUp(r),
    reply: {
      toolCalls: [
        { name: "background_task", arguments: NATIVE_TASK },
        { name: "background_task", arguments: TASK },
      ],
    },
  });
  model.script({ name: "parent: launched", match: (r) => delegate(r) && isToolFollowUp(r), reply: { text: LAUNCHED_ANSWER } });

  // The child: its conversation starts with the preamble and the inherited context, then the prompt.
  model.script({
    name: "child: answer",
    match: (r) => lastUserText(r) === TASK.prompt,
    reply: (r) => {
      const all = allText(r);
      const inherited = all.includes("<inherited_context>") && all.includes("clock going backwards makes elapsed negative");
      return {
        text: [
          inherited
            ? "From the inherited context: the parent read src/rate-limiter.ts and grep found the TODO in refill()."
            : "I did not get the parent's context.",
          "Plan: clamp `elapsed` with Math.max(0, ...) and keep `last` unchanged when the clock goes backwards.",
          "Tests: (1) a fake clock that steps back 5 s never yields negative tokens; (2) tokens still refill after the clock recovers.",
        ].join("\n"),
      };
    },
  });

  // The native child: its conversation is the parent's, then one message with the directive and the prompt.
  model.script({
    name: "native child: answer",
    match: (r) => lastUserText(r).includes(NATIVE_TASK.prompt),
    reply: (r) => ({
      text: [
        allText(r).includes("clock going backwards makes elapsed negative")
          ? "I have the parent's whole conversation (it read src/rate-limiter.ts)."
          : "I did not get the parent's context.",
        "tryTake(n = 1) { this.refill(); if (this.tokens < n) return false; this.tokens -= n; return true; }",
      ].join("\n"),
    }),
  });

  const woken = (r: ChatRequest) => lastUserText(r).includes(WAKE_PREFIX);
  model.script({
    name: "parent: background_list",
    match: (r) => woken(r) && !isToolFollowUp(r),
    reply: { toolCalls: [{ name: "background_list", arguments: {} }] },
  });
  model.script({ name: "parent: after list", match: (r) => woken(r) && isToolFollowUp(r), reply: { text: WAKE_ANSWER } });
}

// ─── Output helpers ─────────────────────────────────────────────────────────────────────────

const WIDTH = 88;
function section(title: string) {
  console.log(`\n${`══ ${title} `.padEnd(WIDTH, "═")}`);
}
function indent(text: string, prefix = "  "): string {
  return text
    .split("\n")
    .map((line) => prefix + line)
    .join("\n");
}
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const num = (n: number) => n.toLocaleString("en-US");

function describeTool(part: Record<string, any>): string {
  const input = part.state?.input ?? {};
  const arg =
    part.tool === "read"
      ? input.filePath
      : part.tool === "bash"
        ? input.command
        : part.tool === "background_task"
          ? `"${input.description}", fork: ${input.fork}`
          : "";
  return `${part.tool}(${arg ?? ""}) → ${part.state?.status}`;
}

/** One line per message: who said what, and the tool calls. Long texts are cut. */
function transcript(messages: MessageWithParts[], directory: string): string {
  const lines: string[] = [];
  for (const m of messages) {
    const text = textOf(m).trim();
    const tools = m.parts.filter((p) => p.type === "tool");
    const first = text.split("\n")[0] ?? "";
    const shown = first.length > 110 ? `${first.slice(0, 107)}...` : first;
    const more = text.includes("\n") ? ` (+${text.split("\n").length - 1} lines)` : "";
    if (text) lines.push(`${m.info.role.padEnd(9)} ${shown}${more}`);
    for (const t of tools) lines.push(`${m.info.role.padEnd(9)} [tool] ${describeTool(t)}`.split(directory).join("<project>"));
  }
  return lines.join("\n");
}

function forkSummary(fork: NonNullable<BackgroundTask["fork"]>): string {
  const rows: [string, string][] =
    fork.kind === "native"
      ? [
          ["kind", "native (the child's requests start with the parent's request)"],
          ["messages", `${fork.messages} OpenCode messages inherited as they were sent`],
          ["estimate", `~${num(fork.estimatedTokens)} tokens`],
          ["cache root", fork.rootSessionID],
        ]
      : [
          ["kind", "context copy (the fork pipeline's text block)"],
          ["messages", `${fork.keptMessages} of ${fork.totalMessages} kept`],
          ["context size", `${num(fork.chars)} chars`],
          ["compaction", fork.fromCompaction ? "starts from the latest compaction summary" : "none detected"],
        ];
  return rows.map(([k, v]) => `${k.padEnd(15)} ${v}`).join("\n");
}

/** "X of Y tokens read from the parent's cache" for a request, from the scripted model's record. */
function cacheLine(r: RecordedRequest): string {
  const { cachedTokens, promptTokens } = r.cache;
  return `${num(cachedTokens)} of ${num(promptTokens)} tokens read from the parent's cache (${promptTokens ? Math.round((100 * cachedTokens) / promptTokens) : 0}%)`;
}

/** System, tools and messages of the parent's request compared with the child's (OpenAI bodies). */
function prefixReport(parentReq: RecordedRequest, childReq: RecordedRequest): string {
  const p = JSON.parse(parentReq.raw) as { messages: unknown[]; tools?: unknown[] };
  const c = JSON.parse(childReq.raw) as { messages: unknown[]; tools?: unknown[] };
  const sys = (b: { messages: unknown[] }) => JSON.stringify(b.messages.filter((m) => (m as { role: string }).role === "system"));
  const rest = (b: { messages: unknown[] }) => b.messages.filter((m) => (m as { role: string }).role !== "system").map((m) => JSON.stringify(m));
  const pm = rest(p);
  const cm = rest(c);
  let shared = 0;
  while (shared < pm.length && pm[shared] === cm[shared]) shared++;
  return [
    `system prompt   ${sys(p) === sys(c) ? "identical" : "DIFFERENT"} (${num(sys(p).length)} chars)`,
    `tools           ${JSON.stringify(p.tools) === JSON.stringify(c.tools) ? "identical" : "DIFFERENT"} (${(p.tools ?? []).length} tools, same order)`,
    shared === pm.length
      ? `messages        the parent's ${pm.length} messages are the first ${shared} of the child's ${cm.length}, byte for byte`
      : `messages        ${shared} of the parent's ${pm.length} messages start the child's ${cm.length}: its conversation is new`,
  ].join("\n");
}

function logTail(server: OpencodeServer | undefined, model: ScriptedModel | undefined): string {
  const out: string[] = [];
  if (server) {
    const log = server.logs();
    out.push(`----- opencode server log (last ${Math.min(log.length, LOG_TAIL_CHARS)} of ${log.length} chars) -----`);
    out.push(log.slice(-LOG_TAIL_CHARS));
  }
  if (model) {
    out.push(`----- scripted model: ${model.requests.length} request(s) -----`);
    for (const r of model.requests)
      out.push(`#${r.index} ${r.kind} -> ${r.label}${r.aborted ? " (aborted)" : ""}; last user: ${lastUserText(r.body).slice(0, 100).replace(/\n/g, "\\n")}`);
  }
  return out.join("\n");
}

// ─── The run ────────────────────────────────────────────────────────────────────────────────

function isPart(e: OcEvent, sessionID: string, pred: (part: Record<string, any>) => boolean): boolean {
  return e.type === "message.part.updated" && e.properties.part?.sessionID === sessionID && pred(e.properties.part);
}

async function run(model: ScriptedModel, server: OpencodeServer, ev: EventCollector) {
  const { client } = server;
  const timings: [string, number][] = [["server ready", Date.now() - started]];
  scriptModel(model, server);

  // 1. The parent conversation.
  const parent = await client.session.create({ body: { title: "offshoot demo" } });
  if (parent.error || !parent.data) throw new Error(`session.create failed: ${JSON.stringify(parent.error)}`);
  const parentID = parent.data.id;
  const first = await client.session.prompt({ path: { id: parentID }, body: { parts: [{ type: "text", text: ASK }] } });
  if (first.error) throw new Error(`first prompt failed: ${JSON.stringify(first.error)}`);

  // 2. The parent forks a background task; the prompt returns when the parent's turn ends.
  const since = ev.mark();
  const second = await client.session.prompt({ path: { id: parentID }, body: { parts: [{ type: "text", text: DELEGATE }] } });
  if (second.error) throw new Error(`second prompt failed: ${JSON.stringify(second.error)}`);
  timings.push(["parent forked the tasks", Date.now() - started]);

  // 3. Child ends → notification (noReply) → wake prompt → the parent calls background_list.
  const listDone = await ev.waitFor(
    (e) => isPart(e, parentID, (p) => p.type === "tool" && p.tool === "background_list" && p.state?.status === "completed"),
    WAIT_MS,
    { since },
  );
  const afterList = ev.events.indexOf(listDone) + 1;
  await ev.waitFor((e) => e.type === "session.idle" && e.properties.sessionID === parentID, WAIT_MS, { since: afterList });
  timings.push(["parent woken, answered", Date.now() - started]);

  // ─── Read everything back from the real server ───
  const parentMessages = await getMessages(client, parentID);
  const launch = parentMessages.flatMap((m) => m.parts).find((p) => p.type === "tool" && p.tool === "background_task" && p.state?.input?.agent === TASK.agent);
  if (launch?.state?.status !== "completed") throw new Error(`background_task did not complete: ${JSON.stringify(launch?.state)}`);
  const taskId = /bg_[0-9a-z]{8}/.exec(String(launch.state.output))?.[0];
  if (!taskId) throw new Error(`no task id in the background_task output:\n${launch.state.output}`);

  const launches = parentMessages.flatMap((m) => m.parts).filter((p) => p.type === "tool" && p.tool === "background_task");
  const nativeLaunch = launches.find((p) => p.state?.input?.agent === undefined);
  const nativeTaskId = /bg_[0-9a-z]{8}/.exec(String(nativeLaunch?.state?.output ?? ""))?.[0];
  if (!nativeTaskId) throw new Error(`no native launch among the background_task calls`);

  const children = await client.session.children({ path: { id: parentID } });
  if (children.error || !children.data) throw new Error(`session.children failed: ${JSON.stringify(children.error)}`);
  if (children.data.length !== 2) throw new Error(`expected 2 child sessions, got ${children.data.length}`);
  const child = children.data.find((c) => c.id === launch.state.metadata?.sessionId)!;
  const nativeChild = children.data.find((c) => c.id === nativeLaunch!.state.metadata?.sessionId)!;
  if (!child || !nativeChild) throw new Error("could not tell the two children apart");
  const childMessages = await getMessages(client, child.id);
  const injected = childMessages[0] ? textOf(childMessages[0]) : "";
  const at = injected.indexOf("<inherited_context>");
  if (at < 0) throw new Error(`the child's first message has no <inherited_context> block:\n${injected.slice(0, 500)}`);
  const preamble = injected.slice(0, at).trim();
  const contextLines = injected.slice(at).split("\n");
  const nativeMessages = await getMessages(client, nativeChild.id);
  const nativeFirstAssistant = nativeMessages.find((m) => m.info.role === "assistant");

  // What the model received: the parent's request that made the calls, each child's first request.
  const parentReq = model.requests.find((r) => r.label === "parent: background_task")!;
  const nativeReq = model.requests.find((r) => r.label === "native child: answer")!;
  const textReq = model.requests.find((r) => r.label === "child: answer")!;
  if (!parentReq || !nativeReq || !textReq) throw new Error("the scripted model did not record the parent's and the children's requests");

  const project = await client.project.current();
  if (project.error || !project.data) throw new Error(`project.current failed: ${JSON.stringify(project.error)}`);
  const taskFile = path.join(server.dataDir, "opencode/plugins/offshoot", `${project.data.id}.json`);
  const store = readStoredTasks<BackgroundTask>(taskFile);
  const task: BackgroundTask | undefined = store.tasks.find((t) => t.id === taskId);
  if (!task?.fork) throw new Error(`task ${taskId} has no fork summary in ${taskFile}`);
  const nativeTask: BackgroundTask | undefined = store.tasks.find((t) => t.id === nativeTaskId);
  if (nativeTask?.fork?.kind !== "native") throw new Error(`task ${nativeTaskId} is not a native fork: ${JSON.stringify(nativeTask?.fork)}`);

  const userTexts = parentMessages.filter((m) => m.info.role === "user").map((m) => textOf(m));
  const notification = userTexts.find((t) => t.startsWith(`[background task ${taskId}`));
  if (!notification) throw new Error(`the parent received no notification for ${taskId}`);
  const nativeNotification = userTexts.find((t) => t.startsWith(`[background task ${nativeTaskId}`));
  if (!nativeNotification) throw new Error(`the parent received no notification for ${nativeTaskId}`);
  const wake = userTexts.find((t) => t.startsWith(WAKE_PREFIX));
  if (!wake) throw new Error("the parent received no wake prompt");
  const list = parentMessages.flatMap((m) => m.parts).find((p) => p.type === "tool" && p.tool === "background_list");
  if (list?.state?.status !== "completed") throw new Error(`background_list did not complete: ${JSON.stringify(list?.state)}`);

  // ─── Print ───
  const dir = server.directory;
  // Real texts below show the temp project directory as <project>.
  const shortPaths = (text: string) => text.split(dir).join("<project>");
  console.log(`opencode-offshoot demo · real OpenCode ${server.url} · scripted model ${model.url}`);
  console.log(`project: ${dir} (shown below as <project>)`);

  section("1. Parent conversation (parent session " + parentID + ")");
  console.log(indent(transcript(parentMessages, dir)));

  section("2. Child sessions (client.session.children)");
  for (const [c, id, t] of [
    [nativeChild, nativeTaskId, nativeTask],
    [child, taskId, task],
  ] as const) {
    console.log(indent(`id:       ${c.id}\ntitle:    ${c.title}\nparentID: ${c.parentID}\ntask id:  ${id} (status ${t.status}, agent ${t.agent})`));
    console.log();
  }

  section("3. Native fork: the child's first request vs the parent's request that called background_task");
  console.log(indent(shortPaths(String(nativeLaunch!.state.output)).split("\n").slice(0, 2).join("\n")));
  console.log(indent(prefixReport(parentReq, nativeReq)));
  console.log(indent("then            one new user message: the directive and the task"));
  console.log(indent(`\nparent's request:       ${num(parentReq.cache.promptTokens)} prompt tokens`));
  console.log(indent(`child's first request:  ${cacheLine(nativeReq)}`));
  const recorded = nativeFirstAssistant?.info.tokens?.cache?.read;
  console.log(indent(`OpenCode recorded on the child's first assistant message: cache.read = ${num(Number(recorded ?? 0))} tokens`));
  console.log(indent(`the task's fork receipt (list, notice, background_output, TUI):\n  ${formatReceipt(true, nativeTask.receipt, true)}`));

  section("4. Text fork: the child's first request, and its preamble and inherited context");
  console.log(indent(shortPaths(String(launch.state.output)).split("\n").slice(0, 2).join("\n")));
  console.log(indent(prefixReport(parentReq, textReq)));
  console.log(indent(`child's first request:  ${cacheLine(textReq)}`));
  console.log(indent("(only what precedes its first message can come from the cache: here the system prompt and the tools,"));
  console.log(indent(" which agent general shares with build in this project; the copied conversation is new input)"));
  console.log(indent(`the task's fork receipt:\n  ${formatReceipt(true, task.receipt, true)}\n`));
  console.log(indent(shortPaths(preamble)));
  console.log(indent(`\n(first ${CONTEXT_LINES} of ${contextLines.length} lines of the inherited context)`));
  console.log(indent(shortPaths(contextLines.slice(0, CONTEXT_LINES).join("\n"))));
  if (contextLines.length > CONTEXT_LINES) console.log(indent(`… (${contextLines.length - CONTEXT_LINES} more lines)`));

  section("5. Fork summaries (the tasks' records in the plugin's task store)");
  console.log(indent(`store: ${store.dir.replace(server.root, "$HOME")}/`));
  console.log(indent(`${nativeTaskId}:`));
  console.log(indent(forkSummary(nativeTask.fork), "    "));
  console.log(indent(`${taskId}:`));
  console.log(indent(forkSummary(task.fork), "    "));

  section("6. Notifications the parent received (noReply messages), then the wake prompt");
  console.log(indent(shortPaths(nativeNotification)));
  console.log(indent("---"));
  console.log(indent(shortPaths(notification)));
  console.log(indent("---"));
  console.log(indent(wake));

  section("7. background_list output (the woken parent's tool call)");
  console.log(indent(String(list.state.output)));

  section("Timings");
  console.log(indent(timings.map(([what, ms]) => `${what.padEnd(24)} ${seconds(ms)}`).join("\n")));
}

async function main() {
  let model: ScriptedModel | undefined;
  let server: OpencodeServer | undefined;
  let ev: EventCollector | undefined;
  let failed = false;
  let watchdog: NodeJS.Timeout | undefined;
  const onSignal = () => {
    console.error("\ninterrupted; shutting down");
    watchdog && clearTimeout(watchdog);
    void Promise.allSettled([server?.stop(), model?.close()]).then(() => process.exit(130));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    if (!fs.existsSync(DIST_PLUGIN)) throw new Error(`${DIST_PLUGIN} not found: run \`npm run build\` first (npm run demo does).`);
    console.log("starting the scripted model and OpenCode with the built plugin ...");
    model = await startScriptedModel({ promptTokens: "estimate", prefixCache: true });
    server = await startOpencode({ plugins: [DIST_PLUGIN], model, files: FILES });
    ev = await events(server.client);
    // Fail fast when a session errors or OpenCode starts retrying the model (it retries for minutes).
    const trouble = ev
      .waitFor(
        (e) => (e.type === "session.error" && Boolean(e.properties.sessionID)) || (e.type === "session.status" && e.properties.status?.type === "retry"),
        WATCHDOG_MS + 1_000,
      )
      .then(
        (e) =>
          Promise.reject(
            new Error(
              `OpenCode reported ${e.type} for session ${e.properties.sessionID}: ${JSON.stringify(e.properties.error ?? e.properties.status).slice(0, 500)}`,
            ),
          ),
        () => new Promise<never>(() => {}),
      );
    await Promise.race([
      trouble,
      run(model, server, ev),
      new Promise<never>((_, reject) => {
        watchdog = setTimeout(() => reject(new Error(`the demo did not finish within ${WATCHDOG_MS / 1000} s`)), WATCHDOG_MS);
      }),
    ]);
  } catch (error) {
    failed = true;
    console.error(`\nDEMO FAILED: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    console.error(logTail(server, model));
  } finally {
    if (watchdog) clearTimeout(watchdog);
    ev?.close();
    await server?.stop().catch((e) => console.error(`stopping OpenCode failed: ${e}`));
    await model?.close().catch(() => {});
  }
  if (!failed) console.log(`\nDone in ${seconds(Date.now() - started)}; OpenCode stopped and its temp dirs removed.`);
  process.exit(failed ? 1 : 0);
}

void main();

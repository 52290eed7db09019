/**
 * Record real OpenCode responses for unit-test fixtures.
 *
 *   npx tsx scripts/record-fixtures.ts
 *
 * Drives `opencode serve` (probe plugin only) with the scripted model and writes, under
 * test/fixtures/recorded/:
 *   session.messages.tools.json      parent session: text, read of a >10 KB file, bash with >10 KB
 *                                    output ending in an `Error` line, a failing tool call
 *                                    (state.error), a repeated identical read
 *   session.messages.compacted.json  the same turns, then session.summarize, then more turns
 *   events.child-lifecycle.json      /event stream: child session created with parentID, noReply
 *                                    prompt, promptAsync, busy -> idle; a second child aborted while slow
 *   session.status.busy.json         GET /session/status while a child is busy (and after it is idle)
 *
 * and the shapes the plugin's unit-test client double uses, each as the same `{data, status}` /
 * `{error, status}` envelope as the samples the double was first written against:
 *   session.create.child.json        session.create with parentID and title
 *   session.prompt.noReply.json      session.prompt with noReply: true (the stored user message)
 *   session.messages.aborted.json    messages of a child whose slow run was aborted: the user message
 *                                    and an assistant message with error MessageAbortedError
 *   session.prompt.badAgent.json     synchronous session.prompt with an unknown agent (HTTP 500)
 *   session.messages.full.json       a parent session with a few turns: a plain text reply, a read
 *                                    tool call, a probe_tool call, each followed by a reply
 *   app.agents.json                  app.agents()
 *
 * The temp HOME is replaced by /home/dev (so the project is /home/dev/project). Ids and
 * timestamps differ on every run.
 */
import fs from "node:fs";
import path from "node:path";
import {
  PROBE_PLUGIN,
  REPO_ROOT,
  events,
  isToolFollowUp,
  lastUserText,
  startOpencode,
  startScriptedModel,
  type ChatRequest,
  type OpencodeServer,
  type Reply,
} from "../test/e2e/harness/index.js";

const OUT_DIR = path.join(REPO_ROOT, "test/fixtures/recorded");
const HOME_PLACEHOLDER = "/home/dev";

// A file whose read output is just over 10 KB: 180 numbered lines of ~50 chars.
const BIG_FILE = Array.from({ length: 180 }, (_, i) => `line ${String(i + 1).padStart(3, "0")}: the quick brown fox jumps over the lazy dog`).join("\n") + "\n";
// >10 KB of output whose last line is an Error line; exits 1 (bash reports it as completed with exit 1).
const BUILD_COMMAND = 'for i in $(seq 1 300); do echo "compiling module $i of 300 ... ok"; done; echo "Error: build failed: 1 error in module 300"; exit 1';

/** One scripted turn: a user text, the tool calls to make, and the final answer. */
interface Turn {
  user: string;
  toolCalls?: Reply["toolCalls"];
  answer: string;
}

function toolTurns(directory: string): Turn[] {
  const big = path.join(directory, "src/big.txt");
  return [
    { user: "Hello! What can you do?", answer: "I can read files, run commands and use the probe tool." },
    { user: "Read src/big.txt", toolCalls: [{ name: "read", arguments: { filePath: big } }], answer: "src/big.txt has 180 lines about a fox." },
    {
      user: "Run the build",
      toolCalls: [{ name: "bash", arguments: { command: BUILD_COMMAND, description: "Run the build" } }],
      answer: "The build failed in module 300.",
    },
    {
      user: "Try the probe in failure mode",
      toolCalls: [{ name: "probe_tool", arguments: { msg: "boom", fail: true } }],
      answer: "The probe tool failed as requested.",
    },
    { user: "Read src/big.txt again", toolCalls: [{ name: "read", arguments: { filePath: big } }], answer: "Same 240 lines as before." },
  ];
}

function scriptTurns(model: Awaited<ReturnType<typeof startScriptedModel>>, turns: Turn[]) {
  for (const t of turns) {
    const mine = (r: ChatRequest) => lastUserText(r) === t.user;
    if (t.toolCalls) {
      model.script({ name: `${t.user} / tools`, match: (r) => mine(r) && !isToolFollowUp(r), reply: { toolCalls: t.toolCalls } });
      model.script({ name: `${t.user} / answer`, match: (r) => mine(r) && isToolFollowUp(r), reply: { text: t.answer } });
    } else {
      model.script({ name: t.user, match: mine, reply: { text: t.answer } });
    }
  }
}

async function runTurns(server: OpencodeServer, sessionID: string, turns: Turn[]) {
  for (const t of turns) {
    const r = await server.client.session.prompt({ path: { id: sessionID }, body: { parts: [{ type: "text", text: t.user }] } });
    if (r.error) throw new Error(`prompt "${t.user}" failed: ${JSON.stringify(r.error)}`);
  }
}

function write(server: OpencodeServer, name: string, value: unknown) {
  const json = JSON.stringify(value, null, 2).split(server.root).join(HOME_PLACEHOLDER) + "\n";
  fs.writeFileSync(path.join(OUT_DIR, name), json);
  console.log(`wrote ${path.relative(REPO_ROOT, path.join(OUT_DIR, name))} (${json.length} bytes)`);
}

async function main() {
  fs.mkdirSync(OUT_DIR, { recursive: true });
  const model = await startScriptedModel();
  // snapshot: true is OpenCode's default (the harness turns it off for speed): with it, messages carry
  // what users' servers send (step parts' `snapshot`, user messages' `summary.diffs`).
  const server = await startOpencode({
    plugins: [PROBE_PLUGIN],
    model,
    config: { snapshot: true },
    files: { "src/big.txt": BIG_FILE, "README.md": "# demo project\n" },
  });
  try {
    const { client } = server;
    const turns = toolTurns(server.directory);
    scriptTurns(model, turns);

    // 1. session.messages.tools.json
    const tools = await client.session.create({ body: {} });
    if (tools.error) throw new Error(JSON.stringify(tools.error));
    await runTurns(server, tools.data!.id, turns);
    const toolsMessages = await client.session.messages({ path: { id: tools.data!.id } });
    write(server, "session.messages.tools.json", { data: toolsMessages.data, status: toolsMessages.response.status });

    // 2. session.messages.compacted.json
    const after: Turn[] = [
      { user: "What next after the summary?", answer: "Fix module 300 and rerun the build." },
      { user: "Probe once more", toolCalls: [{ name: "probe_tool", arguments: { msg: "after compaction" } }], answer: "The probe answered after compaction." },
    ];
    scriptTurns(model, after);
    const compacted = await client.session.create({ body: {} });
    if (compacted.error) throw new Error(JSON.stringify(compacted.error));
    await runTurns(server, compacted.data!.id, turns);
    const sum = await client.session.summarize({ path: { id: compacted.data!.id }, body: { providerID: "mock", modelID: "mock-model" } });
    if (sum.error) throw new Error(`summarize failed: ${JSON.stringify(sum.error)}`);
    await runTurns(server, compacted.data!.id, after);
    const compactedMessages = await client.session.messages({ path: { id: compacted.data!.id } });
    write(server, "session.messages.compacted.json", { data: compactedMessages.data, status: compactedMessages.response.status });

    // 3. events.child-lifecycle.json and 4. session.status.busy.json
    const parent = await client.session.create({ body: { title: "parent session" } });
    if (parent.error) throw new Error(JSON.stringify(parent.error));
    const parentID = parent.data!.id;
    await runTurns(server, parentID, [turns[0]!]);

    model.script({
      name: "child / tools",
      match: (r) => lastUserText(r) === "Do the child task" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "probe_tool", arguments: { msg: "from child" } }] },
    });
    model.script({
      name: "child / answer",
      match: (r) => lastUserText(r) === "Do the child task" && isToolFollowUp(r),
      reply: { text: "Child task done." },
    });
    model.script({
      name: "slow child",
      match: (r) => lastUserText(r) === "Do the slow task",
      reply: { text: "working slowly on the task step by step until someone stops me", chunkDelayMs: 150 },
    });

    const ev = await events(client);
    const marks: { step: string; index: number; [k: string]: unknown }[] = [];
    const mark = (step: string, extra: Record<string, unknown> = {}) => marks.push({ step, index: ev.mark(), ...extra });

    mark("session.create child (parentID, title)");
    const child = await client.session.create({ body: { parentID, title: "child task" } });
    if (child.error) throw new Error(JSON.stringify(child.error));
    const childID = child.data!.id;
    write(server, "session.create.child.json", { data: child.data, status: child.response.status });
    await ev.waitFor((e) => e.type === "session.created" && e.properties.sessionID === childID);
    mark("session.prompt noReply", { sessionID: childID });
    const nr = await client.session.prompt({
      path: { id: childID },
      body: { noReply: true, parts: [{ type: "text", text: "Context from the parent: the build failed in module 300." }] },
    });
    if (nr.error) throw new Error(JSON.stringify(nr.error));
    write(server, "session.prompt.noReply.json", { data: nr.data, status: nr.response.status });
    const nrID = nr.data!.info.id;
    await ev.waitFor((e) => e.type === "message.part.updated" && e.properties.part?.messageID === nrID);
    mark("session.promptAsync", { sessionID: childID });
    const pa = await client.session.promptAsync({ path: { id: childID }, body: { parts: [{ type: "text", text: "Do the child task" }] } });
    if (pa.error) throw new Error(JSON.stringify(pa.error));
    await ev.waitFor((e) => e.type === "session.idle" && e.properties.sessionID === childID, 30_000);
    mark("child idle", { sessionID: childID });

    mark("session.create slow child (parentID, title)");
    const slow = await client.session.create({ body: { parentID, title: "slow child task" } });
    if (slow.error) throw new Error(JSON.stringify(slow.error));
    const slowID = slow.data!.id;
    await ev.waitFor((e) => e.type === "session.created" && e.properties.sessionID === slowID);
    mark("session.promptAsync", { sessionID: slowID });
    const since = ev.mark();
    await client.session.promptAsync({ path: { id: slowID }, body: { parts: [{ type: "text", text: "Do the slow task" }] } });
    await ev.waitFor((e) => e.type === "message.part.delta" && e.properties.sessionID === slowID, 15_000, { since });
    await new Promise((r) => setTimeout(r, 300));
    const busy = await client.session.status();
    mark("session.abort", { sessionID: slowID });
    const aborted = await client.session.abort({ path: { id: slowID } });
    if (aborted.error) throw new Error(JSON.stringify(aborted.error));
    await ev.waitFor((e) => e.type === "session.idle" && e.properties.sessionID === slowID, 15_000, { since });
    // The aborted assistant message is stored with its error before (or right after) the idle.
    await ev.waitFor(
      (e) =>
        e.type === "message.updated" &&
        e.properties.info?.sessionID === slowID &&
        e.properties.info?.role === "assistant" &&
        e.properties.info?.error?.name === "MessageAbortedError",
      15_000,
      { since },
    );
    const abortedMessages = await client.session.messages({ path: { id: slowID } });
    if (abortedMessages.error) throw new Error(JSON.stringify(abortedMessages.error));
    const abortedRoles = (abortedMessages.data ?? []).map((m) => `${m.info.role}${m.info.role === "assistant" && m.info.error ? `:${m.info.error.name}` : ""}`);
    if (abortedRoles.join(",") !== "user,assistant:MessageAbortedError") throw new Error(`aborted session has unexpected messages: ${abortedRoles.join(", ")}`);
    write(server, "session.messages.aborted.json", { data: abortedMessages.data, status: abortedMessages.response.status });
    // Let trailing events (message.updated of the aborted message) arrive.
    await new Promise((r) => setTimeout(r, 500));
    mark("end");
    const idle = await client.session.status();
    ev.close();

    write(server, "events.child-lifecycle.json", {
      note: "All /event events (runtime envelope {id,type,properties}) from creating the first child to the end. marks[].index = position in events where a step's HTTP call was made (the recorder waited for the previous step's own events first; trailing events of a step may still follow the next mark).",
      parentID,
      children: { completed: childID, aborted: slowID },
      marks,
      events: ev.events.slice(marks[0]!.index),
    });
    write(server, "session.status.busy.json", {
      note: "GET /session/status: while the slow child streams (busy), and after it was aborted (idle sessions are absent).",
      busySessionID: slowID,
      busy: { data: busy.data, status: busy.response.status },
      afterIdle: { data: idle.data, status: idle.response.status },
    });

    // 5. session.prompt.badAgent.json: a synchronous prompt naming an agent that does not exist.
    const badSession = await client.session.create({ body: { title: "bad agent" } });
    if (badSession.error) throw new Error(JSON.stringify(badSession.error));
    const bad = await client.session.prompt({ path: { id: badSession.data!.id }, body: { agent: "no-such-agent", parts: [{ type: "text", text: "Hello?" }] } });
    if (!bad.error || bad.response.status < 400)
      throw new Error(`a prompt with an unknown agent did not fail: HTTP ${bad.response.status} ${JSON.stringify(bad.data).slice(0, 200)}`);
    write(server, "session.prompt.badAgent.json", { error: bad.error, status: bad.response.status });

    // 6. session.messages.full.json: text reply, read, probe_tool, a reply after each.
    const fullTurns: Turn[] = [
      { user: "Hi there", answer: "Hello! How can I help?" },
      {
        user: "Read the README",
        toolCalls: [{ name: "read", arguments: { filePath: path.join(server.directory, "README.md") } }],
        answer: "The README is a one-line title: demo project.",
      },
      { user: "Call the probe", toolCalls: [{ name: "probe_tool", arguments: { msg: "hello probe" } }], answer: "The probe answered." },
    ];
    scriptTurns(model, fullTurns);
    const full = await client.session.create({ body: { title: "full parent" } });
    if (full.error) throw new Error(JSON.stringify(full.error));
    await runTurns(server, full.data!.id, fullTurns);
    const fullMessages = await client.session.messages({ path: { id: full.data!.id } });
    if (fullMessages.error) throw new Error(JSON.stringify(fullMessages.error));
    write(server, "session.messages.full.json", { data: fullMessages.data, status: fullMessages.response.status });

    // 7. app.agents.json
    const agents = await client.app.agents();
    if (agents.error) throw new Error(JSON.stringify(agents.error));
    write(server, "app.agents.json", { data: agents.data, status: agents.response.status });
  } catch (err) {
    console.error(server.logs().slice(-20_000));
    throw err;
  } finally {
    await server.stop();
    await model.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

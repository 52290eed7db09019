/**
 * Proves the e2e harness against the real OpenCode server: plugin loading, plugin and
 * built-in tools, tool results reaching the model, compaction, restart persistence.
 * One server for the whole file (beforeAll); tests run in order and share it.
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  PROBE_PLUGIN,
  events,
  getMessages,
  hasToolResult,
  isToolFollowUp,
  lastUserText,
  printServerLogOnFailure,
  startOpencode,
  startScriptedModel,
  toolParts,
  toolResult,
  waitIdle,
  type EventCollector,
  type OpencodeServer,
  type ScriptedModel,
} from "./harness/index.js";
import { turnEndsAfter } from "./scenarios/helpers.js";

let model: ScriptedModel;
let server: OpencodeServer;
let ev: EventCollector;
let sessionID = "";

printServerLogOnFailure(() => ({ server, model }));

beforeAll(async () => {
  model = await startScriptedModel();
  server = await startOpencode({
    plugins: [PROBE_PLUGIN],
    model,
    files: { "notes/hello.txt": "hello from the project\nsecond line\n" },
  });
  ev = await events(server.client);
});

afterAll(async () => {
  ev?.close();
  await server?.stop();
  await model?.close();
});

describe("opencode e2e harness", () => {
  test("server starts in an isolated temp project and loads the probe plugin", async () => {
    const project = await server.client.project.current();
    expect(project.error).toBeUndefined();
    expect(project.data?.worktree).toBe(server.directory);
    expect(project.data?.id).toMatch(/^[0-9a-f]{40}$/);

    expect(server.pluginErrors()).toEqual([]);
    const ids = await server.client.tool.ids();
    expect(ids.data).toEqual(expect.arrayContaining(["probe_tool", "read", "bash"]));

    const probeLog = fs.readFileSync(path.join(server.directory, ".opencode/probe-events.jsonl"), "utf8");
    expect(probeLog).toContain(`"kind":"init"`);
    // OpenCode's data lives under the isolated XDG_DATA_HOME.
    expect(fs.existsSync(path.join(server.dataDir, "opencode/opencode.db"))).toBe(true);
  });

  test("scripted tool calls run probe_tool, read and bash; results reach the model", async () => {
    const file = path.join(server.directory, "notes/hello.txt");
    const turn = (r: Parameters<typeof lastUserText>[0]) => lastUserText(r) === "use the tools";
    model.script({
      name: "call-tools",
      match: (r) => turn(r) && !isToolFollowUp(r),
      reply: {
        text: "Calling tools.",
        toolCalls: [
          { name: "probe_tool", arguments: { msg: "ping" } },
          { name: "read", arguments: { filePath: file } },
          { name: "bash", arguments: { command: "echo hi", description: "Say hi" } },
        ],
      },
    });
    model.script({
      name: "after-tools",
      match: (r) => turn(r) && hasToolResult(r, "probe_tool", { sinceLastUser: true }),
      reply: { text: "All tools done." },
    });

    const created = await server.client.session.create({ body: { title: "smoke" } });
    expect(created.error).toBeUndefined();
    sessionID = created.data!.id;
    const since = ev.mark();
    const reply = await server.client.session.prompt({
      path: { id: sessionID },
      body: { parts: [{ type: "text", text: "use the tools" }] },
    });
    expect(reply.error).toBeUndefined();
    expect(reply.data?.info.role).toBe("assistant");
    await waitIdle(ev, sessionID, { since });

    const messages = await getMessages(server.client, sessionID);
    const tools = toolParts(messages);
    expect(tools.map((p) => p.tool)).toEqual(["probe_tool", "read", "bash"]);
    for (const p of tools) expect(p.state.status).toBe("completed");
    const [probe, read, bash] = tools;
    expect(probe!.state.output).toBe(`probe says: ping (session ${sessionID})`);
    expect(read!.state.output).toContain("1: hello from the project");
    expect(bash!.state.output).toBe("hi\n");

    // The second chat request carries the three results as OpenAI `role: "tool"` messages.
    const chat = model.chatRequests().filter((r) => r.label === "call-tools" || r.label === "after-tools");
    expect(chat.map((r) => r.label)).toEqual(["call-tools", "after-tools"]);
    const [first, second] = chat;
    const [probeId, readId, bashId] = first!.toolCallIds;
    expect(probe!.callID).toBe(probeId);
    expect(toolResult(second!.body, probeId!)?.content).toBe(probe!.state.output);
    expect(toolResult(second!.body, readId!)?.name).toBe("read");
    expect(toolResult(second!.body, bashId!)?.content).toBe("hi\n");

    const last = messages[messages.length - 1]!;
    expect(last.info.role).toBe("assistant");
    expect(last.parts.some((p) => p.type === "text" && p.text === "All tools done.")).toBe(true);

    // The plugin's event hook saw this session go idle.
    const probeLog = fs.readFileSync(path.join(server.directory, ".opencode/probe-events.jsonl"), "utf8");
    expect(probeLog).toContain(`"type":"session.idle","sessionID":"${sessionID}"`);
  });

  test("turnEndsAfter a turn that already ended returns at once (the idle event it would wait for came before it was called)", async () => {
    // (in CI, a wake turn that ended while the test still polled the task file left it waiting 20 s for an idle that had come)
    const request = await turnEndsAfter({ model, server, ev }, sessionID, "after-tools", 5_000);
    expect(request.label).toBe("after-tools");
  });

  test("session.summarize produces an assistant message with summary: true", async () => {
    const since = ev.mark();
    const r = await server.client.session.summarize({
      path: { id: sessionID },
      body: { providerID: "mock", modelID: "mock-model" },
    });
    expect(r.error).toBeUndefined();
    await ev.waitFor((e) => e.type === "session.compacted" && e.properties.sessionID === sessionID, 15_000, { since });

    const messages = await getMessages(server.client, sessionID);
    const summary = messages.find((m) => m.info.role === "assistant" && m.info.summary === true);
    expect(summary).toBeDefined();
    expect(summary!.info.finish).toBeTruthy();
    expect(summary!.info.error).toBeUndefined();
    expect(model.requests.some((q) => q.kind === "compaction" && q.label === "default:compaction")).toBe(true);
  });

  test("restart keeps the session and its messages", async () => {
    const before = await getMessages(server.client, sessionID);
    const oldUrl = server.url;
    ev.close();
    await server.restart();
    expect(server.url).not.toBe(oldUrl);
    ev = await events(server.client);

    const got = await server.client.session.get({ path: { id: sessionID } });
    expect(got.error).toBeUndefined();
    expect(got.data?.title).toBe("smoke");
    const after = await getMessages(server.client, sessionID);
    expect(after.map((m) => m.info.id)).toEqual(before.map((m) => m.info.id));

    // And the restarted server still answers prompts.
    const since = ev.mark();
    const reply = await server.client.session.prompt({
      path: { id: sessionID },
      body: { parts: [{ type: "text", text: "still there?" }] },
    });
    expect(reply.error).toBeUndefined();
    await waitIdle(ev, sessionID, { since });
    expect(model.chatRequests().at(-1)?.label).toBe("default:ok");
  });
});

/**
 * The native fork inside the real OpenCode server, with the openai-compatible provider and with
 * @ai-sdk/anthropic (the scripted server answers both APIs and simulates a prefix cache).
 *
 * What is compared is what the model received: the parent's request that called background_task
 * and the child's first request, from their raw bodies. The child's must start with the parent's:
 * the same system prompt, the same tools, and the parent's messages as an exact prefix.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import {
  allText,
  getMessages,
  hasToolResult,
  isToolFollowUp,
  lastUserText,
  textOf,
  toolParts,
  type ChatRequest,
  type ModelApi,
  type RecordedRequest,
} from "../harness/index.js";
import {
  children,
  isWake,
  newSession,
  promptList,
  promptText,
  requestOf,
  storedTask,
  taskFilePath,
  taskIdIn,
  toolOutputs,
  turnEndsAfter,
  until,
  useOpencode,
  userMessages,
  type Env,
} from "./helpers.js";

// A file big enough that the shared prefix spans many cache blocks.
const NOTES = Array.from({ length: 400 }, (_, i) => `note ${String(i).padStart(3, "0")}: the rate limiter refills ${i % 7} tokens per tick`).join("\n") + "\n";
const FILES = { "notes/limiter.txt": NOTES };

type Json = Record<string, any>;

function withoutCacheControl<T>(value: T): T {
  return JSON.parse(JSON.stringify(value, (key, v) => (key === "cache_control" ? undefined : v)));
}

/** System prompt, tools and the conversation as content blocks, from a raw request body, for either API. */
function promptParts(r: RecordedRequest): { system: unknown; tools: unknown; blocks: unknown[] } {
  const body = withoutCacheControl(JSON.parse(r.raw) as Json);
  if (r.api === "anthropic") {
    const blocks = (body.messages as Json[]).flatMap((m) =>
      (typeof m.content === "string" ? [{ type: "text", text: m.content }] : (m.content as Json[])).map((b) => ({ role: m.role, ...b })),
    );
    return { system: body.system, tools: body.tools, blocks };
  }
  const messages = body.messages as Json[];
  return { system: messages.filter((m) => m.role === "system"), tools: body.tools, blocks: messages.filter((m) => m.role !== "system") };
}

/** What a user would check: the child's first request begins with everything the parent sent. */
function expectSharedPrefix(parent: RecordedRequest, child: RecordedRequest) {
  const p = promptParts(parent);
  const c = promptParts(child);
  expect(c.system).toEqual(p.system);
  expect(c.tools).toEqual(p.tools);
  expect(p.blocks.length).toBeGreaterThan(2);
  expect(c.blocks.length).toBeGreaterThan(p.blocks.length);
  expect(c.blocks.slice(0, p.blocks.length)).toEqual(p.blocks);
}

function rawBody(r: RecordedRequest): Json {
  return JSON.parse(r.raw) as Json;
}

interface NativeRun {
  parent: string;
  child: string;
  taskID: string;
  launchOutput: string;
  /** the parent's request that called background_task */
  parentReq: RecordedRequest;
  /** the child's first request */
  childReq: RecordedRequest;
}

/**
 * A parent turn: read a file, then background_task({ fork: true }) without an agent; the child
 * answers; the parent is woken and answers. Returns the two requests to compare.
 */
async function runNativeFork(env: Env, tag: string): Promise<NativeRun> {
  const { model, server } = env;
  const cue = `NATIVE_GO_${tag}`;
  const childCue = `CHILD_NATIVE_${tag}`;
  const mine = (r: ChatRequest) => lastUserText(r) === cue;
  model.script({
    name: `${tag}-read`,
    match: (r) => mine(r) && !isToolFollowUp(r),
    reply: { toolCalls: [{ name: "read", arguments: { filePath: path.join(server.directory, "notes/limiter.txt") } }] },
  });
  model.script({
    name: `${tag}-launch`,
    match: (r) => mine(r) && hasToolResult(r, "read", { sinceLastUser: true }) && !hasToolResult(r, "background_task", { sinceLastUser: true }),
    reply: { toolCalls: [{ name: "background_task", arguments: { description: `Native ${tag}`, prompt: `${childCue}: summarise the notes`, fork: true } }] },
  });
  model.script({
    name: `${tag}-launched`,
    match: (r) => mine(r) && hasToolResult(r, "background_task", { sinceLastUser: true }),
    reply: { text: `Launched ${tag}.` },
  });
  model.script({
    name: `${tag}-child`,
    match: (r) => lastUserText(r).includes(childCue),
    reply: { text: `CHILD_ANSWER_${tag}: the limiter refills 0-6 tokens per tick.` },
  });
  model.script({ name: `${tag}-wake`, match: (r) => isWake(r) && lastUserText(r).includes(`"Native ${tag}"`), reply: { text: `PARENT_NOTED_${tag}` } });

  const parent = await newSession(server.client, `native ${tag}`);
  await promptText(server.client, parent, cue);
  await turnEndsAfter(env, parent, `${tag}-wake`, 30_000);

  const parentMsgs = await getMessages(server.client, parent);
  const [launchOutput] = toolOutputs(parentMsgs, "background_task");
  const [bgPart] = toolParts(parentMsgs, "background_task");
  const child = bgPart!.state.metadata?.sessionId as string;
  const parentReq = await requestOf(model, `${tag}-launch`);
  const childReq = await requestOf(model, `${tag}-child`);
  return { parent, child, taskID: taskIdIn(launchOutput!), launchOutput: launchOutput!, parentReq, childReq };
}

/** The first assistant message of the child, as OpenCode stored it (its tokens come from the model's usage). */
async function childFirstAssistant(env: Env, child: string) {
  const msgs = await getMessages(env.server.client, child);
  return msgs.find((m) => m.info.role === "assistant")!;
}

async function forkFile(env: Env, child: string): Promise<string> {
  const taskFile = await taskFilePath(env.server);
  return path.join(path.dirname(taskFile), path.basename(taskFile, ".json"), "forks", `${child}.json`);
}

describe("native fork over the cap (plugin option nativeForkMaxTokens)", () => {
  const env = useOpencode({ files: FILES, pluginOptions: { nativeForkMaxTokens: 100 }, modelOptions: { promptTokens: "estimate", prefixCache: true } });

  test("a parent context over the cap gets a text fork, and the launch output says why", async () => {
    const { model, server } = env;
    const cue = "CAP_GO";
    model.script({
      name: "cap-read",
      match: (r) => lastUserText(r) === cue && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "read", arguments: { filePath: path.join(server.directory, "notes/limiter.txt") } }] },
    });
    model.script({
      name: "cap-launch",
      match: (r) =>
        lastUserText(r) === cue && hasToolResult(r, "read", { sinceLastUser: true }) && !hasToolResult(r, "background_task", { sinceLastUser: true }),
      reply: { toolCalls: [{ name: "background_task", arguments: { description: "Capped", prompt: "CHILD_CAP: look", fork: true } }] },
    });
    model.script({
      name: "cap-launched",
      match: (r) => lastUserText(r) === cue && hasToolResult(r, "background_task", { sinceLastUser: true }),
      reply: { text: "Launched." },
    });
    model.script({ name: "cap-child", match: (r) => lastUserText(r).includes("CHILD_CAP"), reply: { text: "CHILD_ANSWER_CAP" } });
    model.script({ name: "cap-wake", match: (r) => isWake(r) && lastUserText(r).includes('"Capped"'), reply: { text: "noted" } });
    const parent = await newSession(server.client, "cap");
    await promptText(server.client, parent, cue);
    await turnEndsAfter(env, parent, "cap-wake", 30_000);
    const [out] = toolOutputs(await getMessages(server.client, parent), "background_task");
    expect(out).toContain("with agent build");
    expect(out).toMatch(
      /Fork: context copy: \d+ of \d+ messages, \d+ chars \(not native: your context \(~\d+ tokens\) is over the native fork cap of 100 tokens\)\./,
    );
    const childReq = await requestOf(model, "cap-child");
    expect(JSON.stringify(childReq.body.messages)).toContain("<inherited_context>");

    // the text fork's receipt: its first request read the system prompt and tools from the cache
    // (what the parent's request had too), and the context copy was new
    const parentReq = await requestOf(model, "cap-launch");
    const parentMsgs = await getMessages(server.client, parent);
    const taskID = taskIdIn(out!);
    const stored = await storedTask(server, taskID);
    expect(stored?.receipt).toMatchObject({ kind: "text", read: childReq.cache.cachedTokens, input: childReq.cache.promptTokens });
    const receipt = stored!.receipt as { read: number; input: number; copy: number };
    expect(receipt.read).toBeGreaterThan(0);
    expect(receipt.read).toBeLessThan(receipt.input);
    // what it read is the start the two requests share: the tools and system prompt, not the copied context
    expect(childReq.cache.sharedPrefixTokens).toBeLessThan(parentReq.cache.promptTokens);
    expect(receipt.copy).toBeGreaterThan(0);
    const notice = userMessages(parentMsgs)
      .map(textOf)
      .find((t) => t.startsWith(`[background task ${taskID} `));
    expect(notice).toMatch(
      /^cache: [\d.]+k of [\d.]+k input tokens \(\d+%\) on the first request · text fork: only the system prompt and tools could come from your cache; the context copy \(~[\d.]+k? tokens\) and the task were new$/m,
    );
  });
});

// Another plugin of the project moves a user message that carries SWITCH_MODEL to mock/other-model (OpenCode
// runs `chat.message` before it stores the message, and the loop runs on the stored model): the native
// child's first request then goes to a model whose cache never saw the parent's prefix.
const SWITCH_PLUGIN = `export const SwitchModel = async () => ({
  "chat.message": async (_input, output) => {
    const text = (output.parts ?? []).map((p) => (typeof p.text === "string" ? p.text : "")).join("");
    if (text.includes("SWITCH_MODEL")) output.message.model = { providerID: "mock", modelID: "other-model" };
  },
});
`;

describe("fork receipt: a forced miss", () => {
  const env = useOpencode({
    files: { ...FILES, ".opencode/plugins/switch-model.js": SWITCH_PLUGIN },
    modelOptions: { promptTokens: "estimate", prefixCache: true },
  });

  test("a native fork whose child is moved to another model reads nothing from the cache, and is flagged with that reason", async () => {
    const { model, server } = env;
    const cue = "MISS_GO";
    model.script({
      name: "miss-read",
      match: (r) => lastUserText(r) === cue && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "read", arguments: { filePath: path.join(server.directory, "notes/limiter.txt") } }] },
    });
    model.script({
      name: "miss-launch",
      match: (r) =>
        lastUserText(r) === cue && hasToolResult(r, "read", { sinceLastUser: true }) && !hasToolResult(r, "background_task", { sinceLastUser: true }),
      reply: { toolCalls: [{ name: "background_task", arguments: { description: "Missed", prompt: "SWITCH_MODEL CHILD_MISS: look", fork: true } }] },
    });
    model.script({
      name: "miss-launched",
      match: (r) => lastUserText(r) === cue && hasToolResult(r, "background_task", { sinceLastUser: true }),
      reply: { text: "Launched." },
    });
    model.script({ name: "miss-child", match: (r) => lastUserText(r).includes("CHILD_MISS"), reply: { text: "CHILD_ANSWER_MISS" } });
    model.script({ name: "miss-wake", match: (r) => isWake(r) && lastUserText(r).includes('"Missed"'), reply: { text: "noted" } });
    const parent = await newSession(server.client, "miss");
    await promptText(server.client, parent, cue);
    await turnEndsAfter(env, parent, "miss-wake", 30_000);

    const msgs = await getMessages(server.client, parent);
    const [out] = toolOutputs(msgs, "background_task");
    expect(out).toContain("Fork: native: shares your prompt cache.");
    const childReq = await requestOf(model, "miss-child");
    expect((JSON.parse(childReq.raw) as Json).model).toBe("other-model");
    expect(childReq.cache.cachedTokens).toBe(0);

    const taskID = taskIdIn(out!);
    const stored = await storedTask(server, taskID);
    expect(stored?.receipt).toMatchObject({ kind: "native", read: 0, input: childReq.cache.promptTokens });
    const flag =
      /cache: 0 of [\d.]+k input tokens \(0%\) on the first request · ⚠ low for a native fork; likely cause: the model or variant changed: the child ran on mock\/other-model, your request on mock\/mock-model/;
    const notice = userMessages(msgs)
      .map(textOf)
      .find((t) => t.startsWith(`[background task ${taskID} `));
    expect(notice).toMatch(flag);
    expect(await promptList(env, parent, "MISS_LIST")).toMatch(flag);
    model.script({
      name: "miss-out",
      match: (r) => lastUserText(r) === "MISS_OUT" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "background_output", arguments: { task_id: taskID } }] },
    });
    model.script({ name: "miss-out-read", match: (r) => lastUserText(r) === "MISS_OUT" && isToolFollowUp(r), reply: { text: "read" } });
    await promptText(server.client, parent, "MISS_OUT");
    expect(toolOutputs(await getMessages(server.client, parent), "background_output").at(-1)).toMatch(flag);
  });
});

for (const api of ["openai", "anthropic"] as ModelApi[]) {
  describe(`native fork (${api === "openai" ? "@ai-sdk/openai-compatible" : "@ai-sdk/anthropic"})`, () => {
    const env = useOpencode({
      files: FILES,
      modelOptions: { api, promptTokens: "estimate", prefixCache: true },
      // setCacheKey: OpenCode then sends a session-keyed prompt cache key, which the fork rewrites.
      config: { provider: { mock: { options: { setCacheKey: true } } } },
    });

    test("the child's first request starts with the parent's request, and reads it from the cache", async () => {
      const run = await runNativeFork(env, `A${api}`);
      expect(run.launchOutput).toContain("Fork: native: shares your prompt cache.");
      expect(run.launchOutput).toContain("with agent build");
      expect(run.parentReq.api).toBe(api);

      // system, tools, messages: the child's request begins with the parent's
      expectSharedPrefix(run.parentReq, run.childReq);
      // ...followed by the directive with the task
      expect(lastUserText(run.childReq.body)).toContain("You are a forked copy of the agent above");
      expect(lastUserText(run.childReq.body)).toContain(`CHILD_NATIVE_A${api}: summarise the notes`);

      // the simulated provider read most of the child's prompt from the parent's cache...
      expect(run.childReq.cache.cachedTokens).toBeGreaterThan(run.parentReq.cache.promptTokens * 0.9);
      // ...and OpenCode recorded that cache read on the child's first assistant message
      const first = await childFirstAssistant(env, run.child);
      expect(first.info.tokens.cache.read).toBeGreaterThan(0);
      expect(first.info.agent ?? first.info.mode).toBe("build");

      // cache key and affinity follow the parent (the fork's root), not the child's own session
      expect(run.childReq.headers["x-session-affinity"]).toBe(run.parent);
      expect(run.parentReq.headers["x-session-affinity"]).toBe(run.parent);
      if (api === "openai") expect(JSON.stringify(rawBody(run.childReq))).not.toContain(run.child);

      // the child is a real child session holding only its own messages (the directive, its answer)
      const kids = await children(env.server.client, run.parent);
      expect(kids.map((k) => k.id)).toContain(run.child);
      const childUsers = userMessages(await getMessages(env.server.client, run.child));
      expect(childUsers).toHaveLength(1);
      expect(textOf(childUsers[0]!)).toContain("CHILD_NATIVE_A");

      // the snapshot is kept beside the task file, readable by the owner only
      const file = await forkFile(env, run.child);
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);

      // the list says which fork the child got
      const parentMsgs = await getMessages(env.server.client, run.parent);
      const notice = userMessages(parentMsgs)
        .map(textOf)
        .find((t) => t.startsWith(`[background task ${run.taskID} `));
      expect(notice).toContain("forked (native: shares your prompt cache)");

      // the fork receipt: what the child's first request read from the cache, as OpenCode recorded it (about 99%)
      const t = first.info.tokens;
      const stored = await storedTask(env.server, run.taskID);
      expect(stored?.receipt).toEqual({ kind: "native", read: t.cache.read, input: t.input + t.cache.read + t.cache.write });
      expect(t.cache.read / (t.input + t.cache.read + t.cache.write)).toBeGreaterThan(0.9);
      const receipt = /^cache: [\d.]+k of [\d.]+k input tokens \((9\d|100)%\) on the first request · native fork: read your context from the cache$/m;
      expect(notice).toMatch(receipt);
      const list = await promptList(env, run.parent, `LIST_A${api}`);
      expect(list).toMatch(new RegExp(`^\\s+${receipt.source.slice(1)}`, "m"));
      // cache reads apart from the tokens charged in full, in the notice and the list
      expect(notice).toMatch(/^usage: [\d.]+k? charged in full \([\d.]+k? in, [\d.]+k? out\) · [\d.]+k read from cache$/m);
      expect(list).toMatch(/charged in full \([\d.]+k? in, [\d.]+k? out\) · [\d.]+k read from cache/);
    });

    if (api === "openai") {
      test("another agent named: a text fork (context copy), and the launch output says so", async () => {
        const { model, server } = env;
        const cue = "TEXT_FORK_GO";
        model.script({
          name: "t-launch",
          match: (r) => lastUserText(r) === cue && !isToolFollowUp(r),
          reply: { toolCalls: [{ name: "background_task", arguments: { description: "Text B", prompt: "CHILD_TEXT_B: look", agent: "general", fork: true } }] },
        });
        model.script({ name: "t-launched", match: (r) => lastUserText(r) === cue && isToolFollowUp(r), reply: { text: "Launched B." } });
        model.script({ name: "t-child", match: (r) => lastUserText(r).includes("CHILD_TEXT_B"), reply: { text: "CHILD_ANSWER_B" } });
        model.script({ name: "t-wake", match: (r) => isWake(r) && lastUserText(r).includes('"Text B"'), reply: { text: "PARENT_NOTED_B" } });
        const parent = await newSession(server.client, "text fork");
        await promptText(server.client, parent, cue);
        await turnEndsAfter(env, parent, "t-wake", 30_000);
        const [out] = toolOutputs(await getMessages(server.client, parent), "background_task");
        expect(out).toMatch(/Fork: context copy: \d+ of \d+ messages, \d+ chars \(not native: agent general is not yours \(build\)\)\./);
        const childReq = await requestOf(model, "t-child");
        const parentReq = await requestOf(model, "t-launch");
        // the text fork shares no message prefix with the parent: its first user message is the copy
        expect(JSON.stringify(childReq.body.messages)).toContain("<inherited_context>");
        expect(promptParts(childReq).blocks[0]).not.toEqual(promptParts(parentReq).blocks[0]);
      });
    }

    if (api === "openai") {
      test("the parent's later compaction does not touch a running fork: its next request still starts with the launch request", async () => {
        const { model, server } = env;
        const cue = "NATIVE_GO_P";
        let parentCompacted!: () => void;
        const compacted = new Promise<void>((resolve) => (parentCompacted = resolve));
        model.script({
          name: "p-read",
          match: (r) => lastUserText(r) === cue && !isToolFollowUp(r),
          reply: { toolCalls: [{ name: "read", arguments: { filePath: path.join(server.directory, "notes/limiter.txt") } }] },
        });
        model.script({
          name: "p-launch",
          match: (r) =>
            lastUserText(r) === cue && hasToolResult(r, "read", { sinceLastUser: true }) && !hasToolResult(r, "background_task", { sinceLastUser: true }),
          reply: { toolCalls: [{ name: "background_task", arguments: { description: "Native P", prompt: "CHILD_NATIVE_P: check the notes", fork: true } }] },
        });
        model.script({
          name: "p-launched",
          match: (r) => lastUserText(r) === cue && hasToolResult(r, "background_task", { sinceLastUser: true }),
          reply: { text: "Launched P." },
        });
        model.script({
          name: "p-summary",
          kind: "compaction",
          match: (r) => allText(r).includes(cue) && !allText(r).includes("CHILD_NATIVE_P: check"),
          reply: { text: "PARENT_SUMMARY_P" },
        });
        // The child's first step waits until the parent has compacted, then reads a file; its second step answers.
        model.script({
          name: "p-child-1",
          match: (r) => lastUserText(r).includes("CHILD_NATIVE_P") && !isToolFollowUp(r),
          reply: async () => {
            await compacted;
            return { toolCalls: [{ name: "read", arguments: { filePath: path.join(server.directory, "notes/limiter.txt") } }] };
          },
        });
        model.script({ name: "p-child-2", match: (r) => lastUserText(r).includes("CHILD_NATIVE_P") && isToolFollowUp(r), reply: { text: "CHILD_ANSWER_P" } });
        model.script({ name: "p-wake", match: (r) => isWake(r) && lastUserText(r).includes('"Native P"'), reply: { text: "PARENT_NOTED_P" } });

        const parent = await newSession(server.client, "native P");
        await promptText(server.client, parent, cue);
        const launchReq = await requestOf(model, "p-launch");
        // the child's first request is at the model (its reply waits for the parent's compaction)
        await until("the child's first request", () => model.requests.some((r) => lastUserText(r.body).includes("CHILD_NATIVE_P")));
        const since = env.ev.mark();
        const summarized = await server.client.session.summarize({ path: { id: parent }, body: { providerID: "mock", modelID: "mock-model" } });
        expect(summarized.error).toBeUndefined();
        await env.ev.waitFor((e) => e.type === "session.compacted" && e.properties.sessionID === parent, 20_000, { since });
        parentCompacted();

        const second = await requestOf(model, "p-child-2", 30_000);
        expectSharedPrefix(launchReq, second);
        expect(allText(second.body)).not.toContain("PARENT_SUMMARY_P");
        await turnEndsAfter(env, parent, "p-wake", 30_000);
      });

      test("the child's compaction summarises the inherited context; after it the injection stops", async () => {
        const run = await runNativeFork(env, "Copenai");
        const { model, server } = env;
        const SUMMARY = "CHILD_SUMMARY_C: the parent read notes/limiter.txt; the child summarised it.";
        model.script({ name: "c-summary", kind: "compaction", match: (r) => allText(r).includes("CHILD_NATIVE_Copenai"), reply: { text: SUMMARY } });
        model.script({ name: "c-after", match: (r) => lastUserText(r) === "AFTER_COMPACT_C", reply: { text: "AFTER_ANSWER_C" } });

        const since = env.ev.mark();
        const summarized = await server.client.session.summarize({ path: { id: run.child }, body: { providerID: "mock", modelID: "mock-model" } });
        expect(summarized.error).toBeUndefined();
        await env.ev.waitFor((e) => e.type === "session.compacted" && e.properties.sessionID === run.child, 20_000, { since });
        // the compaction request itself saw the inherited context (the hook runs on its copy of the history)
        const compaction = await requestOf(model, "c-summary");
        expect(allText(compaction.body)).toContain("NATIVE_GO_Copenai");
        expect(allText(compaction.body)).toContain("note 000: the rate limiter");

        await server.client.session.prompt({ path: { id: run.child }, body: { agent: "build", parts: [{ type: "text", text: "AFTER_COMPACT_C" }] } });
        const after = await requestOf(model, "c-after");
        expect(allText(after.body)).toContain("CHILD_SUMMARY_C");
        // the summary replaces the inherited prefix: the parent's conversation is no longer sent
        expect(allText(after.body)).not.toContain("NATIVE_GO_Copenai");
        expect(allText(after.body)).not.toContain("note 000: the rate limiter");
      });
    }

    test("after a restart, a resume of the native fork still starts with the parent's request", async () => {
      const run = await runNativeFork(env, `R${api}`);
      expectSharedPrefix(run.parentReq, run.childReq);

      await env.server.restart();
      await env.resubscribe();
      const { model, server } = env;
      const cue = `RESUME_GO_${api}`;
      model.script({
        name: `r-${api}-resume`,
        match: (r) => lastUserText(r) === cue && !isToolFollowUp(r),
        reply: {
          toolCalls: [{ name: "background_task", arguments: { description: "Follow up", resume: run.taskID, prompt: `FOLLOW_UP_${api}: and the maximum?` } }],
        },
      });
      model.script({ name: `r-${api}-resumed`, match: (r) => lastUserText(r) === cue && isToolFollowUp(r), reply: { text: "Resumed." } });
      model.script({ name: `r-${api}-child`, match: (r) => lastUserText(r).includes(`FOLLOW_UP_${api}`), reply: { text: `FOLLOW_UP_ANSWER_${api}: 6.` } });
      model.script({ name: `r-${api}-wake`, match: (r) => isWake(r) && lastUserText(r).includes(`"Native R${api}"`), reply: { text: "noted again" } });
      await promptText(server.client, run.parent, cue);
      const followUp = await requestOf(model, `r-${api}-child`, 30_000);
      expectSharedPrefix(run.parentReq, followUp);
      // the child's own first exchange follows the inherited prefix, then the follow-up
      expect(JSON.stringify(followUp.body.messages)).toContain(`CHILD_ANSWER_R${api}`);
      expect(followUp.cache.cachedTokens).toBeGreaterThan(run.parentReq.cache.promptTokens * 0.9);
      await until(
        "the resumed task to end",
        async () => {
          const out = await server.client.session.messages({ path: { id: run.child } });
          const last = (out.data ?? []).at(-1) as { info: { role: string; finish?: string } } | undefined;
          return last?.info.role === "assistant" && last.info.finish === "stop";
        },
        30_000,
      );

      // deleting the child removes its inherited context from disk
      const file = await forkFile(env, run.child);
      expect(fs.existsSync(file)).toBe(true);
      await server.client.session.delete({ path: { id: run.child } });
      await until("the fork file to be removed", () => !fs.existsSync(file), 15_000);
    });
  });
}

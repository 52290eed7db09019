/**
 * A scripted, OpenAI-compatible chat-completions server for end-to-end tests.
 *
 * OpenCode talks to it through the bundled "@ai-sdk/openai-compatible" provider
 * (`POST {baseURL}/chat/completions`, streaming SSE). Each test scripts answers by
 * matching the conversation the model receives; nothing else is faked.
 *
 * RULE ORDER: rules are tried NEWEST-FIRST (the last `script()` call wins), so a test
 * can add a specific rule on top of general rules set up in `beforeAll`. A rule whose
 * `times` is used up is skipped. Built-in defaults are tried after every scripted rule.
 *
 * REQUEST KINDS: every request is classified as
 *   - "title"      (system prompt contains "You are a title generator"),
 *   - "compaction" (system prompt contains "context summarization agent"),
 *   - "chat"       (everything else: the agent loop, subagents, ...).
 * A rule only sees requests of its `kind` (default "chat"; "any" = all kinds), because
 * title and compaction requests embed the user's text and would otherwise match
 * rules written for the conversation ("last user text contains X").
 *
 * Defaults: "title" -> a short title, "compaction" -> a markdown summary,
 * unmatched "chat" -> the plain text "ok".
 *
 * TWO APIS on one server: `POST /v1/chat/completions` (OpenAI, for "@ai-sdk/openai-compatible")
 * and `POST /v1/messages` (Anthropic Messages API, streaming SSE, for "@ai-sdk/anthropic").
 * An Anthropic request is translated into the OpenAI shape for the rules (system message, tool
 * calls, `role: "tool"` results), so the same rules and helpers answer both. `startScriptedModel(
 * { api: "anthropic" })` makes `buildConfig` declare the Anthropic provider instead.
 *
 * RECORDING AND PREFIX CACHE: every request keeps its raw body and headers, and the prefix it
 * shares with earlier requests: its prompt (tools, system, messages, in the order providers cache
 * them; Anthropic `cache_control` markers left out) is cut into blocks of CACHE_BLOCK_CHARS (64
 * tokens at ~4 chars per token); the longest run of leading blocks equal to some earlier request's
 * leading blocks, sent to the same model (a provider's cache is per model), is
 * `cache.sharedPrefixTokens`. With `startScriptedModel({ prefixCache: true })` the server reports
 * it as cached, as a provider's prefix cache would (`usage.prompt_tokens_details.cached_tokens`,
 * Anthropic `cache_read_input_tokens`), never more than the prompt tokens reported;
 * by default it reports no cache reads (usage as before). With `promptTokens: "estimate"` the prompt
 * tokens are the prompt's chars / 4 instead of 100.
 */
import { createHash } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";

// ---------------------------------------------------------------------------------------
// OpenAI request shapes (only what we read)

export interface ChatContentPart {
  type: string;
  text?: string;
  [key: string]: unknown;
}

export interface ChatToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool" | string;
  content?: string | ChatContentPart[] | null;
  tool_calls?: ChatToolCall[];
  tool_call_id?: string;
  name?: string;
  [key: string]: unknown;
}

export interface ChatTool {
  type: "function";
  function: { name: string; description?: string; parameters?: unknown };
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  stream?: boolean;
  tools?: ChatTool[];
  [key: string]: unknown;
}

export type RequestKind = "title" | "compaction" | "chat";

/** The wire format of a request: OpenAI chat completions or Anthropic Messages. */
export type ModelApi = "openai" | "anthropic";

/** ~4 characters per token; blocks of 64 tokens. */
export const CHARS_PER_TOKEN = 4;
export const CACHE_BLOCK_TOKENS = 64;
export const CACHE_BLOCK_CHARS = CACHE_BLOCK_TOKENS * CHARS_PER_TOKEN;

// ---------------------------------------------------------------------------------------
// Script shapes

export interface Usage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
  [key: string]: unknown;
}

export interface ReplyToolCall {
  name: string;
  arguments: object;
  /** Tool-call id; default `call_<n>` (unique for this server). */
  id?: string;
}

export interface Reply {
  text?: string;
  toolCalls?: ReplyToolCall[];
  /** Wait this long (after the response headers) before the first content chunk. */
  delayMs?: number;
  /** Wait this long between content chunks (text is streamed word by word). */
  chunkDelayMs?: number;
  /** Reported usage; defaults to `{ prompt_tokens: 100, completion_tokens: 20 }`. */
  usage?: Usage;
  /** Override the finish reason (default "tool_calls" when there are tool calls, else "stop"). */
  finishReason?: string;
  /** Answer with an HTTP error instead (OpenAI error body). */
  httpError?: { status: number; message: string };
  /** Answer 200 with an event stream that ends at once, with no event at all (a broken provider). */
  emptyStream?: boolean;
}

export interface Rule {
  name?: string;
  /** Which request kinds the rule may answer (default "chat"). */
  kind?: RequestKind | "any";
  match: (req: ChatRequest) => boolean;
  reply: Reply | ((req: ChatRequest) => Reply | Promise<Reply>);
  /** Answer at most this many requests (default: unlimited). */
  times?: number;
}

export interface RecordedRequest {
  /** 0-based order of arrival. */
  index: number;
  /** The parsed request body (an Anthropic request translated into the OpenAI shape). */
  body: ChatRequest;
  /** The request body exactly as received. */
  raw: string;
  api: ModelApi;
  /** Request headers (lower-case names). */
  headers: Record<string, string>;
  /** The prompt as the simulated cache saw it, and what was reported. */
  cache: {
    promptChars: number;
    /** prompt tokens reported (set once the reply is chosen) */
    promptTokens: number;
    /** leading tokens (whole blocks) some earlier request already sent */
    sharedPrefixTokens: number;
    /** cached tokens reported: the shared prefix with `prefixCache: true` (at most the prompt tokens), else 0 */
    cachedTokens: number;
  };
  kind: RequestKind;
  /** Name of the rule that answered (`rule#<n>` if unnamed), or "default:title" / "default:compaction" / "default:ok". */
  label: string;
  /** Date.now() when the request arrived (its headers, before the body was read). */
  at: number;
  /** The reply that was (or is being) sent; undefined until resolved. */
  reply?: Reply;
  /** Tool-call ids this reply assigned, in order. */
  toolCallIds: string[];
  /** True when the client disconnected before the reply was complete. */
  aborted: boolean;
  /** True once the reply was completely written (or the request aborted). */
  done: boolean;
}

export interface ScriptHandle {
  /** How many requests this rule answered. */
  readonly count: number;
  /** Remove the rule. */
  remove(): void;
}

export interface ScriptedModelOptions {
  /** Which provider `buildConfig` declares for this server (default "openai": @ai-sdk/openai-compatible). */
  api?: ModelApi;
  /** "estimate": report prompt tokens as the prompt's chars / 4 (default: 100, or the reply's usage). */
  promptTokens?: "estimate";
  /** Report the shared prefix as cached prompt tokens, as a provider's prefix cache does (default false). */
  prefixCache?: boolean;
}

export interface ScriptedModel {
  /** Base URL for the provider config, e.g. `http://127.0.0.1:PORT/v1`. */
  url: string;
  /** The API the provider config should use. */
  api: ModelApi;
  port: number;
  /** Every chat-completions request, in arrival order. */
  requests: RecordedRequest[];
  /** Add a rule (tried before all earlier rules). */
  script(rule: Rule): ScriptHandle;
  /** Drop all scripted rules and recorded requests (defaults remain). */
  reset(): void;
  /** Resolve with the first request (already received or future) matching `predicate`. */
  waitForRequest(predicate: (r: RecordedRequest) => boolean, timeoutMs?: number): Promise<RecordedRequest>;
  /** Requests of kind "chat" only (the agent loop). */
  chatRequests(): RecordedRequest[];
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------
// Request helpers

/** Text of one message's content (string or parts). */
export function messageText(m: ChatMessage): string {
  const c = m.content;
  if (c == null) return "";
  if (typeof c === "string") return c;
  return c
    .map((p) => (typeof p.text === "string" ? p.text : ""))
    .filter(Boolean)
    .join("\n");
}

/** All system messages joined. */
export function systemPrompt(req: ChatRequest): string {
  return req.messages
    .filter((m) => m.role === "system")
    .map(messageText)
    .join("\n");
}

export function kindOf(req: ChatRequest): RequestKind {
  const sys = systemPrompt(req);
  if (sys.includes("You are a title generator")) return "title";
  if (sys.includes("context summarization agent")) return "compaction";
  return "chat";
}

/** Text of the last user message ("" if none). */
export function lastUserText(req: ChatRequest): string {
  for (let i = req.messages.length - 1; i >= 0; i--) {
    const m = req.messages[i]!;
    if (m.role === "user") return messageText(m);
  }
  return "";
}

/** The texts of all user messages, oldest first. */
export function userTexts(req: ChatRequest): string[] {
  return req.messages.filter((m) => m.role === "user").map(messageText);
}

/** Every message's text (incl. tool results and tool-call arguments), joined with newlines. */
export function allText(req: ChatRequest): string {
  const out: string[] = [];
  for (const m of req.messages) {
    const t = messageText(m);
    if (t) out.push(t);
    for (const tc of m.tool_calls ?? []) out.push(`${tc.function.name}(${tc.function.arguments})`);
  }
  return out.join("\n");
}

/** The last message of the conversation. */
export function lastMessage(req: ChatRequest): ChatMessage | undefined {
  return req.messages[req.messages.length - 1];
}

export interface ToolResult {
  toolCallId: string;
  /** Tool name, from the assistant message that made the call ("" if not found). */
  name: string;
  /** The arguments the assistant sent (parsed JSON, or the raw string). */
  arguments: unknown;
  content: string;
  /** Index of the `role: "tool"` message in `req.messages`. */
  index: number;
}

/**
 * Tool results in the conversation (OpenAI `role: "tool"` messages), oldest first.
 * `sinceLastUser: true` keeps only those after the last user message (the current turn).
 */
export function toolResults(req: ChatRequest, opts: { sinceLastUser?: boolean } = {}): ToolResult[] {
  const calls = new Map<string, ChatToolCall>();
  let lastUser = -1;
  req.messages.forEach((m, i) => {
    if (m.role === "user") lastUser = i;
    for (const tc of m.tool_calls ?? []) calls.set(tc.id, tc);
  });
  const out: ToolResult[] = [];
  req.messages.forEach((m, i) => {
    if (m.role !== "tool") return;
    if (opts.sinceLastUser && i < lastUser) return;
    const id = m.tool_call_id ?? "";
    const call = calls.get(id);
    let args: unknown = call?.function.arguments;
    try {
      if (typeof args === "string") args = JSON.parse(args);
    } catch {
      /* keep raw */
    }
    out.push({ toolCallId: id, name: call?.function.name ?? m.name ?? "", arguments: args, content: messageText(m), index: i });
  });
  return out;
}

/**
 * The tool result for a tool call, looked up by tool-call id or tool name (the latest
 * one for a name). Undefined when the conversation has no such result.
 */
export function toolResult(req: ChatRequest, idOrName: string, opts: { sinceLastUser?: boolean } = {}): ToolResult | undefined {
  const all = toolResults(req, opts);
  const byId = all.find((r) => r.toolCallId === idOrName);
  if (byId) return byId;
  return all.filter((r) => r.name === idOrName).pop();
}

/** Whether the conversation contains a tool result for the given tool-call id or tool name. */
export function hasToolResult(req: ChatRequest, idOrName: string, opts: { sinceLastUser?: boolean } = {}): boolean {
  return toolResult(req, idOrName, opts) !== undefined;
}

/** Whether the last message is a tool result (i.e. this is the follow-up request after tool calls). */
export function isToolFollowUp(req: ChatRequest): boolean {
  return lastMessage(req)?.role === "tool";
}

/** Names of the tools offered to the model. */
export function toolNames(req: ChatRequest): string[] {
  return (req.tools ?? []).map((t) => t.function.name);
}

// ---------------------------------------------------------------------------------------
// Anthropic Messages API: translation for the rules, and the prompt in cache order

type AnthropicBlock = {
  type: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: unknown;
  [key: string]: unknown;
};
interface AnthropicRequest {
  model?: string;
  system?: string | AnthropicBlock[];
  messages?: { role: string; content: string | AnthropicBlock[] }[];
  tools?: { name: string; description?: string; input_schema?: unknown }[];
  stream?: boolean;
  [key: string]: unknown;
}

function blockText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((b: AnthropicBlock) => (typeof b?.text === "string" ? b.text : "")).join("\n");
}

/** An Anthropic Messages request in the OpenAI shape the rules and helpers read. */
export function anthropicToChat(req: AnthropicRequest): ChatRequest {
  const messages: ChatMessage[] = [];
  const system = blockText(req.system ?? "");
  if (system) messages.push({ role: "system", content: system });
  for (const m of req.messages ?? []) {
    const blocks: AnthropicBlock[] = typeof m.content === "string" ? [{ type: "text", text: m.content }] : (m.content ?? []);
    if (m.role === "assistant") {
      const text = blocks
        .filter((b) => b.type === "text")
        .map((b) => b.text ?? "")
        .join("");
      const calls = blocks.filter((b) => b.type === "tool_use");
      messages.push({
        role: "assistant",
        content: text || null,
        ...(calls.length
          ? {
              tool_calls: calls.map((b) => ({
                id: b.id ?? "",
                type: "function" as const,
                function: { name: b.name ?? "", arguments: JSON.stringify(b.input ?? {}) },
              })),
            }
          : {}),
      });
      continue;
    }
    // user: tool results become `tool` messages and each text block a user message, in their order
    // (the SDK merges consecutive user messages into one, e.g. a notice and a wake prompt: split
    // again, the last text block is the newest user text)
    for (const b of blocks) {
      if (b.type === "tool_result") messages.push({ role: "tool", tool_call_id: b.tool_use_id ?? "", content: blockText(b.content) });
      else if (b.type === "text") messages.push({ role: "user", content: [{ type: "text", text: b.text ?? "" }] });
    }
  }
  return {
    model: req.model ?? "mock-model",
    messages,
    stream: req.stream,
    tools: (req.tools ?? []).map((t) => ({ type: "function" as const, function: { name: t.name, description: t.description, parameters: t.input_schema } })),
  };
}

function withoutCacheControl(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value ?? null, (key, v) => (key === "cache_control" ? undefined : v)));
}

/** The prompt as a provider caches it: tools, then system, then the messages, one JSON line each. */
export function promptForCache(api: ModelApi, parsed: Record<string, unknown>): string {
  if (api === "anthropic") {
    const req = parsed as AnthropicRequest;
    const lines = [JSON.stringify(withoutCacheControl(req.tools ?? [])), JSON.stringify(withoutCacheControl(req.system ?? ""))];
    for (const m of req.messages ?? []) lines.push(JSON.stringify(withoutCacheControl(m)));
    return lines.join("\n");
  }
  const req = parsed as ChatRequest;
  return [JSON.stringify(req.tools ?? []), ...(req.messages ?? []).map((m) => JSON.stringify(m))].join("\n");
}

/**
 * The simulated prefix cache: chained hashes of each request's leading blocks. A request's cached
 * part is its longest run of leading blocks that some earlier request to the same model had (a
 * provider keeps a cache per model; linear in its size).
 */
export class PrefixCache {
  private readonly seen = new Set<string>();

  /** Cached blocks of `prompt` sent to `model`, then remembers its blocks for later requests. */
  read(prompt: string, model = ""): number {
    let chain = createHash("sha1").update(model).digest("hex");
    let cached = 0;
    let stillHit = true;
    for (let at = 0; at + CACHE_BLOCK_CHARS <= prompt.length; at += CACHE_BLOCK_CHARS) {
      chain = createHash("sha1")
        .update(chain)
        .update(prompt.slice(at, at + CACHE_BLOCK_CHARS))
        .digest("hex");
      if (stillHit && this.seen.has(chain)) cached++;
      else stillHit = false;
      this.seen.add(chain);
    }
    return cached;
  }

  clear(): void {
    this.seen.clear();
  }
}

// ---------------------------------------------------------------------------------------
// Server

interface StoredRule {
  rule: Rule;
  seq: number;
  used: number;
  removed: boolean;
}

const DEFAULT_USAGE: Usage = { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 };

const DEFAULT_SUMMARY = [
  "## Goal",
  "Scripted test conversation.",
  "",
  "## Progress",
  "- The scripted model answered the requests so far.",
  "",
  "## Next steps",
  "- Continue with the next request.",
].join("\n");

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

/** Split text into stream chunks: words with their trailing whitespace. */
function chunkText(text: string): string[] {
  const parts = text.match(/\S+\s*|\s+/g);
  return parts && parts.length ? parts : [text];
}

export async function startScriptedModel(options: ScriptedModelOptions = {}): Promise<ScriptedModel> {
  const prefixCache = new PrefixCache();
  let rules: StoredRule[] = [];
  let seq = 0;
  let callSeq = 0;
  const requests: RecordedRequest[] = [];
  const waiters = new Set<{ pred: (r: RecordedRequest) => boolean; resolve: (r: RecordedRequest) => void }>();
  const sockets = new Set<import("node:net").Socket>();

  function notify(r: RecordedRequest) {
    for (const w of [...waiters]) {
      let ok = false;
      try {
        ok = w.pred(r);
      } catch {
        ok = false;
      }
      if (ok) {
        waiters.delete(w);
        w.resolve(r);
      }
    }
  }

  async function choose(body: ChatRequest, kind: RequestKind): Promise<{ label: string; reply: Reply }> {
    const ordered = [...rules].filter((r) => !r.removed).sort((a, b) => b.seq - a.seq);
    for (const s of ordered) {
      const k = s.rule.kind ?? "chat";
      if (k !== "any" && k !== kind) continue;
      if (s.rule.times !== undefined && s.used >= s.rule.times) continue;
      let ok = false;
      try {
        ok = s.rule.match(body);
      } catch {
        ok = false;
      }
      if (!ok) continue;
      s.used++;
      const reply = typeof s.rule.reply === "function" ? await s.rule.reply(body) : s.rule.reply;
      return { label: s.rule.name ?? `rule#${s.seq}`, reply };
    }
    if (kind === "title") return { label: "default:title", reply: { text: "Scripted session" } };
    if (kind === "compaction") return { label: "default:compaction", reply: { text: DEFAULT_SUMMARY } };
    return { label: "default:ok", reply: { text: "ok" } };
  }

  async function handleCompletion(req: http.IncomingMessage, res: http.ServerResponse, raw: string, api: ModelApi, arrivedAt: number) {
    let parsed: Record<string, unknown>;
    let body: ChatRequest;
    try {
      parsed = JSON.parse(raw) as Record<string, unknown>;
      body = api === "anthropic" ? anthropicToChat(parsed as AnthropicRequest) : (parsed as unknown as ChatRequest);
    } catch {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: "invalid JSON", type: "invalid_request_error" } }));
      return;
    }
    if (!Array.isArray(body.messages)) body.messages = [];
    const kind = kindOf(body);
    const prompt = promptForCache(api, parsed);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") headers[name] = value;
    const record: RecordedRequest = {
      index: requests.length,
      body,
      raw,
      api,
      headers,
      cache: {
        promptChars: prompt.length,
        promptTokens: 0,
        sharedPrefixTokens: prefixCache.read(prompt, String(parsed.model ?? "")) * CACHE_BLOCK_TOKENS,
        cachedTokens: 0,
      },
      kind,
      label: "",
      at: arrivedAt,
      toolCallIds: [],
      aborted: false,
      done: false,
    };
    requests.push(record);

    const ac = new AbortController();
    const onClose = () => {
      if (!record.done) {
        record.aborted = true;
        record.done = true;
      }
      ac.abort();
    };
    res.on("close", onClose);

    let chosen: { label: string; reply: Reply };
    try {
      chosen = await choose(body, kind);
    } catch (err) {
      chosen = { label: "error", reply: { httpError: { status: 500, message: `scripted reply threw: ${String(err)}` } } };
    }
    record.label = chosen.label;
    const reply = chosen.reply;
    record.reply = reply;
    const toolCalls = (reply.toolCalls ?? []).map((tc) => ({
      id: tc.id ?? `call_${++callSeq}`,
      name: tc.name,
      arguments: JSON.stringify(tc.arguments ?? {}),
    }));
    record.toolCallIds = toolCalls.map((t) => t.id);
    notify(record);

    if (ac.signal.aborted) return;

    if (reply.httpError) {
      await sleep(reply.delayMs ?? 0, ac.signal);
      if (ac.signal.aborted) return;
      res.writeHead(reply.httpError.status, { "content-type": "application/json" });
      res.end(
        JSON.stringify(
          api === "anthropic"
            ? { type: "error", error: { type: "api_error", message: reply.httpError.message } }
            : { error: { message: reply.httpError.message, type: "scripted_error", code: null } },
        ),
      );
      record.done = true;
      return;
    }

    const usage: Usage = {
      ...DEFAULT_USAGE,
      ...(options.promptTokens === "estimate" ? { prompt_tokens: Math.ceil(prompt.length / CHARS_PER_TOKEN) } : {}),
      ...(reply.usage ?? {}),
    };
    if (options.promptTokens === "estimate" || (reply.usage && reply.usage.total_tokens === undefined)) {
      usage.total_tokens = (usage.prompt_tokens ?? 0) + (usage.completion_tokens ?? 0);
    }
    const promptTokens = usage.prompt_tokens ?? 0;
    const cachedTokens = options.prefixCache ? Math.min(record.cache.sharedPrefixTokens, promptTokens) : 0;
    record.cache = { ...record.cache, promptTokens, cachedTokens };
    if (api === "anthropic") return streamAnthropic(res, ac.signal, record, reply, toolCalls, { ...usage, cachedTokens });
    if (cachedTokens > 0 && usage.prompt_tokens_details === undefined) usage.prompt_tokens_details = { cached_tokens: cachedTokens };

    const finishReason = reply.finishReason ?? (toolCalls.length ? "tool_calls" : "stop");
    const id = `chatcmpl-${record.index}`;
    const created = Math.floor(Date.now() / 1000);
    const model = body.model ?? "mock-model";

    if (!body.stream) {
      await sleep(reply.delayMs ?? 0, ac.signal);
      if (ac.signal.aborted) return;
      const message: Record<string, unknown> = { role: "assistant", content: reply.text ?? (toolCalls.length ? null : "") };
      if (toolCalls.length) {
        message.tool_calls = toolCalls.map((t) => ({ id: t.id, type: "function", function: { name: t.name, arguments: t.arguments } }));
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          id,
          object: "chat.completion",
          created,
          model,
          choices: [{ index: 0, message, finish_reason: finishReason }],
          usage,
        }),
      );
      record.done = true;
      return;
    }

    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
    });
    res.flushHeaders();
    if (reply.emptyStream) {
      record.done = true;
      res.end();
      return;
    }
    const write = (obj: unknown): boolean => {
      if (ac.signal.aborted || res.destroyed) return false;
      res.write(`data: ${JSON.stringify(obj)}\n\n`);
      return true;
    };
    const chunk = (delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}) => ({
      id,
      object: "chat.completion.chunk",
      created,
      model,
      choices: [{ index: 0, delta, finish_reason: finish }],
      ...extra,
    });

    if (!write(chunk({ role: "assistant", content: "" }))) return;
    await sleep(reply.delayMs ?? 0, ac.signal);
    const gap = reply.chunkDelayMs ?? 0;
    let first = true;
    const pause = async () => {
      if (!first) await sleep(gap, ac.signal);
      first = false;
      return !ac.signal.aborted;
    };
    if (reply.text) {
      for (const piece of chunkText(reply.text)) {
        if (!(await pause())) return;
        if (!write(chunk({ content: piece }))) return;
      }
    }
    for (let i = 0; i < toolCalls.length; i++) {
      const t = toolCalls[i]!;
      if (!(await pause())) return;
      if (!write(chunk({ tool_calls: [{ index: i, id: t.id, type: "function", function: { name: t.name, arguments: "" } }] }))) return;
      // Arguments in two pieces, as real providers stream them.
      const half = Math.ceil(t.arguments.length / 2);
      for (const piece of [t.arguments.slice(0, half), t.arguments.slice(half)]) {
        if (!piece) continue;
        if (!write(chunk({ tool_calls: [{ index: i, function: { arguments: piece } }] }))) return;
      }
    }
    if (!(await pause())) return;
    if (!write(chunk({}, finishReason, { usage }))) return;
    res.write("data: [DONE]\n\n");
    record.done = true;
    res.end();
  }

  /** Streams a reply as the Anthropic Messages API does (the events @ai-sdk/anthropic reads). */
  async function streamAnthropic(
    res: http.ServerResponse,
    signal: AbortSignal,
    record: RecordedRequest,
    reply: Reply,
    toolCalls: { id: string; name: string; arguments: string }[],
    usage: Usage & { cachedTokens: number },
  ) {
    const stopReason = reply.finishReason ?? (toolCalls.length ? "tool_use" : "end_turn");
    const message = {
      id: `msg_${record.index}`,
      type: "message",
      role: "assistant",
      model: record.body.model ?? "mock-model",
      content: [] as unknown[],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        // Anthropic's input_tokens are the uncached part of the prompt
        input_tokens: Math.max(0, (usage.prompt_tokens ?? 0) - usage.cachedTokens),
        cache_read_input_tokens: usage.cachedTokens,
        cache_creation_input_tokens: 0,
        output_tokens: 1,
      },
    };
    if (!record.body.stream) {
      await sleep(reply.delayMs ?? 0, signal);
      if (signal.aborted) return;
      const content: unknown[] = [];
      if (reply.text) content.push({ type: "text", text: reply.text });
      for (const t of toolCalls) content.push({ type: "tool_use", id: t.id, name: t.name, input: JSON.parse(t.arguments) });
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ ...message, content, stop_reason: stopReason, usage: { ...message.usage, output_tokens: usage.completion_tokens ?? 0 } }));
      record.done = true;
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    res.flushHeaders();
    const send = (event: string, data: Record<string, unknown>): boolean => {
      if (signal.aborted || res.destroyed) return false;
      res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
      return true;
    };
    if (!send("message_start", { message })) return;
    await sleep(reply.delayMs ?? 0, signal);
    const gap = reply.chunkDelayMs ?? 0;
    let first = true;
    const pause = async () => {
      if (!first) await sleep(gap, signal);
      first = false;
      return !signal.aborted;
    };
    let index = 0;
    if (reply.text) {
      if (!send("content_block_start", { index, content_block: { type: "text", text: "" } })) return;
      for (const piece of chunkText(reply.text)) {
        if (!(await pause())) return;
        if (!send("content_block_delta", { index, delta: { type: "text_delta", text: piece } })) return;
      }
      if (!send("content_block_stop", { index })) return;
      index++;
    }
    for (const t of toolCalls) {
      if (!(await pause())) return;
      if (!send("content_block_start", { index, content_block: { type: "tool_use", id: t.id, name: t.name, input: {} } })) return;
      const half = Math.ceil(t.arguments.length / 2);
      for (const piece of [t.arguments.slice(0, half), t.arguments.slice(half)]) {
        if (piece && !send("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: piece } })) return;
      }
      if (!send("content_block_stop", { index })) return;
      index++;
    }
    if (!(await pause())) return;
    if (!send("message_delta", { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: usage.completion_tokens ?? 0 } })) return;
    if (!send("message_stop", {})) return;
    record.done = true;
    res.end();
  }

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (req.method === "GET" && /\/models\/?$/.test(url.pathname)) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ object: "list", data: [{ id: "mock-model", object: "model", owned_by: "scripted" }] }));
      return;
    }
    const api: ModelApi | undefined =
      req.method !== "POST"
        ? undefined
        : /\/chat\/completions\/?$/.test(url.pathname)
          ? "openai"
          : /\/messages\/?$/.test(url.pathname)
            ? "anthropic"
            : undefined;
    if (api) {
      const arrivedAt = Date.now();
      const bufs: Buffer[] = [];
      req.on("data", (b: Buffer) => bufs.push(b));
      req.on("end", () => {
        handleCompletion(req, res, Buffer.concat(bufs).toString("utf8"), api, arrivedAt).catch((err) => {
          if (!res.headersSent) {
            res.writeHead(500, { "content-type": "application/json" });
            res.end(JSON.stringify({ error: { message: String(err) } }));
          } else res.destroy();
        });
      });
      return;
    }
    res.writeHead(404, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message: `no route ${req.method} ${url.pathname}` } }));
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    api: options.api ?? "openai",
    port,
    requests,
    script(rule: Rule): ScriptHandle {
      const s: StoredRule = { rule, seq: ++seq, used: 0, removed: false };
      rules.push(s);
      return {
        get count() {
          return s.used;
        },
        remove() {
          s.removed = true;
          rules = rules.filter((r) => r !== s);
        },
      };
    },
    reset() {
      rules = [];
      requests.length = 0;
      prefixCache.clear();
    },
    chatRequests() {
      return requests.filter((r) => r.kind === "chat");
    },
    waitForRequest(predicate, timeoutMs = 15_000) {
      const found = requests.find((r) => {
        try {
          return r.label !== "" && predicate(r);
        } catch {
          return false;
        }
      });
      if (found) return Promise.resolve(found);
      return new Promise<RecordedRequest>((resolve, reject) => {
        const w = {
          pred: predicate,
          resolve: (r: RecordedRequest) => {
            clearTimeout(timer);
            resolve(r);
          },
        };
        const timer = setTimeout(() => {
          waiters.delete(w);
          reject(new Error(`scripted model: no matching request within ${timeoutMs} ms (got ${requests.length}: ${requests.map((r) => r.label).join(", ")})`));
        }, timeoutMs);
        waiters.add(w);
      });
    },
    close() {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// OpenCode-shaped test data, modelled on test/fixtures/session.messages.*.json (opencode 1.18.33).
// A History hands out ascending ids like the server does, so builders stay deterministic.

import type { AssistantMessage, Part, ToolPart, UserMessage } from "@opencode-ai/sdk/v2";
import type { SessionMessage } from "../../../src/fork/types.js";

const SESSION_ID = "ses_dfeeec2b2ffe2nrfB6vKOGw7i4";
const BASE_TIME = 1795314236861;

type PartSpec = string | { text: string; synthetic?: boolean; ignored?: boolean } | Omit<Part, "id" | "sessionID" | "messageID">;

export interface ToolSpec {
  tool: string;
  input?: Record<string, unknown>;
  output?: string;
  error?: string;
  status?: "pending" | "running" | "completed" | "error";
  metadata?: Record<string, unknown>;
  compacted?: boolean;
  callID?: string;
}

export class History {
  readonly messages: SessionMessage[] = [];
  private seq = 0;
  private calls = 0;
  private lastUser: SessionMessage | undefined;

  private nextId(prefix: "msg" | "prt"): string {
    this.seq++;
    // msg_/prt_ + 12 hex-ish chars + 14 chars, sortable like OpenCode's ascending ids
    return `${prefix}_${(0x201113dbd000 + this.seq).toString(16)}${String(this.seq).padStart(14, "0")}`;
  }

  private time(): number {
    return BASE_TIME + this.seq * 100;
  }

  private makeParts(messageID: string, specs: readonly PartSpec[]): Part[] {
    return specs.map((spec) => {
      const base = { id: this.nextId("prt"), sessionID: SESSION_ID, messageID };
      if (typeof spec === "string") return { ...base, type: "text", text: spec } as Part;
      if (!("type" in spec)) return { ...base, type: "text", ...spec } as Part;
      return { ...base, ...spec } as Part;
    });
  }

  /** A user message (text by default); returns it. */
  user(...parts: PartSpec[]): SessionMessage {
    const id = this.nextId("msg");
    const info: UserMessage = {
      id,
      sessionID: SESSION_ID,
      role: "user",
      time: { created: this.time() },
      summary: { diffs: [] },
      agent: "build",
      model: { providerID: "mock", modelID: "mock-model" },
    };
    const message = { info, parts: this.makeParts(id, parts) };
    this.messages.push(message);
    this.lastUser = message;
    return message;
  }

  /** An assistant message answering the latest user message; wraps parts in step-start/step-finish. */
  assistant(parts: PartSpec[], extra: Partial<AssistantMessage> & { steps?: boolean } = {}): SessionMessage {
    const { steps = true, ...overrides } = extra;
    const id = this.nextId("msg");
    const parent = this.lastUser; // kept, not searched: histories of 100,000 messages are built in tests
    const info: AssistantMessage = {
      id,
      sessionID: SESSION_ID,
      role: "assistant",
      time: { created: this.time(), completed: this.time() + 50 },
      parentID: parent?.info.id ?? "msg_none",
      modelID: "mock-model",
      providerID: "mock",
      mode: "build",
      agent: "build",
      path: { cwd: "/home/dev/project", root: "/home/dev/project" },
      cost: 0,
      tokens: { total: 120, input: 100, output: 20, reasoning: 0, cache: { read: 0, write: 0 } },
      finish: "stop",
      ...overrides,
    };
    const snapshot = "7c99a8aaf892c2c055ec9d5e4eeb35d311441d4f";
    const specs: PartSpec[] = steps
      ? [
          { type: "step-start", snapshot } as PartSpec,
          ...parts,
          { type: "step-finish", reason: info.finish ?? "stop", snapshot, cost: 0, tokens: info.tokens } as PartSpec,
        ]
      : parts;
    const message = { info, parts: this.makeParts(id, specs) };
    this.messages.push(message);
    return message;
  }

  /** A tool part spec (use inside assistant([...])). */
  tool(spec: ToolSpec): PartSpec {
    const callID = spec.callID ?? `call_${++this.calls}`;
    const input = spec.input ?? {};
    const start = this.time();
    const status = spec.status ?? (spec.error !== undefined ? "error" : "completed");
    let state: ToolPart["state"];
    if (status === "pending") state = { status, input, raw: JSON.stringify(input) };
    else if (status === "running") state = { status, input, time: { start } };
    else if (status === "error") state = { status, input, error: spec.error ?? "failed", time: { start, end: start + 5 } };
    else
      state = {
        status,
        input,
        output: spec.output ?? "",
        title: spec.tool,
        metadata: spec.metadata ?? {},
        time: { start, end: start + 5, ...(spec.compacted ? { compacted: start + 1000 } : {}) },
      };
    return { type: "tool", callID, tool: spec.tool, state } as PartSpec;
  }

  /** The user message OpenCode appends to request a compaction. */
  compactionRequest(tailStartId?: string): SessionMessage {
    return this.user({ type: "compaction", auto: true, ...(tailStartId ? { tail_start_id: tailStartId } : {}) } as PartSpec);
  }

  /** The summary answering the latest compaction request. */
  summary(text: string, extra: Partial<AssistantMessage> = {}): SessionMessage {
    return this.assistant([text], { summary: true, mode: "compaction", agent: "compaction", ...extra });
  }

  /** A user turn with one text and an assistant answering with text. */
  turn(userText: string, answer: string): void {
    this.user(userText);
    this.assistant([answer]);
  }
}

/** A string of exactly `length` chars built from a repeated pattern (ASCII unless given otherwise). */
export function sized(length: number, pattern = "abcdefghij"): string {
  return pattern.repeat(Math.ceil(length / pattern.length)).slice(0, length);
}

/** True when the text holds a UTF-16 surrogate without its partner. */
export function hasLoneSurrogate(text: string): boolean {
  return /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);
}

/** `{data}` of a recorded fixture. */
export function fixtureMessages(json: { data: SessionMessage[] }): SessionMessage[] {
  return json.data;
}

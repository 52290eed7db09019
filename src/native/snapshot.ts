// The parent's context at the moment it called background_task, taken from the tool context.
//
// `ctx.messages` is the array OpenCode's loop built for the request that produced the tool call
// (chunk-p1c43e92: the tools are resolved with `messages: C`, then
// `experimental.chat.messages.transform({}, { messages: C })` runs on the same array, then C is
// converted to the model request). So it holds exactly what the parent's model saw: the compacted
// view, in-memory reminders and other plugins' transforms included, and not the assistant message
// that is making the call. `session.messages` would give the stored history instead.

import type { AssistantMessage, Message, UserMessage } from "../host/types.js";
import type { SessionMessage } from "../fork/types.js";

export interface Snapshot {
  /**
   * The deep copy of ctx.messages, serialised: later changes to the parent do not reach it. It is
   * what the fork file holds, and each request gets its own objects from it (JSON.parse), which is
   * cheaper than structuredClone of the objects and keeps one string in memory per fork.
   * Serialised on first use, not at the tool call (see takeSnapshot).
   */
  readonly json: string;
  /** how many messages it holds */
  readonly count: number;
  /** each message's JSON: `json` is `[${parts.join(",")}]` (the fork file stores them by content) */
  readonly parts: string[];
}

/** The messages OpenCode put into the tool context, if it did (untyped at run time). */
export function contextMessages(ctx: unknown): SessionMessage[] | undefined {
  const messages = (ctx as { messages?: unknown }).messages;
  if (!Array.isArray(messages)) return undefined;
  return messages.every((m) => m && typeof m === "object" && "info" in m && Array.isArray((m as SessionMessage).parts))
    ? (messages as SessionMessage[])
    : undefined;
}

/**
 * The parent's request messages, to be serialised on first use: the tool call only keeps the array.
 * Nothing proportional to the parent's history runs on the tool call's path: the copy is made when
 * the fork file is written or the child's first request needs it, both after the launch returned.
 * Keeping the array until then is safe: OpenCode builds a new array (of new objects, read from its
 * storage) for the parent's next step and never changes this one after the tool call. Once
 * serialised, the array is let go.
 */
export function takeSnapshot(messages: readonly SessionMessage[]): Snapshot {
  let source: readonly SessionMessage[] | undefined = messages;
  let parts: string[] | undefined;
  let json: string | undefined;
  const serialised = (): string[] => {
    if (!parts) {
      parts = source!.map((m) => JSON.stringify(m));
      source = undefined;
    }
    return parts;
  };
  return {
    count: messages.length,
    get parts() {
      return serialised();
    },
    get json() {
      json ??= `[${serialised().join(",")}]`;
      return json;
    },
  };
}

export function lastUser(messages: readonly SessionMessage[]): UserMessage | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const info = messages[i]!.info as Message;
    if (info.role === "user") return info;
  }
  return undefined;
}

function isFinishedAssistant(info: Message): info is AssistantMessage {
  return info.role === "assistant" && Boolean(info.finish) && !info.error;
}

/**
 * How many tokens the snapshot takes in the child's prompt: the context of the parent's last
 * finished step (its input, cache reads and writes, and its output, which is part of the
 * snapshot), plus ~4 chars per token for what came after it (tool results, new user text).
 * Without a finished step (first turn) the whole snapshot is estimated from its characters.
 */
export function estimateTokens(messages: readonly SessionMessage[]): number {
  for (let i = messages.length - 1; i >= 0; i--) {
    const info = messages[i]!.info as Message;
    if (!isFinishedAssistant(info)) continue;
    const t = info.tokens;
    const base = (t?.input ?? 0) + (t?.output ?? 0) + (t?.reasoning ?? 0) + (t?.cache?.read ?? 0) + (t?.cache?.write ?? 0);
    let after = 0;
    for (let j = i + 1; j < messages.length; j++) after += JSON.stringify(messages[j]!.parts).length;
    return base + Math.ceil(after / 4);
  }
  return Math.ceil(JSON.stringify(messages).length / 4);
}

/** The child has a finished compaction of its own: its summary covers the inherited context. */
export function hasFinishedCompaction(messages: readonly SessionMessage[]): boolean {
  return messages.some((m) => {
    const info = m.info as Message;
    return info.role === "assistant" && info.summary === true && Boolean(info.finish) && !info.error;
  });
}

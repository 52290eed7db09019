/** Small readers for `session.messages` results and session waits. */
import type { OpencodeClient } from "@opencode-ai/sdk";
import type { EventCollector } from "./opencode.js";

/** `{ info, parts }` as the server sends it (loosely typed: the v1 types lag the server). */
export interface MessageWithParts {
  info: Record<string, any> & { id: string; sessionID: string; role: "user" | "assistant" };
  parts: (Record<string, any> & { id: string; type: string })[];
}

/** All messages of a session (throws on HTTP error). */
export async function getMessages(client: OpencodeClient, sessionID: string): Promise<MessageWithParts[]> {
  const r = await client.session.messages({ path: { id: sessionID } });
  if (r.error || !r.data) throw new Error(`session.messages(${sessionID}) failed: ${JSON.stringify(r.error)}`);
  return r.data as unknown as MessageWithParts[];
}

/** Every `type: "tool"` part, in order. */
export function toolParts(messages: MessageWithParts[], tool?: string) {
  return messages.flatMap((m) => m.parts).filter((p) => p.type === "tool" && (tool === undefined || p.tool === tool));
}

/** Concatenated text parts of a message. */
export function textOf(m: MessageWithParts): string {
  return m.parts
    .filter((p) => p.type === "text")
    .map((p) => p.text as string)
    .join("");
}

/** Resolve when `session.idle` arrives for the session (after `since`, see EventCollector.mark). */
export function waitIdle(ev: EventCollector, sessionID: string, opts: { since?: number; timeoutMs?: number } = {}) {
  return ev.waitFor((e) => e.type === "session.idle" && e.properties.sessionID === sessionID, opts.timeoutMs ?? 15_000, { since: opts.since });
}

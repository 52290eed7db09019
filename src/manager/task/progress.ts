// What a running task has done so far, read from its child's messages: its last activity (and the
// tool behind it), its tool calls, and its latest text. Pure: background_output reads the messages
// and prints this (tools/background-output.txt.ts runningProgress), so a parent can tell a slow task from a stuck one.

import type { SessionMessage } from "../../fork/types.js";

export interface RunProgress {
  /** when the child last did something in this run (ms): a step of its model, a tool call, text */
  lastActivityAt?: number;
  /** the latest tool call of this run */
  lastTool?: { tool: string; title: string; status: string };
  /** tool calls of this run */
  toolCalls: number;
  /** the latest text the child's model wrote in this run */
  latestText?: string;
}

const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) && v > 0 ? v : undefined);

/** One line naming what a tool call works on, when it has no title yet. */
function inputSummary(input: unknown): string {
  if (!input || typeof input !== "object") return "";
  const o = input as Record<string, unknown>;
  for (const key of ["description", "filePath", "command", "pattern", "url", "path", "query"])
    if (typeof o[key] === "string" && o[key]) return o[key] as string;
  return "";
}

/** The progress of the run that started at `since` (its messages are those created since then). One pass. */
export function readProgress(messages: readonly SessionMessage[], since: number): RunProgress {
  const progress: RunProgress = { toolCalls: 0 };
  let latest = 0;
  const seen = (t: unknown) => {
    const n = num(t);
    if (n !== undefined && n > latest) latest = n;
  };
  for (const message of messages) {
    const info = message?.info as { role?: string; time?: { created?: number; completed?: number } } | undefined;
    if (!info || (info.time?.created ?? 0) < since || info.role !== "assistant") continue; // (a prompt is not the child's activity)
    seen(info.time?.created);
    seen(info.time?.completed);
    for (const part of Array.isArray(message.parts) ? message.parts : []) {
      if (part?.type === "tool") {
        const state = part.state as { status?: string; title?: string; input?: unknown; time?: { start?: number; end?: number } };
        progress.toolCalls += 1;
        progress.lastTool = { tool: part.tool, title: state?.title || inputSummary(state?.input), status: state?.status ?? "pending" };
        seen(state?.time?.start);
        seen(state?.time?.end);
      } else if (part?.type === "text" && !part.synthetic && !part.ignored && typeof part.text === "string" && part.text.trim()) {
        progress.latestText = part.text;
        seen((part.time as { start?: number; end?: number } | undefined)?.start);
        seen((part.time as { start?: number; end?: number } | undefined)?.end);
      }
    }
  }
  if (latest) progress.lastActivityAt = latest;
  return progress;
}

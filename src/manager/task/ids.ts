import { randomBytes } from "node:crypto";
import { TASK_ID_LENGTH } from "../../constants.js";
import type { BackgroundTask } from "../../task-record.js";

const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";
export const TASK_ID_PREFIX = "bg_";

export function newTaskId(taken: (id: string) => boolean): string {
  for (;;) {
    const bytes = randomBytes(TASK_ID_LENGTH);
    let id = TASK_ID_PREFIX;
    for (const b of bytes) id += ALPHABET[b % ALPHABET.length];
    if (!taken(id)) return id;
  }
}

export type Resolution = { kind: "found"; task: BackgroundTask } | { kind: "unknown" } | { kind: "ambiguous"; candidates: BackgroundTask[] };

/**
 * Accepts a full id, a unique prefix (with or without "bg_"), or the child session id.
 * Never guesses: two matches are reported as ambiguous.
 */
export function resolveTaskId(query: string, tasks: readonly BackgroundTask[]): Resolution {
  const q = query.trim().toLowerCase();
  if (!q) return { kind: "unknown" };
  const exact = tasks.find((t) => t.id === q || t.sessionID.toLowerCase() === q);
  if (exact) return { kind: "found", task: exact };
  const withPrefix = q.startsWith(TASK_ID_PREFIX) ? q : TASK_ID_PREFIX + q;
  const matches = tasks.filter((t) => t.id.startsWith(withPrefix));
  if (matches.length === 1) return { kind: "found", task: matches[0]! };
  if (matches.length > 1) return { kind: "ambiguous", candidates: matches };
  return { kind: "unknown" };
}

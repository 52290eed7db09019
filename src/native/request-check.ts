// Whether a native child's first request really started with its parent's system prompt, byte for
// byte, as the provider was sent it, after every plugin's `experimental.chat.system.transform`.
//
// OpenCode (LLMRequestPrep.prepare) hands every plugin the same `system` array, transforms it in
// place, then calls `chat.params`: so our chat.params hook reads the system prompt exactly as sent
// (joined with "\n", which OpenCode's own merge of its parts keeps). Per request:
// - `sawSystem` (our system transform): the array, and its text as ours left it;
// - `sentSystem` (our chat.params): the text as sent; remembered as the session's last (bounded);
//   for a native child's first request, compared with its parent's at launch (`expectSystem`).
// A difference is kept for the child's receipt (`systemDifference`): where it starts, and whether a
// plugin listed after ours made it (the two texts as ours left them were equal).
// Memory: one system text per session for the last LAST_MAX sessions, one per native child until
// its first request, one line per child for the last FOUND_MAX differences; nothing is stored on disk (a restart forgets a pending check: no check then).

import { oneLine } from "../text.js";

/** How many sessions' last system prompts are kept (a launch reads its parent's). */
const LAST_MAX = 32;
/** How many children's differences are kept (each is read when the child's first message ends). */
const FOUND_MAX = 256;
/** Characters shown around the first difference. */
const AROUND = 40;

/** A request's system prompt as sent, and as it was when our transform saw it. */
interface Seen {
  sent: string;
  ours: string;
}

interface State {
  seen: Map<string, { system: string[]; ours: string }>;
  last: Map<string, Seen>;
  expected: Map<string, Seen>;
  found: Map<string, string>;
  /** the plugins listed after ours, as last read (coexist/tool-names.ts) */
  after: readonly string[];
}

const KEY = Symbol.for("opencode-offshoot.request-check");
function state(): State {
  const g = globalThis as unknown as Record<symbol, State | undefined>;
  return (g[KEY] ??= { seen: new Map(), last: new Map(), expected: new Map(), found: new Map(), after: [] });
}

/** The plugins listed after ours (named in a difference ours did not make). */
export function setPluginsAfterOurs(names: readonly string[]): void {
  state().after = names;
}

/** Our system transform saw this request's system array (after our own change to it, if any). */
export function sawSystem(sessionID: string, system: string[]): void {
  const seen = state().seen;
  seen.set(sessionID, { system, ours: system.join("\n") });
  // (a request that failed between the two hooks leaves its entry: bounded)
  if (seen.size > LAST_MAX) seen.delete(seen.keys().next().value!);
}

/** Our chat.params: the request's system prompt is now as sent. */
export function sentSystem(sessionID: string): void {
  const s = state();
  const seen = s.seen.get(sessionID);
  if (!seen) return;
  s.seen.delete(sessionID);
  const now: Seen = { sent: seen.system.join("\n"), ours: seen.ours };
  s.last.delete(sessionID);
  s.last.set(sessionID, now);
  if (s.last.size > LAST_MAX) s.last.delete(s.last.keys().next().value!);
  const parent = s.expected.get(sessionID);
  if (parent === undefined) return;
  s.expected.delete(sessionID);
  const at = firstDifference(parent.sent, now.sent);
  if (at === -1) return;
  // the same where ours saw it: a plugin whose hook runs after ours made the difference
  s.found.set(sessionID, describeDifference(parent.sent, now.sent, at, now.ours === parent.ours ? s.after : undefined));
  if (s.found.size > FOUND_MAX) s.found.delete(s.found.keys().next().value!);
}

/** A native child was launched from `parentID`'s last request: its first request is checked against it. */
export function expectSystem(childID: string, parentID: string): void {
  const s = state();
  const parent = s.last.get(parentID);
  if (parent !== undefined) s.expected.set(childID, parent);
}

/** The difference found in a native child's first request, if any. */
export function systemDifference(childID: string): string | undefined {
  return state().found.get(childID);
}

/** The first index where two texts differ; -1 when equal. Linear. */
export function firstDifference(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a.charCodeAt(i) !== b.charCodeAt(i)) return i;
  return a.length === b.length ? -1 : n;
}

/**
 * "the system prompt differed from your request's at character 9866 of 12007 (yours: "…", the child's: "…")",
 * then who changed it: a plugin listed after this one when ours left it matching (`after`), else not known.
 */
export function describeDifference(parent: string, child: string, at: number, after: readonly string[] | undefined): string {
  const show = (text: string) => JSON.stringify(oneLine(text.slice(Math.max(0, at - 10), at + AROUND), AROUND + 10).text);
  const where = `the system prompt differed from your request's at character ${at} of ${parent.length} (yours: ${show(parent)}, the child's: ${show(child)})`;
  if (after === undefined) return `${where}; it was already different when this plugin saw it (OpenCode's own prompt, or a plugin listed before this one)`;
  return `${where}; changed after this plugin by a plugin listed after it${after.length ? ` (${after.join(", ")})` : ""}`;
}

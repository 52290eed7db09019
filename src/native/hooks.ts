// The hooks that make a native child's requests start with its parent's request:
// - experimental.chat.messages.transform prepends the snapshot to the child's messages (in place:
//   OpenCode ignores the hook's return value and converts its own array), in the loop and in the
//   child's compaction request, until the child has a finished compaction of its own;
// - chat.params / chat.headers key the prompt cache and the affinity headers to the fork's root.
// Every hook swallows its errors: a failure costs the cache, never the request.

import type { SessionMessage } from "../fork/types.js";
import type { NativeForkLookup } from "./registry.js";
import { hasFinishedCompaction } from "./snapshot.js";

type Log = (message: string) => void;

/** The session-keyed options OpenCode sets from the session id (chunk-dn9bw1yz ProviderTransform.options). */
const CACHE_KEY_OPTIONS = ["promptCacheKey", "prompt_cache_key"] as const;
/** Affinity headers OpenCode sets to the session id (LLMRequestPrep.prepare). */
const AFFINITY_HEADERS = ["x-session-affinity", "X-Session-Id"] as const;
const OPENCODE_AFFINITY_HEADERS = ["x-opencode-session"] as const;

function sessionOf(messages: readonly SessionMessage[]): string | undefined {
  for (const m of messages) {
    const id = (m?.info as { sessionID?: unknown } | undefined)?.sessionID;
    if (typeof id === "string" && id) return id;
  }
  return undefined;
}

/** Puts `prefix` in front of `messages`, in place and in linear time (no argument-count limits). */
function prependInPlace<T>(messages: T[], prefix: readonly T[]): void {
  const own = messages.slice();
  messages.length = 0;
  for (const m of prefix) messages.push(m);
  for (const m of own) messages.push(m);
}

export function createNativeForkHooks(lookup: NativeForkLookup, log: Log) {
  return {
    "experimental.chat.messages.transform": async (_input: unknown, output: { messages: unknown[] }) => {
      try {
        const messages = output?.messages as SessionMessage[] | undefined;
        if (!Array.isArray(messages) || messages.length === 0) return;
        const sessionID = sessionOf(messages);
        if (!sessionID) return;
        const fork = await lookup.find(sessionID);
        if (!fork) return;
        // The child's own summary (when it has one) already covers what it inherited.
        if (hasFinishedCompaction(messages)) return;
        // A fresh copy per request: later hooks and OpenCode may change what they are handed.
        prependInPlace(messages, fork.messages());
      } catch (error) {
        log(`native fork: prepending the inherited context failed: ${(error as Error).message}`);
      }
    },

    "chat.params": async (input: { sessionID: string }, output: { options: Record<string, unknown> }) => {
      try {
        const fork = await lookup.find(input.sessionID);
        if (!fork || !output?.options) return;
        for (const key of CACHE_KEY_OPTIONS) {
          if (output.options[key] === input.sessionID) output.options[key] = fork.rootSessionID;
        }
      } catch (error) {
        log(`native fork: rewriting the cache key failed: ${(error as Error).message}`);
      }
    },

    "chat.headers": async (input: { sessionID: string; model?: { providerID?: string } }, output: { headers: Record<string, string> }) => {
      try {
        const fork = await lookup.find(input.sessionID);
        if (!fork || !output?.headers) return;
        const opencode = input.model?.providerID?.startsWith("opencode") ?? false;
        for (const name of opencode ? OPENCODE_AFFINITY_HEADERS : AFFINITY_HEADERS) output.headers[name] = fork.rootSessionID;
        // Headers other plugins keyed to this session (e.g. "session-id") follow the root too.
        for (const [name, value] of Object.entries(output.headers)) {
          if (value === input.sessionID) output.headers[name] = fork.rootSessionID;
        }
      } catch (error) {
        log(`native fork: rewriting the affinity headers failed: ${(error as Error).message}`);
      }
    },
  };
}

// A's side of the relay (../../remote-protocol.ts): one request at a time per relay session, written
// into its metadata (the rest of it kept: OpenCode replaces metadata whole), then its answer waited
// for by reading the session again. One at a time, because a second write before the first answer
// would overwrite it (and B's answer overwrites the request).

import { type RemoteTransport, RemoteCallError } from "../../host/remote.js";
import { RELAY_KEY, type RelayAnswer, type RelayRequest, relayAnswerOf } from "../../remote-protocol.js";
import { KeyedSerialQueue } from "../../serial-queue.js";

/** The requests of one relay session, one at a time (module state: a relay is one session on one remote). */
const relays = new KeyedSerialQueue();

/** How long each kind may take on the remote before its answer is given up on. */
export const ANSWER_WAIT_MS: Readonly<Record<RelayRequest["kind"], number>> = {
  // (a worktree made, its set-up command run: up to worktreeSetupTimeoutSeconds there, 300 s by default)
  launch: 360_000,
  resume: 360_000,
  cancel: 30_000,
  steer: 30_000,
  pause: 30_000,
  // (its prompt sent to its child there)
  continue: 60_000,
  push: 60_000,
  discard: 60_000,
};

export function requestId(kind: string): string {
  return `${kind}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 10)}`;
}

/** Writes the request into the relay session and waits for the remote's answer; throws a RemoteCallError when there is none. */
export function ask(
  transport: RemoteTransport,
  relay: string,
  root: string,
  request: RelayRequest,
  waitMs = ANSWER_WAIT_MS[request.kind],
): Promise<RelayAnswer> {
  return relays.post(`${transport.name}:${relay}`, async () => {
    const session = await transport.getSession(relay, root);
    const metadata = { ...(session.metadata ?? {}) };
    const current = metadata[RELAY_KEY] && typeof metadata[RELAY_KEY] === "object" ? (metadata[RELAY_KEY] as Record<string, unknown>) : {};
    await transport.updateMetadata(relay, root, { ...metadata, [RELAY_KEY]: { ...current, v: 1, request, answered: null } });
    const until = Date.now() + waitMs;
    let pause = 100;
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, pause));
      pause = Math.min(pause * 2, 1000);
      const now = await transport.getSession(relay, root);
      const answer = relayAnswerOf(now.metadata, request.id);
      if (answer) return answer;
      if (Date.now() > until)
        throw new RemoteCallError("unreachable", `remote "${transport.name}" did not answer the ${request.kind} request within ${Math.round(waitMs / 1000)}s`);
    }
  });
}

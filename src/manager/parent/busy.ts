// Whether a parent session is in a turn (busy) or idle, which decides whether a notice or a wake may
// go out (step.ts). Two sources speak about it, and can arrive out of order:
//   - events: `session.status` / `session.idle`, and what the plugin itself knows at the moment it
//     happens (a parent calling our tool is in a turn; a wake starts one);
//   - snapshots: the server's busy sessions (`session.status()`), read at start-up and by the reconcile.
//
// THE RULE, here and nowhere else: the newest information wins. An event always beats a snapshot that
// was requested before the event arrived; a snapshot only fills in parents no event has spoken about
// since it was requested (and beats only what was said before that). Every word is stamped with one
// counter (an event when it arrives, a snapshot when it is asked for: the parent's runner, notices.ts,
// keeps it), so a snapshot read while a user's turn starts can never overwrite the `busy` of that turn.
// A parent nobody has spoken about yet is not idle: nothing is delivered to it until something says it is.
// Pure: a parent's word goes in, its next word comes out.

/** The newest word on one parent, and the stamp it was said at. */
export interface BusyWord {
  readonly busy: boolean;
  readonly at: number;
}

/** The server's busy sessions, stamped with the moment they were asked for. */
export interface BusySnapshot {
  readonly busy: ReadonlyMap<string, unknown> | ReadonlySet<string>;
  readonly requestedAt: number;
}

/** What the snapshot says about the parent, unless newer information was recorded (then undefined: not taken). */
export function filled(word: BusyWord | undefined, parent: string, snapshot: BusySnapshot): BusyWord | undefined {
  if (word && word.at > snapshot.requestedAt) return undefined;
  return { busy: snapshot.busy.has(parent), at: snapshot.requestedAt };
}

/** The plugin's own busy mark `stamp` did not happen (a wake that failed): idle again, unless something newer was said since. */
export function undone(word: BusyWord | undefined, stamp: number): BusyWord | undefined {
  return word?.at === stamp ? { busy: false, at: stamp } : word;
}

export function isIdle(word: BusyWord | undefined): boolean {
  return word?.busy === false;
}

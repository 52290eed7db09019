// Whether a parent session is in a turn (busy) or idle, which decides whether a notice or a wake may
// go out (notices.ts). Two sources speak about it, and can arrive out of order:
//   - events: `session.status` / `session.idle`, and what the plugin itself knows at the moment it
//     happens (a parent calling our tool is in a turn; a wake starts one);
//   - snapshots: the server's busy sessions (`session.status()`), read at start-up and by the reconcile.
//
// THE RULE, here and nowhere else: the newest information wins. An event always beats a snapshot that
// was requested before the event arrived; a snapshot only fills in parents no event has spoken about
// since it was requested (and beats only what was said before that). Every word is stamped with one
// counter (an event when it arrives, a snapshot when it is asked for), so a snapshot read while a
// user's turn starts can never overwrite the `busy` of that turn. A parent nobody has spoken about yet
// is not idle: nothing is delivered to it until something says it is.

/** The server's busy sessions, stamped with the moment they were asked for. */
export interface BusySnapshot {
  readonly busy: ReadonlyMap<string, unknown> | ReadonlySet<string>;
  readonly requestedAt: number;
}

export class ParentBusy {
  private clock = 0;
  private readonly said = new Map<string, { busy: boolean; at: number }>();

  /** An event (or the plugin's own act) says the session is busy or idle now. Returns its stamp. */
  event(session: string, busy: boolean): number {
    const at = ++this.clock;
    this.said.set(session, { busy, at });
    return at;
  }

  /** The plugin's own busy mark `stamp` did not happen (a wake that failed): idle again, unless something newer was said since. */
  undo(session: string, stamp: number): void {
    if (this.said.get(session)?.at === stamp) this.said.set(session, { busy: false, at: stamp });
  }

  /** Reads a snapshot with `read`, stamped before the request goes out: events arriving meanwhile are newer. */
  async snapshot(read: () => Promise<BusySnapshot["busy"]>): Promise<BusySnapshot> {
    const requestedAt = ++this.clock;
    return { busy: await read(), requestedAt };
  }

  /** What the snapshot says about the parent, unless newer information was recorded. Returns whether it was taken. */
  fill(parent: string, snapshot: BusySnapshot): boolean {
    const known = this.said.get(parent);
    if (known && known.at > snapshot.requestedAt) return false;
    this.said.set(parent, { busy: snapshot.busy.has(parent), at: snapshot.requestedAt });
    return true;
  }

  isIdle(session: string): boolean {
    return this.said.get(session)?.busy === false;
  }

  /** A session that is gone: nothing about it is kept. */
  forget(session: string): void {
    this.said.delete(session);
  }
}

// The links to the remotes (option `remotes`): a transport per call (the password read from its
// variable each time, never kept), whether each remote was reached last time and why not, and its
// event stream while tasks of ours run there. The stream has no replay (../../host/remote.ts): every
// (re)connect is followed by a reading of each task's state there (follow.ts), and so is every tick
// of the manager's reconcile, so an event lost in a cut changes nothing.

import { type RemoteEndpoint, type RemoteEvent, type RemoteTransport, httpRemote } from "../../host/remote.js";
import type { RemoteOptions } from "../../options.js";

/** How a transport is made (the HTTP one; a test's fake; one day OpenCode's workspace adaptor). */
export type TransportFactory = (endpoint: RemoteEndpoint) => RemoteTransport;

/** Waits between two tries to open a remote's event stream: doubling from 1 s up to this. */
const STREAM_RETRY_MAX_MS = 15_000;

export interface LinkEvents {
  /** an event of the remote's stream */
  event(name: string, event: RemoteEvent): void;
  /** the remote's stream (re)connected: what it may have missed is read again */
  connected(name: string): void;
}

export class RemoteLinks {
  private readonly streams = new Map<string, AbortController>();
  private readonly lost = new Map<string, { since: number; why: string }>();

  constructor(
    private readonly remotes: () => Readonly<Record<string, RemoteOptions>>,
    private readonly events: LinkEvents,
    private readonly makeTransport: TransportFactory = httpRemote,
    private readonly now: () => number = Date.now,
  ) {}

  /** The remote's options, or undefined when there is none of that name. */
  optionsOf(name: string): RemoteOptions | undefined {
    const remotes = this.remotes();
    return Object.hasOwn(remotes, name) ? remotes[name] : undefined;
  }

  /** A transport to the remote, its password read from its variable now; or why there can be none. */
  transport(name: string): RemoteTransport | { error: string } {
    const options = this.optionsOf(name);
    if (!options) return { error: `there is no remote "${name}" in the plugin option "remotes" any more` };
    const password = process.env[options.passwordEnv];
    if (password === undefined)
      return {
        error: `the variable ${options.passwordEnv} (option remotes.${name}.passwordEnv) is not set in OpenCode's environment, so remote "${name}" cannot be logged into`,
      };
    return this.makeTransport({ name, url: options.url, ...(options.username ? { username: options.username } : {}), password });
  }

  /** The remote answered. */
  reached(name: string): void {
    this.lost.delete(name);
  }

  /** The remote could not be reached (the first time since it last answered is kept). */
  unreachable(name: string, why: string): void {
    const was = this.lost.get(name);
    this.lost.set(name, { since: was?.since ?? this.now(), why });
  }

  /** Why the remote is unreachable now, and since when; undefined while it answers. */
  lostSince(name: string): { since: number; why: string } | undefined {
    return this.lost.get(name);
  }

  /** Follows the remote's event stream while `wanted`; stops it otherwise. Never throws. */
  follow(name: string, wanted: boolean): void {
    const running = this.streams.get(name);
    if (!wanted) {
      running?.abort();
      this.streams.delete(name);
      return;
    }
    if (running) return;
    const abort = new AbortController();
    this.streams.set(name, abort);
    void this.stream(name, abort.signal);
  }

  /** Every stream stopped (the manager's dispose). */
  stopAll(): void {
    for (const abort of this.streams.values()) abort.abort();
    this.streams.clear();
  }

  private async stream(name: string, signal: AbortSignal): Promise<void> {
    let wait = 1000;
    while (!signal.aborted) {
      const transport = this.transport(name);
      if ("error" in transport) this.unreachable(name, transport.error);
      else {
        try {
          await transport.events(
            (event) => this.events.event(name, event),
            signal,
            () => {
              wait = 1000;
              this.reached(name);
              this.events.connected(name);
            },
          );
          if (!signal.aborted) this.unreachable(name, `remote "${name}" ended its event stream`);
        } catch (error) {
          this.unreachable(name, (error as Error).message);
        }
      }
      if (signal.aborted) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, wait);
        timer.unref?.();
        signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
      });
      wait = Math.min(wait * 2, STREAM_RETRY_MAX_MS);
    }
  }
}

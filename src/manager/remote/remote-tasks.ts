// This process's tasks that run on remotes (docs/remote.md), as the manager holds them: their launch
// (launch.ts), their following (follow.ts: on the remote's events, on each (re)connect, on each tick
// of the reconcile and at start-up, so a restart here reattaches to them), what is asked of them
// (actions.ts), and the clean-up of what an ended, taken or discarded one left there. The links to
// the remotes (links.ts) hold the only transport (../../host/remote.ts).

import { log } from "../../host/client.js";
import type { RemoteEvent } from "../../host/remote.js";
import type { ToolContext } from "../../host/types.js";
import { type BackgroundTask, isOpen } from "../../task-record.js";
import type { LaunchInput, ToolReply } from "../launch/launcher.js";
import { readProgress, type RunProgress } from "../task/progress.js";
import type { TaskEntry } from "../task/registry.js";
import { RemoteActions } from "./actions.js";
import { answerOf, checkRemote, remoteMessages } from "./follow.js";
import type { RemoteHost } from "./host.js";
import { launchRemote, startQueuedRemote } from "./launch.js";
import { RemoteLinks, type TransportFactory } from "./links.js";
import { REMOTE } from "./remote.txt.js";

export class RemoteTasks {
  readonly links: RemoteLinks;
  readonly actions: RemoteActions;
  /** tasks whose check is under way and must run again after it (an event came meanwhile) */
  private readonly again = new Set<string>();
  private readonly running = new Map<string, Promise<void>>();

  constructor(
    private readonly host: RemoteHost,
    makeTransport?: TransportFactory,
  ) {
    this.links = new RemoteLinks(
      () => host.options.remotes,
      { event: (name, event) => this.onEvent(name, event), connected: (name) => this.checkAll(name) },
      makeTransport,
      () => host.now(),
    );
    this.actions = new RemoteActions(host, this.links);
  }

  /** background_task({ remote }): the task launched there (launch.ts), then followed. */
  async launch(input: LaunchInput, ctx: ToolContext): Promise<ToolReply> {
    const reply = await launchRemote(this.host, { links: this.links, actions: this.actions }, input, ctx);
    this.follow();
    return reply;
  }

  /** A task that waited here for a slot of its remote, launched there now (launch.ts), then followed; undefined, or why not. */
  async startQueued(entry: TaskEntry): Promise<string | undefined> {
    const refused = await startQueuedRemote(this.host, { links: this.links, actions: this.actions }, entry);
    this.follow();
    return refused;
  }

  /** The remotes' event streams follow the remotes with open tasks of ours, and only those. */
  follow(): void {
    if (this.host.isDisposed) return;
    const wanted = new Set(this.remoteEntries().flatMap((e) => (isOpen(e.task.status) ? [e.task.remote!.name] : [])));
    for (const name of Object.keys(this.host.options.remotes)) this.links.follow(name, wanted.has(name));
  }

  /**
   * Every remote task read again (the reconcile's tick, start-up, a stream's (re)connect; `name`: that
   * remote's only): an open one's state there, an ended one's leftovers there removed if they are due.
   */
  async checkAll(name?: string): Promise<void> {
    if (this.host.isDisposed) return;
    const entries = this.remoteEntries().filter((e) => name === undefined || e.task.remote!.name === name);
    await Promise.all(entries.map((entry) => (isOpen(entry.task.status) ? this.check(entry) : this.cleanUpIfDue(entry))));
    this.follow();
  }

  /** THE check of one remote task (follow.ts), one at a time per task; one asked for during a check runs once more after it. */
  check(entry: TaskEntry): Promise<void> {
    const id = entry.task.id;
    const inFlight = this.running.get(id);
    if (inFlight) {
      this.again.add(id);
      return inFlight;
    }
    const run = async () => {
      do {
        this.again.delete(id);
        const reached = await entry.runtime.mailbox.post(() => checkRemote(this.host, this.links, entry, this.actions));
        const name = entry.task.remote?.name;
        if (name) {
          if (reached.reached) this.links.reached(name);
          else this.links.unreachable(name, reached.why);
        }
      } while (this.again.has(id) && isOpen(entry.task.status));
      await this.cleanUpIfDue(entry);
    };
    const done = run()
      .catch((error) => log(this.host.client, "warn", `offshoot: checking remote task ${id} failed: ${(error as Error).message}`))
      .finally(() => {
        this.running.delete(id);
        this.follow();
      });
    this.running.set(id, done);
    this.host.background(done);
    return done;
  }

  /** An ended task whose run left nothing to take (no change, or its branch refused) has its leftovers there removed. */
  private async cleanUpIfDue(entry: TaskEntry): Promise<void> {
    const { task } = entry;
    if (!task.remote || task.remote.cleaned || isOpen(task.status)) return;
    if (task.worktree?.removed || task.remote.refused) await this.actions.cleanUp(entry);
  }

  /** An event of the remote's stream: the task whose child it concerns is read again. */
  private onEvent(name: string, event: RemoteEvent): void {
    const props = event.payload.properties ?? {};
    const info = props.info as { id?: unknown; sessionID?: unknown } | undefined;
    const part = props.part as { sessionID?: unknown } | undefined;
    const sessionID = props.sessionID ?? info?.sessionID ?? part?.sessionID ?? (event.payload.type.startsWith("session.") ? info?.id : undefined);
    if (typeof sessionID !== "string") return;
    // (what changes its state there: its metadata published, its waits, its status)
    if (!/^(session\.(updated|status|idle|deleted|error)|permission\.|question\.)/.test(event.payload.type)) return;
    const entry = this.remoteEntries().find((e) => e.task.remote!.name === name && e.task.remote!.session === sessionID);
    if (entry && isOpen(entry.task.status)) void this.check(entry);
  }

  /** What background_list and background_output say of a remote that does not answer now. */
  note(task: BackgroundTask): string | undefined {
    const remote = task.remote;
    const lost = remote ? this.links.lostSince(remote.name) : undefined;
    return remote && lost ? REMOTE.unreachableLine(remote.name, new Date(lost.since).toISOString().slice(11, 19), lost.why) : undefined;
  }

  /** How the run goes there (background_output), read from the child's messages there. */
  async progressOf(task: BackgroundTask): Promise<RunProgress> {
    const transport = this.links.transport(task.remote!.name);
    if ("error" in transport) throw new Error(transport.error);
    return readProgress(await remoteMessages(transport, task), 0);
  }

  /** The child's final answer there. */
  async answerOf(task: BackgroundTask): Promise<string> {
    const transport = this.links.transport(task.remote!.name);
    if ("error" in transport) throw new Error(transport.error);
    return answerOf(transport, task);
  }

  dispose(): void {
    this.links.stopAll();
  }

  private remoteEntries(): TaskEntry[] {
    return this.host.registry.entries().filter((e) => e.task.remote !== undefined && !e.runtime.launching);
  }
}

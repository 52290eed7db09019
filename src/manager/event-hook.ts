// The plugin's event hook, as the manager runs it (task-manager.ts handleEvent): event-decide.ts says
// what an OpenCode event means to each audience (a parent, a person, a task's child), and it is done
// here, in order, one path per audience: a task's inputs go to its step (`dispatch`), a parent's to
// its own step (parent/notices.ts `input`), a person's request to requests/tui.ts. Never throws: a
// failure is logged and the event dropped (the reconcile recovers a missed ending).

import type { Event } from "../host/types.js";
import { log } from "../host/client.js";
import type { PluginOptions } from "../options.js";
import { type Drop, type ParentMeaning, type TaskMeaning, decideForChild, decideForParent, decideOnArrival, decideRequest } from "./event-decide.js";
import type { ParentNotices } from "./parent/notices.js";
import { questionPolicy } from "./requests/questions.js";
import { onRequest } from "./requests/tui.js";
import { type RelayHost, onRelayRequest } from "./requests/relay.js";
import type { TaskRegistry } from "./task/registry.js";

/** What the hook takes from the manager: the registry it reads, the parents' side, start-up, and the requests room's host. */
export type EventHookHost = RelayHost & {
  readonly registry: TaskRegistry;
  readonly notices: Pick<ParentNotices, "input">;
  readonly options: PluginOptions;
  readonly oneShotRun: boolean;
  readonly isDisposed: boolean;
  ready(): Promise<void>;
};

/** Does what the event means, in order; resolves when the work it set off is done (tests wait on it). */
export async function onEvent(host: EventHookHost, event: Event): Promise<void> {
  if (host.isDisposed) return;
  try {
    // A parent's busy/idle is recorded the moment it arrives, even while start-up still runs: it is newer
    // than any snapshot asked for before it (parent/busy.ts). (Before the task file is loaded nobody is
    // a parent yet; the start-up snapshot, asked for after that, is newer anyway.)
    const arrival = onParentEvent(host, event, decideOnArrival(event, host.registry)); // (nothing of it waits)
    if (arrival.dropped) return;
    await host.ready();
    const forParent = onParentEvent(host, event, decideForParent(event, host.registry));
    await Promise.all([...arrival.work, ...forParent.work, ...onPersonEvent(host, event), ...onChildEvent(host, event)]);
  } catch (error) {
    log(host.client, "error", `offshoot event ${event?.type} failed: ${(error as Error).message}`);
  }
}

/**
 * An event about a task's child: each input it means for the task (event-decide.ts) goes to the
 * task's step, in order; what they set off (a completion check, an abort) is returned, to be awaited.
 */
export function onChildEvent(host: EventHookHost, event: Event): Promise<boolean>[] {
  const work: Promise<boolean>[] = [];
  for (const meaning of decideForChild(event, host.registry, questionPolicy(host))) {
    if (dropped(host, event, meaning)) break;
    work.push(dispatchTo(host, meaning));
  }
  return work;
}

/** An event about a parent: its own step's inputs (parent/step.ts) and its tasks' inputs, in order. */
export function onParentEvent(host: EventHookHost, event: Event, meanings: (ParentMeaning | Drop)[]): { work: Promise<unknown>[]; dropped: boolean } {
  const work: Promise<unknown>[] = [];
  for (const meaning of meanings) {
    if (dropped(host, event, meaning)) return { work, dropped: true };
    work.push("parent" in meaning ? host.notices.input(meaning.parent, meaning.input) : dispatchTo(host, meaning));
  }
  return { work, dropped: false };
}

/** A person's request, written by the TUI into a session's metadata (requests/tui.ts). */
function onPersonEvent(host: EventHookHost, event: Event): Promise<void>[] {
  const work: Promise<void>[] = [];
  for (const meaning of decideRequest(event)) {
    if (dropped(host, event, meaning)) break;
    work.push(
      "relayRequest" in meaning
        ? onRelayRequest(host, meaning.sessionID, meaning.relayRequest, meaning.metadata)
        : onRequest(host, meaning.sessionID, meaning.tuiRequest, meaning.parentSessionID),
    );
  }
  return work;
}

/** A task's input, to its step (a task gone meanwhile: nothing). */
function dispatchTo(host: EventHookHost, { taskId, input }: TaskMeaning): Promise<boolean> {
  const entry = host.registry.get(taskId);
  return entry ? host.dispatch(entry, input) : Promise.resolve(false);
}

/** An event that could not be read is logged (its list ends there). */
function dropped<T extends object>(host: EventHookHost, event: Event, meaning: T | Drop): meaning is Drop {
  if (!("drop" in meaning)) return false;
  log(host.client, "error", `offshoot event ${event?.type} failed: ${meaning.drop}`);
  return true;
}

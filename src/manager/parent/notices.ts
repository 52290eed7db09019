// Where a parent is told: the one runner of the parent's step (step.ts). It keeps one record per
// parent, writes what a step returns (the only place a parent's record is written), and carries the
// step's effects out, once, in their order; the one send to a parent is here too (sendToParent).
//
// Nothing is delivered while the parent is busy: it would land inside a running turn. Whether it is
// busy is busy.ts's rule (the newest information wins), asked again before every send, so a turn that
// starts while notices go out stops the delivery after the notice in flight, and the rest wait for the
// parent's next idle. One delivery per parent at a time: what is owed next is decided anew after each
// send (step.ts owedNext), so tasks that end meanwhile are delivered in the same delivery.
//
// A process killed between a delivery and its save left the notice in the parent's messages: tasks
// loaded from the file are checked against those messages before anything is sent again (the `check`).

import { buildTaskNotification, buildWakePrompt } from "./notices.txt.js";
import { type Client, call, getBusySessions, getMessages, isSessionGone, log } from "../../host/client.js";
import { prompt, promptAsync } from "../../host/session.js";
import type { SessionMessage } from "../../fork/types.js";
import { activeDirectories } from "../../worktree/hub.js";
import { type BackgroundTask, meaningOf } from "../../task-record.js";
import type { TaskEntry } from "../task/registry.js";
import type { Dispatch } from "../task/runner.js";
import { withToolNames } from "../../tool-names.js";
import { type BusySnapshot, isIdle } from "./busy.js";
import {
  NEW_PARENT,
  type Owed,
  type ParentEffect,
  type ParentInput,
  type ParentState,
  type ParentStep,
  type ParentTable,
  hasOwed,
  owedNext,
  parentStep,
  stillWorking,
} from "./step.js";

/** What the parent's side needs from the rest of the manager, and nothing more. */
export interface ParentHost extends Dispatch {
  readonly client: Client;
  now(): number;
  /** the parent's committed tasks, in launch order */
  tasksOf(parent: string): TaskEntry[];
  /** every session that has tasks */
  parents(): string[];
  /** whether anything is outstanding changed (the reconcile timer follows it) */
  outstandingChanged(): void;
  /** the session budget's line for the next notice, from 80% on (session-budget.ts) */
  budgetLine?(parent: string): string | undefined;
  /** the effects' table (a test removes one effect at a time); the real one when absent */
  readonly table?: ParentTable;
}

/** One parent: its state (written only by `run`, from its step) and its delivery in flight. */
interface ParentRecord {
  state: ParentState;
  delivering?: Promise<void>;
}

/** What goes to a parent: a message in the words of the task it concerns (its agent and model), or a read of its messages. */
type ParentMessage = { read: true } | { what: string; text: string; noReply: boolean; by: BackgroundTask | undefined };

/** A send's outcome: sent (with what a read returned), gone (404: nothing more for it), or failed. */
type SendOutcome = { kind: "sent"; messages?: readonly SessionMessage[] } | { kind: "gone" } | { kind: "failed"; error: Error };

export class ParentNotices {
  private readonly records = new Map<string, ParentRecord>();
  /** the stamps of what is said about parents (busy.ts): events and snapshots on one counter */
  private clock = 0;

  constructor(private readonly host: ParentHost) {}

  /** A fact about the parent (its events, the plugin's own acts, its tasks' ends, its budget): its step, then the effects. */
  input(parent: string, input: ParentInput): Promise<void> {
    return this.run(parent, input);
  }

  /** Reads the server's busy sessions, stamped before the request goes out: events arriving meanwhile are newer. */
  readBusySessions(): Promise<BusySnapshot> {
    const requestedAt = ++this.clock;
    return getBusySessions(this.host.client, activeDirectories()).then((busy) => ({ busy, requestedAt }));
  }

  hasOutstanding(): boolean {
    return this.parentsWithOutstanding().length > 0;
  }

  /** Parents owed a notice, the budget's notice or a wake. */
  parentsWithOutstanding(): string[] {
    const owed = this.host.parents().filter((p) => hasOwed(this.stateOf(p), () => this.host.tasksOf(p)));
    for (const [p, { state }] of this.records) if (state.owedBudget !== undefined && !owed.includes(p)) owed.push(p);
    return owed;
  }

  /** Delivers what is owed, once, if the parent is idle (after a delivery in flight). Safe to call often. */
  flush(parent: string): Promise<void> {
    const record = this.recordOf(parent);
    if (record.delivering) return record.delivering.then(() => this.flush(parent));
    if (!isIdle(record.state.said)) return Promise.resolve();
    const delivery = this.deliver(parent)
      .catch((error) => log(this.host.client, "warn", `notifying session ${parent} failed: ${(error as Error).message}`))
      .finally(() => {
        record.delivering = undefined;
        this.host.outstandingChanged();
      });
    record.delivering = delivery;
    return delivery;
  }

  private stateOf(parent: string): ParentState {
    return this.records.get(parent)?.state ?? NEW_PARENT;
  }

  private recordOf(parent: string): ParentRecord {
    let record = this.records.get(parent);
    if (!record) this.records.set(parent, (record = { state: NEW_PARENT }));
    return record;
  }

  /** Until nothing is owed (or the parent is busy or gone): what is owed next goes out, decided anew after each send. */
  private async deliver(parent: string): Promise<void> {
    for (let owed = owedNext(this.stateOf(parent), this.host.tasksOf(parent)); owed; owed = owedNext(this.stateOf(parent), this.host.tasksOf(parent))) {
      await this.run(parent, { kind: "sending", owed });
    }
  }

  /** The step, written (before anything is awaited), then its effects in order. */
  private async run(parent: string, input: ParentInput): Promise<void> {
    const record = this.recordOf(parent);
    const step = parentStep(parent, record.state, input, () => this.host.tasksOf(parent), ++this.clock, this.host.table);
    record.state = step.state; // the only place a parent's record changes
    for (const effect of step.effects) await this.effect(parent, effect, input, step);
  }

  private async effect(parent: string, effect: ParentEffect, input: ParentInput, step: ParentStep): Promise<void> {
    // (each task written at once; their saves, asked for in this same turn, are one write)
    const each = (kind: "reported" | "notice-sent" | "notice-failed" | "parent-gone") =>
      Promise.all(step.tasks.map((entry) => this.host.dispatch(entry, { kind })));
    switch (effect) {
      case "deliver":
        return this.flush(parent);
      case "outstanding":
        return this.host.outstandingChanged();
      case "send":
        if (input.kind === "sending") return this.send(parent, input.owed);
        return;
      case "tasksGone":
        return void (await each("parent-gone"));
      case "reported":
        return void (await each("reported"));
      case "noticeSent":
        return void (await each("notice-sent"));
      case "noticeFailed":
        return void (await each("notice-failed"));
      case "retryLater":
        if (input.kind === "failed") throw input.error;
        return;
      case "giveUp":
        if (input.kind === "failed") {
          const what = input.owed.kind === "notice" ? `the notice of task ${input.owed.entry.task.id}` : `waking session ${parent}`;
          log(this.host.client, "error", `giving up on ${what} after ${step.attempts} attempts: ${input.error.message}`);
        }
        return;
      case "budgetLost":
        if (input.kind === "failed") log(this.host.client, "warn", `the budget notice of session ${parent} was not delivered: ${input.error.message}`);
        return;
    }
  }

  /** What is owed goes to the parent; the outcome is the parent's next input. */
  private async send(parent: string, owed: Owed): Promise<void> {
    const outcome = await sendToParent(this.host.client, parent, this.messageOf(parent, owed));
    await this.run(parent, outcome.kind === "gone" ? outcome : { ...outcome, owed });
  }

  /** What is owed, in words (notices.txt.ts), from the task it concerns (a notice) or the parent's last task. */
  private messageOf(parent: string, owed: Owed): ParentMessage {
    const entries = this.host.tasksOf(parent);
    const last = entries.at(-1)?.task;
    switch (owed.kind) {
      case "check":
        return { read: true };
      case "notice": {
        const { task, runtime } = owed.entry;
        const siblings = entries.map((e) => e.task);
        const text = buildTaskNotification(task, runtime.answer ?? "", this.host.now(), siblings, this.host.budgetLine?.(parent));
        return { what: `notifying session ${parent}`, text, noReply: true, by: task };
      }
      case "budget":
        return { what: `telling session ${parent} its budget is reached`, text: owed.text, noReply: true, by: last };
      case "wake": {
        const text = buildWakePrompt(
          owed.report.map((e) => e.task),
          entries.filter(stillWorking).map((e) => e.task),
          entries.filter((e) => meaningOf(e.task.status).waitsForPerson).map((e) => e.task),
        );
        return { what: `waking session ${parent}`, text, noReply: false, by: last };
      }
    }
  }
}

/**
 * THE call to a parent: a notice or the budget's notice (stored only: noReply), the wake (starts its
 * loop), each with the agent and model of the task it concerns, or a read of its messages.
 */
async function sendToParent(client: Client, parent: string, message: ParentMessage): Promise<SendOutcome> {
  try {
    if ("read" in message) return { kind: "sent", messages: await getMessages(client, parent) };
    const body = { agent: message.by?.parentAgent, model: message.by?.parentModel, parts: [{ type: "text" as const, text: withToolNames(message.text) }] };
    if (message.noReply) await call(message.what, prompt(client, parent, { noReply: true, ...body }));
    else await call(message.what, promptAsync(client, parent, body));
    return { kind: "sent" };
  } catch (error) {
    return isSessionGone(error) ? { kind: "gone" } : { kind: "failed", error: error as Error };
  }
}

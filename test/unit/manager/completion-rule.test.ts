// The completion rule (completion.ts decideEnding) as a table: what the child's latest prompt got
// (answered, failed, aborted, nothing yet) and what the manager knows (the parent cancelled, the plugin
// stopped it, OpenCode stopped, the run stalled) → how the task ends, as its notice and list show it.
import { describe, expect, it } from "vitest";
import { type ChildOutcome, type Ending, type EndingContext, INTERRUPTED_REASON, decideEnding } from "../../../src/manager/task/completion.js";

const answered: ChildOutcome = { finished: true, answer: "all done", aborted: false, lastActivity: 5_000 };
const failed: ChildOutcome = { finished: true, answer: "", error: "APIError: rate limited", aborted: false, lastActivity: 5_000 };
// an aborted step carries MessageAbortedError as its error: it must not read as a failure
const aborted: ChildOutcome = { finished: true, answer: "half", error: "MessageAbortedError: Aborted", aborted: true, lastActivity: 5_000 };
const working: ChildOutcome = { finished: false, answer: "", aborted: false, lastActivity: 4_000 };
const nothingYet: ChildOutcome = { finished: false, answer: "", aborted: false };

const none: EndingContext = { cancelledByParent: false, processStopped: false };
const byParent: EndingContext = { ...none, cancelledByParent: true };
const stopped: EndingContext = { ...none, processStopped: true };
const stalled: EndingContext = { ...none, stalledReason: "the child session stopped without answering" };
const watchdog: EndingContext = { ...none, stopReason: "stopped: more than 5 tool calls in one run (maxToolCalls: 5)" };
const FROM_OUTSIDE = "the child session was aborted from outside (the TUI or another client)";

describe("decideEnding: how a run ends", () => {
  it.each<[string, ChildOutcome, EndingContext, Ending | undefined]>([
    // answered
    ["an answer completes the task with it", answered, none, { status: "completed", answer: "all done" }],
    ["an answer given before OpenCode stopped still completes it", answered, stopped, { status: "completed", answer: "all done" }],
    ["an answer wins over a stall the reconcile suspected", answered, stalled, { status: "completed", answer: "all done" }],
    [
      "an answer after the parent asked for a cancel still completes it (the cancel came too late)",
      answered,
      byParent,
      { status: "completed", answer: "all done" },
    ],
    // failed
    ["a failed step ends the task as error with the provider's message", failed, none, { status: "error", error: "APIError: rate limited" }],
    ["a failed step before OpenCode stopped is still an error, not an interruption", failed, stopped, { status: "error", error: "APIError: rate limited" }],
    // aborted
    ["an abort the watchdog asked for: error with the rule's reason, never cancelled", aborted, watchdog, { status: "error", error: watchdog.stopReason }],
    ["the watchdog's reason wins even when the parent cancelled too", aborted, { ...byParent, ...watchdog }, { status: "error", error: watchdog.stopReason }],
    ["an abort the parent asked for: cancelled by the parent", aborted, byParent, { status: "cancelled", error: "cancelled by the parent session" }],
    [
      "the parent's cancel wins over OpenCode stopping",
      aborted,
      { ...byParent, processStopped: true },
      { status: "cancelled", error: "cancelled by the parent session" },
    ],
    [
      "OpenCode aborting its children on the way out: interrupted, ended at the child's last activity",
      aborted,
      stopped,
      { status: "interrupted", error: INTERRUPTED_REASON, endedAt: 5_000 },
    ],
    ["an abort nobody of ours asked for (Esc in the child): cancelled from outside", aborted, none, { status: "cancelled", error: FROM_OUTSIDE }],
    [
      "under opencode run an abort nobody of ours asked for is the run ending: interrupted, not a cancel from outside",
      aborted,
      { ...none, oneShotRun: true },
      { status: "interrupted", error: INTERRUPTED_REASON, endedAt: 5_000 },
    ],
    [
      "under opencode run the parent's cancel is still a cancel",
      aborted,
      { ...byParent, oneShotRun: true },
      { status: "cancelled", error: "cancelled by the parent session" },
    ],
    ["under opencode run a child still working keeps running", working, { ...none, oneShotRun: true }, undefined],
    ["an abort with a stall suspected is still a cancel from outside", aborted, stalled, { status: "cancelled", error: FROM_OUTSIDE }],
    // not finished
    ["still working: the task keeps running", working, none, undefined],
    ["nothing produced yet (idle before the loop started): keeps running", nothingYet, none, undefined],
    ["a cancel asked for but no abort seen yet: keeps running until the abort shows", working, byParent, undefined],
    [
      "unfinished when OpenCode stopped: interrupted, ended at the child's last activity",
      working,
      stopped,
      { status: "interrupted", error: INTERRUPTED_REASON, endedAt: 4_000 },
    ],
    [
      "unfinished and never active when OpenCode stopped: interrupted, no earlier end known",
      nothingYet,
      stopped,
      { status: "interrupted", error: INTERRUPTED_REASON, endedAt: undefined },
    ],
    ["an interruption wins over a stall", working, { ...stalled, processStopped: true }, { status: "interrupted", error: INTERRUPTED_REASON, endedAt: 4_000 }],
    [
      "idle without an answer past the grace period: error with why",
      working,
      stalled,
      { status: "error", error: "the child session stopped without answering" },
    ],
    [
      "a prompt the server rejected (its session.error kept as the stall reason): error with it",
      nothingYet,
      { ...none, stalledReason: "UnknownError: Model not found" },
      { status: "error", error: "UnknownError: Model not found" },
    ],
  ])("%s", (_name, outcome, context, ending) => {
    expect(decideEnding(outcome, context)).toEqual(ending);
  });
});

// The completion rule with a message sent into a running step (a steer), on the recorded aborted
// child (test/fixtures/session.messages.aborted.json: the prompt, then the step the abort cut short).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { SessionMessage } from "../../../src/fork/types.js";
import { decideEnding, readChildOutcome } from "../../../src/manager/task/completion.js";

const recorded = JSON.parse(readFileSync(join(import.meta.dirname, "../../fixtures/session.messages.aborted.json"), "utf8"));
const ABORTED = (recorded.data ?? recorded) as SessionMessage[];

/** The recorded run with a steer stored `at` (ms) after the aborted step was created. */
function withSteerAt(at: number): SessionMessage[] {
  const [prompt, step] = structuredClone(ABORTED);
  const steer = structuredClone(prompt!);
  steer.info = { ...steer.info, id: "msg_steer", time: { created: step!.info.time.created + at } } as SessionMessage["info"];
  steer.parts = [{ ...steer.parts[0]!, id: "prt_steer", messageID: "msg_steer", type: "text", text: "look elsewhere" } as SessionMessage["parts"][number]];
  return [prompt!, step!, steer];
}

const context = { cancelledByParent: false, processStopped: false };

describe("completion after a steer", () => {
  it("a steer stored while the step ran, then an abort: the run ended with the aborted step (cancelled, not stalled)", () => {
    const messages = withSteerAt(10); // before the aborted step completed
    const outcome = readChildOutcome(messages, 0);
    expect(outcome).toMatchObject({ finished: true, aborted: true });
    expect(decideEnding(outcome, { ...context, stalledReason: "MessageAbortedError: Aborted" })).toMatchObject({ status: "cancelled" });
  });

  it("a steer stored after the step had ended starts a new loop: the run is not over until that loop answers", () => {
    const [, step] = ABORTED;
    const messages = withSteerAt((step!.info as { time: { completed: number } }).time.completed - step!.info.time.created + 5);
    expect(readChildOutcome(messages, 0).finished).toBe(false);
  });
});

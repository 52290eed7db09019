// Steering: a message sent into a task that has not ended, without a new task, run or child.
//
// - A running task: the message goes to its child session at once (prompt_async). OpenCode 1.18.33
//   stores it as a user message and the child's running loop takes it into its next model request
//   (after the tool calls of its current step; tried on the real server). The text part carries a
//   mark (metadata, never sent to the model); the message is reported as sent only once the
//   server's event shows the part stored, never on the 204 alone (prompt_async answers before it
//   creates the message, and reports a failure as session.error).
// - A queued task: the message joins its prompt, which it gets when it starts.
// - An ended task: not steered (undefined): the caller resumes it as before.
//
// Every stored message with a mark in a task's child counts as one steer of the task, the TUI's
// "Send a message" included (it marks its messages the same way): task/step.ts `steer-stored`. A
// steer is a job of the task's mailbox (mailbox.ts): a completion check posted after it waits until
// it is stored, so a run is never ended from messages read just before its steer was stored; and
// two steers of a task go out one at a time, in the order sent. What waits for the server's word is
// kept in the task's runtime (`steerWaits`), through the task's step: `steer-sent` here, and the
// sender is told by `steer-stored` once its count is saved, `steers-refused`, or (no word in time, a
// send that failed) `steer-unanswered`.

import { STEER_CONFIRM_MS } from "../../constants.js";
import { MESSAGES } from "../../prompts.js";
import { isSessionGone, log } from "../../host/client.js";
import type { ToolReply } from "../launch/launcher.js";
import { sendTaskPrompt } from "../launch/prompt.js";
import type { SteerOutcome, TaskEntry } from "../task/registry.js";
import { type BackgroundTask, isMoving, meaningOf } from "../../task-record.js";
import type { RequestsHost } from "./host.js";

function newMark(): string {
  return `steer_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 10)}`;
}

/** The message, to the child, confirmed by the server's event, refused, or unconfirmed after STEER_CONFIRM_MS. */
async function deliver(manager: RequestsHost, entry: TaskEntry, prompt: string): Promise<SteerOutcome> {
  const { task } = entry;
  const mark = newMark();
  let timer: ReturnType<typeof setTimeout> | undefined;
  // (no word from the server: a step of its own tells the sender, task/step.ts `steer-unanswered`)
  const unanswered = (outcome: SteerOutcome) => void manager.dispatch(entry, { kind: "steer-unanswered", mark, outcome });
  const outcome = new Promise<SteerOutcome>((told) => {
    void manager.dispatch(entry, { kind: "steer-sent", mark, told });
    timer = setTimeout(
      () =>
        unanswered({
          delivered: false,
          unconfirmed: true,
          reason: `the server did not confirm that it stored it within ${STEER_CONFIRM_MS / 1000}s`,
        }),
      STEER_CONFIRM_MS,
    );
    timer.unref?.();
  });
  try {
    // the task's agent, model and chosen variant (a native fork's variant and system too), the part marked
    await sendTaskPrompt(manager.client, task, prompt, { what: "sending the message", mark });
  } catch (error) {
    unanswered({ delivered: false, reason: isSessionGone(error) ? "its child session no longer exists" : (error as Error).message });
    if (isSessionGone(error)) {
      await manager
        .finish(task, { status: "error", error: "its child session no longer exists" })
        .catch((failure) => log(manager.client, "warn", `ending task ${task.id} failed: ${(failure as Error).message}`));
    }
  }
  const result = await outcome;
  clearTimeout(timer);
  return result;
}

/**
 * `background_task({ resume, prompt })` on a task that has not ended. Returns the tool's answer, or
 * undefined when the task turned out to have ended meanwhile (the caller then resumes it).
 */
export async function steerTask(
  manager: RequestsHost,
  task: BackgroundTask,
  prompt: string,
  agent: string | undefined,
): Promise<ToolReply | string | undefined> {
  const entry = manager.registry.get(task.id);
  if (!entry || entry.task !== task) return MESSAGES.steerNotDelivered(task, "the task is no longer known to this OpenCode process");
  if (agent && agent !== task.agent) return MESSAGES.steerAgentChange(task, agent);
  // a remote task's message goes there (its plugin there steers it as here), or is refused with the reason
  if (task.remote) return isMoving(task.status) ? manager.remote.steer(entry, prompt) : undefined;
  // after the task's jobs before it: a completion check under way decides first (the task may have just ended)
  return entry.runtime.mailbox.post(() => steer(manager, entry, prompt));
}

async function steer(manager: RequestsHost, entry: TaskEntry, prompt: string): Promise<ToolReply | string | undefined> {
  const { task } = entry;
  if (!isMoving(task.status)) return undefined;
  const reply = (output: string): ToolReply => ({
    title: `Message: ${task.description}`,
    output,
    metadata: { sessionId: task.sessionID, taskId: task.id, steered: true },
  });
  if (meaningOf(task.status).queued) {
    await manager.dispatch(entry, { kind: "steer-queued", message: prompt }); // (saved)
    return reply(MESSAGES.steerQueued(task));
  }
  // Just out of the queue: its own prompt is still on its way (launch/queued.ts drops queuedPrompt once sent).
  if (!task.sessionID || task.queuedPrompt !== undefined) {
    return MESSAGES.steerNotDelivered(task, "the task is just starting and its prompt is still being sent; call background_task with resume again in a moment");
  }
  const outcome = await deliver(manager, entry, prompt);
  if (outcome.delivered) return reply(MESSAGES.steered(task));
  return outcome.unconfirmed ? MESSAGES.steerUnconfirmed(task, outcome.reason) : MESSAGES.steerNotDelivered(task, outcome.reason);
}

import { tool } from "../host/tool.js";
import { OUTPUT_BLOCK_DEFAULT_S, OUTPUT_BLOCK_MAX_S } from "../constants.js";
import { DESCRIPTION, REPLIES } from "./background-output.txt.js";
import type { TaskService } from "../manager/task-service.js";
import { isMoving, meaningOf } from "../task-record.js";
import { BACKGROUND_OUTPUT_ARGS, parseToolArgs, taskIdArg } from "./args.js";
import { findCallerTask } from "./resolve.js";
import { endedTaskResult, taskHeader } from "./result.js";
import { personWaitText, sendAnswer } from "./waiting.js";
import { activeTaskReport } from "./progress.js";

export function createBackgroundOutputTool(service: TaskService) {
  return tool({
    description: DESCRIPTION,
    args: BACKGROUND_OUTPUT_ARGS,
    async execute(raw, ctx) {
      const parsed = parseToolArgs("background_output", BACKGROUND_OUTPUT_ARGS, raw);
      if (!parsed.ok) return parsed.error;
      const args = parsed.value;
      await service.ready();
      const found = findCallerTask(service, ctx.sessionID, taskIdArg(args.task_id));
      if ("error" in found) return found.error;
      const { task } = found;
      // answer: sent first (refused, with nothing sent, when no question waits); the rest as without it
      const sent = args.answer !== undefined ? await sendAnswer(service, task, args.answer) : undefined;
      if (sent && "error" in sent) return sent.error;
      const answered = sent ? `${sent.ok}\n` : "";
      // A task waiting for a person does nothing until one answers: block returns at once with that news.
      const waiting = () => isMoving(task.status) && personWaitText(service, task);
      if (waiting()) return `${answered}${taskHeader(task, service.now())}\n${waiting()}`;
      if (args.block && isMoving(task.status)) {
        const seconds = Math.min(Math.max(args.timeout ?? OUTPUT_BLOCK_DEFAULT_S, 0), OUTPUT_BLOCK_MAX_S);
        await service.waitForEnd(task, seconds * 1000, ctx.abort, { orPersonWait: true });
        if (waiting()) return `${answered}${taskHeader(task, service.now())}\n${waiting()}`;
        if (isMoving(task.status)) {
          const why = ctx.abort.aborted ? "the wait was interrupted" : `it did not finish within ${seconds}s`;
          return answered + (await activeTaskReport(service, task, REPLIES.stillRunningAfterWait(why)));
        }
      }
      if (isMoving(task.status)) {
        return answered + (await activeTaskReport(service, task, REPLIES.stillRunning));
      }
      // paused by the session's budget: its run has not ended (reading it now is not reading its result)
      if (meaningOf(task.status).waitsForPerson) return `${answered}${taskHeader(task, service.now())}\n${REPLIES.paused(task)}`;
      const output = answered + (await endedTaskResult(service, task));
      return { title: task.description, output, metadata: { sessionId: task.sessionID, taskId: task.id, status: task.status } };
    },
  });
}

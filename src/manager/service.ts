// The task service the tools get (task-service.ts), built from the manager: each method hands the
// call to the room that does it. The only place the tools' calls meet the manager's insides.

import { MESSAGES, QUESTION_MESSAGES } from "../prompts.js";
import { callIdOf } from "../host/tool-context.js";
import { discardTask } from "../worktree/discard.js";
import { cancelTasks, discardHost } from "./requests/cancel.js";
import { getMessages } from "../host/client.js";
import { readChildOutcome } from "./task/completion.js";
import { agentModelOf, checkAgent, launchTask, resumeTask } from "./launch/launcher.js";
import { nativeForkBlockedBy, resolveModelChoice } from "./launch/model-choice.js";
import { readProgress } from "./task/progress.js";
import { answerQuestion } from "./requests/questions.js";
import { steerTask } from "./requests/steer.js";
import { takeTask } from "./requests/take.js";
import type { TaskManager } from "./task-manager.js";
import type { TaskService } from "./task-service.js";
import { replyOf } from "../task-state.js";

export function taskService(manager: TaskManager): TaskService {
  return {
    ready: () => manager.ready(),
    now: () => manager.now(),
    get oneShotRun() {
      return manager.oneShotRun;
    },
    get: (id) => manager.get(id),
    tasksOf: (parent) => manager.tasksOf(parent),
    isChildSession: (sessionID) => manager.isChildSession(sessionID),
    findByCallID: (parent, callID) => manager.findByCallID(parent, callID),
    droppedTask: (query, parent) => manager.droppedTask(query, parent),
    waitingFor: (task) => manager.waitingFor(task),
    questionOf: (task) => manager.questionOf(task),
    // (a remote task's child is there: read through its remote)
    progressOf: async (task) =>
      task.remote ? manager.remotes.progressOf(task) : readProgress(await getMessages(manager.client, task.sessionID), task.startedAt),
    answerOf: async (task) => (task.remote ? manager.remotes.answerOf(task) : readChildOutcome(await getMessages(manager.client, task.sessionID)).answer),
    remoteNote: (task) => manager.remotes.note(task),
    resultRead: (task, options) => manager.resultRead(task, options),
    waitForEnd: (task, timeoutMs, signal, options) => manager.waitForEnd(task, timeoutMs, signal, options),
    checkAgent: (agent, ctx) => checkAgent(manager.client, agent, ctx),
    resolveModel: (value) => resolveModelChoice(manager.client, value),
    agentModel: (agent) => agentModelOf(manager.client, agent),
    nativeForkBlockedBy,
    budgetRefusal: (parent) => {
      const why = manager.budget.refusal(parent);
      return why === undefined ? undefined : replyOf({ error: why });
    },
    budgetLine: (parent) => manager.budget.line(parent),
    continueTask: async (task, input, ctx) => {
      const entry = manager.registry.get(task.id);
      if (!entry || entry.task !== task) return `Error: task ${task.id} is not one this process runs.`;
      if (task.remote) return manager.remote.resume(entry, { ...input, callID: callIdOf(ctx) });
      const outcome = await manager.budget.continueTask(entry, input.prompt, { callID: callIdOf(ctx), agent: input.agent });
      if ("error" in outcome) return `Error: ${outcome.error}${outcome.error.endsWith(".") ? "" : "."}`;
      return {
        title: `Continued: ${task.description}`,
        output: MESSAGES.continued(task),
        metadata: { sessionId: task.sessionID, taskId: task.id, resumed: true },
      };
    },
    launch: (input, ctx) => (input.remote ? manager.remotes.launch(input, ctx) : launchTask(manager, input, ctx)),
    resume: (task, input, ctx) => {
      const entry = manager.entryOf(task);
      return task.remote && entry ? manager.remote.resume(entry, { ...input, callID: callIdOf(ctx) }) : resumeTask(manager, task, input, ctx);
    },
    steer: (task, prompt, agent) => steerTask(manager, task, prompt, agent),
    cancel: (tasks) => cancelTasks(manager, tasks),
    discard: async (task) => {
      const entry = manager.entryOf(task);
      return replyOf(task.remote && entry ? await manager.remote.discard(entry) : await discardTask(discardHost(manager), task));
    },
    take: async (task, options) => replyOf(await takeTask(manager, task, options)),
    answer: (task, answers) => {
      const entry = manager.registry.get(task.id);
      if (!entry || entry.task !== task) return Promise.resolve({ error: QUESTION_MESSAGES.notWaiting(task, undefined) });
      return answerQuestion(manager, entry, answers);
    },
  };
}

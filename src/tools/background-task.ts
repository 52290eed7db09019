import { type ToolContext, tool } from "../host/tool.js";
import { DESCRIPTION_MAX_CHARS, ONE_SHOT_RUN_WAIT_MAX_S, PROMPT_MAX_CHARS } from "../constants.js";
import { MESSAGES, TOOL_DESCRIPTIONS } from "../prompts.js";
import { oneLine } from "../text.js";
import { type ToolReply, agentModelOf, checkAgent, launchTask, resumeTask } from "../manager/launch.js";
import { callIdOf } from "../host/tool-context.js";
import type { TaskManager } from "../manager/task-manager.js";
import { isActive } from "../manager/types.js";
import { ARG_MESSAGES, BACKGROUND_TASK_ARGS, type ParsedArgs, parseToolArgs, taskIdArg } from "./args.js";
import { findCallerTask } from "./resolve.js";
import { steerTask } from "../manager/steer.js";
import { endedTaskResult } from "./result.js";
import { type NativeForkOptions, planNativeFork } from "../native/launch.js";
import { nativeForkBlockedBy, resolveModelChoice } from "../manager/model-choice.js";

type Args = ParsedArgs<typeof BACKGROUND_TASK_ARGS>;

/**
 * Under `opencode run` the process exits when this session goes idle, cutting the child off: the
 * call waits for the task instead, and its result is the answer (no notice, no wake-up follow).
 */
async function waitInOneShotRun(manager: TaskManager, taskID: string, ctx: ToolContext): Promise<string> {
  const task = manager.get(taskID);
  if (!task) return "";
  await manager.waitForEnd(task, ONE_SHOT_RUN_WAIT_MAX_S * 1000, ctx.abort);
  if (isActive(task.status)) {
    return `${MESSAGES.oneShotRunStillRunning(task, ONE_SHOT_RUN_WAIT_MAX_S)}`;
  }
  return `${MESSAGES.oneShotRunWaited}\n${await endedTaskResult(manager, task, { asNotice: true })}`;
}

export function createBackgroundTaskTool(manager: TaskManager, native?: NativeForkOptions) {
  /** Launches in flight, by parent + callID: a repeated call waits for the same launch. */
  const inFlight = new Map<string, Promise<ToolReply | string>>();

  async function run(args: Args, ctx: ToolContext): Promise<ToolReply | string> {
    if (args.fork && args.resume) return MESSAGES.forkWithResume;
    if (args.isolation && args.resume) return MESSAGES.isolationWithResume;
    // One clean line for what names things (title, notices); the prompt goes to the child as given.
    const description = oneLine(args.description, DESCRIPTION_MAX_CHARS);
    const cleaned = { description: description.text, prompt: args.prompt.trim(), agent: oneLine(args.agent ?? "", DESCRIPTION_MAX_CHARS).text };
    // The agent may be left out with fork (a native fork: the caller's own agent) and with resume (the task's).
    const required = args.resume ? (["prompt"] as const) : args.fork ? (["description", "prompt"] as const) : (["description", "prompt", "agent"] as const);
    const blank = required.filter((field) => !cleaned[field]);
    if (blank.length) return MESSAGES.blank([...blank]);
    if (args.prompt.length > PROMPT_MAX_CHARS) return ARG_MESSAGES.promptTooLong(args.prompt.length);
    await manager.ready();
    if (manager.isChildSession(ctx.sessionID)) return MESSAGES.childCannotLaunch;

    const repeated = manager.findByCallID(ctx.sessionID, callIdOf(ctx));
    if (repeated) return { title: repeated.description, output: isActive(repeated.status) && repeated.run > 1 ? MESSAGES.resumed(repeated) : MESSAGES.launched(repeated), metadata: { sessionId: repeated.sessionID, taskId: repeated.id } };

    const named = cleaned.agent || undefined;
    if (args.resume) {
      if (args.model !== undefined) return MESSAGES.modelWithResume;
      const found = findCallerTask(manager, ctx.sessionID, taskIdArg(args.resume));
      if ("error" in found) return found.error;
      // A task that has not ended is steered (steer.ts); one that ended meanwhile is resumed below.
      if (isActive(found.task.status)) {
        const steered = await steerTask(manager, found.task, args.prompt, named);
        if (steered !== undefined) return steered;
      }
      const agent = named ?? found.task.agent;
      const agentError = await checkAgent(manager.client, agent, ctx);
      if (agentError) return agentError;
      return resumeTask(manager, found.task, { prompt: args.prompt, agent }, ctx);
    }
    const agent = named ?? ctx.agent;
    const agentError = await checkAgent(manager.client, agent, ctx);
    if (agentError) return agentError;
    // model: checked against the configured models before anything is created (model-choice.ts)
    const choice = args.model !== undefined ? await resolveModelChoice(manager.client, args.model) : undefined;
    if (choice && "error" in choice) return choice.error;
    // without model: the agent's own model when its config names one, else the caller's (a native fork: always the caller's)
    const agentModel = agentModelOf(manager.client, agent);
    const isolation = args.isolation ?? "shared";
    const input = { description: description.text, prompt: args.prompt, agent, fork: Boolean(args.fork), isolation, ...(choice ?? (agentModel ? { model: agentModel } : {})) };
    // fork: native when the child can be a copy of the caller (src/native) on the caller's model, else the text fork
    // (a worktree child's system prompt names another directory: never native)
    const blocked = args.fork && native ? (isolation === "worktree" ? MESSAGES.worktreeForkNotNative : nativeForkBlockedBy(choice, ctx)) : undefined;
    const plan = args.fork && native ? (blocked ? { fallback: blocked } : await planNativeFork(native, ctx, named)) : undefined;
    const reply = await launchTask(manager, plan ? { ...input, ...("native" in plan ? { native: plan.native } : { fallback: plan.fallback }) } : input, ctx);
    if (description.cut) reply.output += `\n${ARG_MESSAGES.descriptionCut}`;
    if (manager.oneShotRun) reply.output += `\n\n${await waitInOneShotRun(manager, reply.metadata.taskId as string, ctx)}`;
    return reply;
  }

  return tool({
    description: TOOL_DESCRIPTIONS.background_task,
    args: BACKGROUND_TASK_ARGS,
    async execute(raw, ctx) {
      // OpenCode does not validate arguments: parse them before anything else.
      const parsed = parseToolArgs("background_task", BACKGROUND_TASK_ARGS, raw);
      if (!parsed.ok) return parsed.error;
      const args = parsed.value;
      const key = `${ctx.sessionID}:${callIdOf(ctx)}`;
      let launch = inFlight.get(key);
      if (!launch) {
        launch = run(args, ctx).catch((error: Error) => MESSAGES.launchFailed(error.message));
        inFlight.set(key, launch);
        void launch.finally(() => inFlight.delete(key));
      }
      return launch;
    },
  });
}

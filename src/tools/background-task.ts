import { type ToolContext, tool } from "@opencode-ai/plugin";
import { ARG_DESCRIPTIONS, MESSAGES, TOOL_DESCRIPTIONS } from "../prompts.js";
import { type ToolReply, checkAgent, launchTask, resumeTask } from "../manager/task-lifecycle.js";
import { callIdOf } from "../manager/client.js";
import type { TaskManager } from "../manager/task-manager.js";
import { isActive } from "../manager/types.js";
import { findCallerTask } from "./resolve.js";
import { type NativeForkOptions, planNativeFork } from "../native/launch.js";

type Args = { description: string; prompt: string; agent?: string; fork?: boolean; resume?: string };

export function createBackgroundTaskTool(manager: TaskManager, native?: NativeForkOptions) {
  /** Launches in flight, by parent + callID: a repeated call waits for the same launch. */
  const inFlight = new Map<string, Promise<ToolReply | string>>();

  async function run(args: Args, ctx: ToolContext): Promise<ToolReply | string> {
    if (args.fork && args.resume) return MESSAGES.forkWithResume;
    // The agent may be left out for a fork (native: the caller's own) and for a resume (the task's).
    const required = args.resume ? (["prompt"] as const) : args.fork ? (["description", "prompt"] as const) : (["description", "prompt", "agent"] as const);
    const blank = required.filter((field) => !args[field]?.trim());
    if (blank.length) return MESSAGES.blank([...blank]);
    await manager.ready();
    if (manager.isChildSession(ctx.sessionID)) return MESSAGES.childCannotLaunch;

    const repeated = manager.findByCallID(ctx.sessionID, callIdOf(ctx));
    if (repeated) return { title: repeated.description, output: isActive(repeated.status) && repeated.run > 1 ? MESSAGES.resumed(repeated) : MESSAGES.launched(repeated), metadata: { sessionId: repeated.sessionID, taskId: repeated.id } };

    const named = args.agent?.trim() || undefined;
    if (args.resume) {
      const found = findCallerTask(manager, ctx.sessionID, args.resume);
      if ("error" in found) return found.error;
      if (isActive(found.task.status)) return MESSAGES.resumeNotFinished(found.task);
      const agent = named ?? found.task.agent;
      const agentError = await checkAgent(manager.client, agent);
      if (agentError) return agentError;
      return resumeTask(manager, found.task, { prompt: args.prompt, agent }, ctx);
    }
    const agent = named ?? ctx.agent;
    const agentError = await checkAgent(manager.client, agent);
    if (agentError) return agentError;
    const description = args.description.trim();
    if (args.fork && native) {
      const plan = await planNativeFork(native, ctx, named);
      if ("native" in plan) return launchTask(manager, { description, prompt: args.prompt, agent, fork: true, native: plan.native }, ctx);
      return launchTask(manager, { description, prompt: args.prompt, agent, fork: true, fallback: plan.fallback }, ctx);
    }
    return launchTask(manager, { description, prompt: args.prompt, agent, fork: Boolean(args.fork) }, ctx);
  }

  return tool({
    description: TOOL_DESCRIPTIONS.background_task,
    args: {
      description: tool.schema.string().describe(ARG_DESCRIPTIONS.description),
      prompt: tool.schema.string().describe(ARG_DESCRIPTIONS.prompt),
      agent: tool.schema.string().optional().describe(ARG_DESCRIPTIONS.agent),
      fork: tool.schema.boolean().optional().describe(ARG_DESCRIPTIONS.fork),
      resume: tool.schema.string().optional().describe(ARG_DESCRIPTIONS.resume),
    },
    async execute(args, ctx) {
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

import { type ToolContext, tool } from "../host/tool.js";
import { DESCRIPTION_MAX_CHARS, ONE_SHOT_RUN_WAIT_MAX_S, PROMPT_MAX_CHARS } from "../constants.js";
import { MESSAGES } from "../prompts.js";
import { DESCRIPTION, REPLIES } from "./background-task.txt.js";
import { oneLine } from "../text.js";
import { callIdOf } from "../host/tool-context.js";
import type { TaskService, ToolReply } from "../manager/task-service.js";
import { isMoving, meaningOf } from "../task-record.js";
import { BACKGROUND_TASK_ARGS, type ParsedArgs, parseToolArgs, taskIdArg } from "./args.js";
import { findCallerTask } from "./resolve.js";
import { endedTaskResult } from "./result.js";
import { type NativeForkOptions, planNativeFork } from "../native/launch.js";
import { hostPatternError } from "../worktree/sandbox/hosts.js";

type Args = ParsedArgs<typeof BACKGROUND_TASK_ARGS>;

/**
 * Under `opencode run` the process exits when this session goes idle, cutting the child off: the
 * call waits for the task instead, and its result is the answer (no notice, no wake-up follow).
 */
async function waitInOneShotRun(service: TaskService, taskID: string, ctx: ToolContext): Promise<string> {
  const task = service.get(taskID);
  if (!task) return "";
  await service.waitForEnd(task, ONE_SHOT_RUN_WAIT_MAX_S * 1000, ctx.abort);
  if (isMoving(task.status)) {
    return `${REPLIES.oneShotRunStillRunning(task, ONE_SHOT_RUN_WAIT_MAX_S)}`;
  }
  return `${REPLIES.oneShotRunWaited}\n${await endedTaskResult(service, task, { asNotice: true })}`;
}

/** Asks OpenCode's permission "offshoot_network" for the hosts (the user's permission rules decide, or a person answers); whether it was given. */
async function askNetwork(ctx: ToolContext, hosts: readonly string[]): Promise<boolean> {
  if (typeof ctx.ask !== "function") return true;
  try {
    await ctx.ask({ permission: "offshoot_network", patterns: [...hosts], always: [...hosts], metadata: { hosts } });
    return true;
  } catch {
    return false;
  }
}

/** A follow-up under `opencode run` (a new run, a continue, a message into the task) that left the task going: it waits for it too. */
async function waitedFollowUp(service: TaskService, reply: ToolReply, ctx: ToolContext): Promise<ToolReply> {
  const task = service.get(reply.metadata.taskId as string);
  if (!task || !isMoving(task.status)) return reply;
  return { ...reply, output: `${reply.output}\n\n${await waitInOneShotRun(service, task.id, ctx)}` };
}

export function createBackgroundTaskTool(service: TaskService, native?: NativeForkOptions) {
  /** Launches in flight, by parent + callID: a repeated call waits for the same launch. */
  const inFlight = new Map<string, Promise<ToolReply | string>>();

  /** `resume`: a message into a task that goes on, a paused task continued in place, or a new run of an ended one. */
  async function followUp(args: Args & { resume: string }, ctx: ToolContext, named: string | undefined): Promise<ToolReply | string> {
    if (args.model !== undefined) return REPLIES.modelWithResume;
    const found = findCallerTask(service, ctx.sessionID, taskIdArg(args.resume));
    if ("error" in found) return found.error;
    // What a follow-up does is the status's row: a task that goes on is steered (steer.ts); one that ended meanwhile is resumed below.
    if (meaningOf(found.task.status).followUp === "steer") {
      const steered = await service.steer(found.task, args.prompt, named);
      if (steered !== undefined) return steered;
    }
    // the parent's budget: checked before anything new starts; a message into a running task is no new start
    const refused = service.budgetRefusal(ctx.sessionID);
    if (refused) return refused;
    const agent = named ?? found.task.agent;
    const agentError = await service.checkAgent(agent, ctx);
    if (agentError) return agentError;
    // a paused task (its parent's budget was reached, and is no longer) goes on in place, in the same run
    if (meaningOf(found.task.status).followUp === "continue") return service.continueTask(found.task, { prompt: args.prompt, agent }, ctx);
    return service.resume(found.task, { prompt: args.prompt, agent }, ctx);
  }

  async function run(args: Args, ctx: ToolContext): Promise<ToolReply | string> {
    if (args.fork && args.resume) return REPLIES.forkWithResume;
    if (args.isolation && args.resume) return REPLIES.isolationWithResume;
    if (args.network && args.resume) return REPLIES.networkWithResume;
    if (args.remote !== undefined && args.resume) return REPLIES.remoteWithResume;
    if (args.remote !== undefined && args.isolation === "shared") return REPLIES.remoteShared;
    if (args.network?.length && args.isolation !== "worktree" && args.remote === undefined) return REPLIES.networkWithoutWorktree;
    for (const host of args.network ?? []) {
      const why = hostPatternError(host);
      if (why) return REPLIES.networkBadHost(host, why);
    }
    // One clean line for what names things (title, notices); the prompt goes to the child as given.
    const description = oneLine(args.description ?? "", DESCRIPTION_MAX_CHARS);
    const cleaned = { description: description.text, prompt: args.prompt.trim(), agent: oneLine(args.agent ?? "", DESCRIPTION_MAX_CHARS).text };
    // The agent may be left out with fork (a native fork: the caller's own agent) and with resume (the task's).
    const required = args.resume ? (["prompt"] as const) : args.fork ? (["description", "prompt"] as const) : (["description", "prompt", "agent"] as const);
    // description is optional in the schema (a resumed task keeps its name); a new task needs one
    if (!args.resume && args.description === undefined) return REPLIES.descriptionMissing;
    // left out (not blank): name the fault, not "agent is empty"
    if (!args.resume && !args.fork && args.agent === undefined) return REPLIES.agentMissing;
    const blank = required.filter((field) => !cleaned[field]);
    if (blank.length) return REPLIES.blank([...blank]);
    if (args.prompt.length > PROMPT_MAX_CHARS) return REPLIES.promptTooLong(args.prompt.length);
    await service.ready();
    if (service.isChildSession(ctx.sessionID)) return REPLIES.childCannotLaunch;

    const repeated = service.findByCallID(ctx.sessionID, callIdOf(ctx));
    if (repeated)
      return {
        title: repeated.description,
        output: isMoving(repeated.status) && repeated.run > 1 ? MESSAGES.resumed(repeated) : MESSAGES.launched(repeated),
        metadata: { sessionId: repeated.sessionID, taskId: repeated.id },
      };

    const named = cleaned.agent || undefined;
    if (args.resume) {
      const reply = await followUp({ ...args, resume: args.resume }, ctx, named);
      // under opencode run a follow-up that set the task going waits for it, exactly as a launch does
      return service.oneShotRun && typeof reply !== "string" ? waitedFollowUp(service, reply, ctx) : reply;
    }
    // the parent's budget (manager/budget.ts): checked before anything new starts
    const refused = service.budgetRefusal(ctx.sessionID);
    if (refused) return refused;
    const agent = named ?? ctx.agent;
    const agentError = await service.checkAgent(agent, ctx);
    if (agentError) return agentError;
    // model: checked against the configured models before anything is created (model-choice.ts)
    const choice = args.model !== undefined ? await service.resolveModel(args.model) : undefined;
    if (choice && "error" in choice) return choice.error;
    // without model: the agent's own model when its config names one, else the caller's (a native fork: always the caller's)
    const agentModel = service.agentModel(agent);
    // (a remote task is a worktree task there)
    const isolation = args.remote !== undefined ? "worktree" : (args.isolation ?? "shared");
    // the hosts a person asked for: OpenCode's permission "offshoot_network" (asked, or allowed by the user's rules) before anything is made
    const network = [...new Set(args.network ?? [])];
    if (network.length && !(await askNetwork(ctx, network))) return REPLIES.networkRefused(network);
    const input = {
      description: description.text,
      prompt: args.prompt,
      agent,
      fork: Boolean(args.fork),
      isolation,
      ...(network.length ? { network } : {}),
      ...(choice ?? (agentModel && args.remote === undefined ? { model: agentModel } : {})),
      ...(args.remote !== undefined ? { remote: args.remote.trim() } : {}),
    };
    // fork: native when the child can be a copy of the caller (src/native) on the caller's model, else the text fork
    // (into a worktree too: its instance maps the checkout's paths to the worktree and keeps the parent's prompt, src/worktree/instance.ts)
    const blocked = args.fork && native ? service.nativeForkBlockedBy(choice, ctx) : undefined;
    // (on a remote a fork is a text fork: the remote's launch says so when it would have been native here)
    const plan = args.fork && native && args.remote === undefined ? (blocked ? { fallback: blocked } : await planNativeFork(native, ctx, named)) : undefined;
    const reply = await service.launch(plan ? { ...input, ...("native" in plan ? { native: plan.native } : { fallback: plan.fallback }) } : input, ctx);
    if (description.cut) reply.output += `\n${REPLIES.descriptionCut}`;
    if (service.oneShotRun) reply.output += `\n\n${await waitInOneShotRun(service, reply.metadata.taskId as string, ctx)}`;
    return reply;
  }

  return tool({
    description: DESCRIPTION,
    args: BACKGROUND_TASK_ARGS,
    async execute(raw, ctx) {
      // The budget is a person's to raise: an argument that tries to is refused, whatever its value.
      if (raw && typeof raw === "object" && Object.keys(raw).some((key) => /budget/i.test(key))) return REPLIES.budgetNotYours;
      // OpenCode does not validate arguments: parse them before anything else.
      const parsed = parseToolArgs("background_task", BACKGROUND_TASK_ARGS, raw);
      if (!parsed.ok) return parsed.error;
      const args = parsed.value;
      const key = `${ctx.sessionID}:${callIdOf(ctx)}`;
      let launch = inFlight.get(key);
      if (!launch) {
        launch = run(args, ctx).catch((error: Error) => REPLIES.launchFailed(error.message));
        inFlight.set(key, launch);
        void launch.finally(() => inFlight.delete(key));
      }
      return launch;
    },
  });
}

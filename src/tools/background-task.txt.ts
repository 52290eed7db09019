// background_task's texts: its description (what the model reads about the tool), its arguments'
// descriptions, and the replies this tool writes itself (the launch and resume replies are the
// manager's: src/prompts.ts).

import { DESCRIPTION_MAX_CHARS, PROMPT_MAX_CHARS } from "../constants.js";
import type { BackgroundTask } from "../task-record.js";

export const DESCRIPTION = [
  "Run a sub-agent task in the background, in a child session of its own, while you keep working.",
  "Returns at once with a task id; you get a notification in this session when the task ends. (Under a one-shot `opencode run`, which ends and stops its children once this session is idle, the call waits for the task instead and returns its result; so does a resume that sets a task going.)",
  "agent is required without fork: it names who runs the task (e.g. general or explore).",
  "With fork: true the child starts knowing what you know. Without agent (or with your own agent) it is a native fork: a copy of you that sees this whole conversation and reuses your prompt cache. With another agent it gets a processed copy of this conversation (recent tool results whole, older ones shortened). Without fork, the child sees only the prompt.",
  'With model: "provider/model" the child runs on that model (e.g. a cheap one for a search, a strong one for a review); without it, on the agent\'s own model if its config names one, else on yours.',
  "With isolation: \"worktree\" the child works in its own git worktree and branch (parallel writers never collide; a fork there can be native too): every path under this checkout means the same path in its worktree (its file tools are pointed there; a shell command naming this checkout is refused). Its commands run in an OS sandbox: they write only its worktree and caches of its own, have no network and no unix socket of the user's (no host is reachable unless a person allowed it: network), and OpenCode's config there stays the user's. (Only where no sandbox can run and the user set allowUnsandboxedWorktrees are the text-level checks all there is: then a script it writes can reach your checkout.) Its changes are committed on its branch when it ends, and background_take applies them to your checkout in one call.",
  "With resume: <task id> you send a follow-up prompt to a finished task's child session (it keeps its own history). On a task that is still running, resume sends the prompt into it as a message: the child reads it at its next step, and the task stays the same task (use it to redirect a child going the wrong way). fork and resume cannot be combined.",
  "This session's background work has a budget (tokens charged in full and dollars, over all of its tasks): at 80% you are warned; at 100% no task starts and running ones pause after their step. Only a person raises it (/tasks, or the plugin options); you cannot. A paused task goes on in place with resume once it is raised.",
  "Read results with background_output, stop tasks with background_cancel, see them all with background_list.",
].join("\n");

/** The arguments' descriptions (args.ts). */
export const ARGS = {
  description:
    "A short (3-8 words) description of the task; it names the child session. Needed for a new task; leave it out with resume (the task keeps its name).",
  prompt: "The full instructions for the sub-agent (or, with resume, the follow-up message).",
  agent:
    "The agent that runs the task, e.g. general or explore: required without fork (and without resume). With fork: true leave it out (or name your own agent) for a native fork: the child is a copy of you that shares your prompt cache.",
  fork: "Give the child this conversation so it starts knowing what you know: a native fork (agent left out, or your own) is handed the conversation itself and reuses your prompt cache; with another agent, another model or a conversation over the native fork's cap, it gets a processed copy (recent tool results whole, older ones shortened).",
  model:
    'The model the child runs on, as "provider/model" (or "provider/model#variant"); leave it out to use yours. A native fork needs your model: another one makes it a text fork.',
  resume:
    "Task id of a task of this session: a finished or paused one continues with the prompt (same child session); a running or queued one gets the prompt as a message (read at its next step, or with its prompt when it starts).",
  isolation:
    'Where the child edits files: "shared" (default) works in this checkout; "worktree" gives it its own git worktree and branch offshoot/<task id>, made from what you see now (HEAD plus uncommitted changes), its commands in an OS sandbox with no network; paths under this checkout mean its copy there; when it ends, its changes are committed there and you get the diff summary; background_take applies them to your working tree.',
  remote:
    'Only when the user set up remotes (plugin option "remotes") and asked for it: the name of another machine running OpenCode with this plugin, where the task runs as a worktree task (isolation: "worktree" is implied): what you see now (HEAD plus uncommitted changes) goes there as a commit through the shared git remote, and its branch comes back here when each run is committed, for background_take. A fork there gets a text copy of this conversation.',
  network:
    'Only with isolation: "worktree", and only when the user asked for it: hosts the child\'s commands may reach, through the plugin\'s proxy (HTTP and HTTPS), e.g. ["registry.npmjs.org"] or ["*.example.com"] (":port" when not 80 or 443). Without it a worktree child has no network (but the hosts of the plugin option sandboxNetwork). This machine\'s own services and private addresses are never reachable.',
} as const;

/** What background_task answers when it refuses or waits (the other replies come from the manager). */
export const REPLIES = {
  forkWithResume: "Cannot use fork and resume together. Use fork for new tasks with context, resume for continuing existing tasks.",
  descriptionMissing:
    'Error: background_task argument "description" is missing; a new task needs it (only resume can leave it out). Call background_task again with description: "<3-8 words>".',
  agentMissing:
    'Error: background_task argument "agent" is missing; without fork a new task needs the agent that runs it. Call background_task again with agent: "general" (or another agent), or with fork: true for a copy of you.',
  blank: (fields: string[]) =>
    `Error: ${fields.join(", ")} ${fields.length === 1 ? "is" : "are"} empty. Give background_task a non-empty ${fields.join(" and ")}.`,
  oneShotRunWaited:
    "This is a one-shot `opencode run`: it would end (and stop the child) as soon as this session is idle, so this call waited for the task. Its result:",
  oneShotRunStillRunning: (task: BackgroundTask, seconds: number) =>
    `This is a one-shot \`opencode run\`; the task did not end within ${seconds}s or the wait was interrupted. It stops when this run ends; read what it did with background_output({ task_id: "${task.id}" }).`,
  childCannotLaunch: "Error: this session is itself a background task; it cannot start background tasks of its own. Do the work directly in this session.",
  launchFailed: (what: string) => `Error: the background task was not started: ${what}. Nothing was left behind; you can call background_task again.`,
  isolationWithResume: "Error: isolation cannot be given with resume: a resumed task continues where it ran (a worktree task in its own worktree).",
  descriptionCut: `Description cut to ${DESCRIPTION_MAX_CHARS} characters.`,
  promptTooLong: (length: number) =>
    `Error: background_task argument "prompt" is ${length} characters long; at most ${PROMPT_MAX_CHARS} are accepted. Nothing was started. Put the long material in a file, and call background_task again with a prompt that names the file and says what to do with it.`,
  budgetNotYours:
    "Error: the budget of this session's background work cannot be raised by an agent. Nothing was started. Only a person can raise it: in the TUI, /tasks → a task → \"Raise the session's budget\", or the plugin options sessionBudgetTokens / sessionBudgetCost in opencode.json. Tell the user what you need it for.",
  networkWithoutWorktree:
    'Error: network can be given only with isolation: "worktree" (a task in this checkout runs its commands as you do). Nothing was started.',
  networkWithResume: "Error: network cannot be given with resume: a resumed task keeps the hosts it was given. Nothing was changed.",
  remoteWithResume: "Error: remote cannot be given with resume: a resumed task runs where it ran. Nothing was changed.",
  remoteShared: 'Error: remote runs a task in a worktree there; isolation: "shared" cannot go with it. Nothing was started.',
  networkBadHost: (host: string, why: string) =>
    `Error: background_task argument "network" holds ${JSON.stringify(host.slice(0, 100))}, which is not a host pattern: ${why}. Nothing was started. Call background_task again with hosts like ["registry.npmjs.org", "*.example.com"].`,
  networkRefused: (hosts: readonly string[]) =>
    `Error: the network for ${hosts.join(", ")} was not allowed (the permission "offshoot_network" was refused). Nothing was started. Launch the task without network, or ask the user.`,
  modelWithResume:
    "Error: model cannot be given with resume: a resumed task keeps the model it ran on. Start a new task with background_task({ description, prompt, agent, model }) to use another model.",
} as const;

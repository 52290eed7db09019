// The one new user message a native child gets after the inherited prefix.

import { BACKGROUND_TASK_TOOL } from "../fork/constants.js";
import { withToolNames } from "../tool-names.js";

export const NATIVE_PREAMBLE = [
  `You are a forked copy of the agent above: everything before this message is that agent's conversation, up to its ${BACKGROUND_TASK_TOOL} call that started you.`,
  "You run in the background in a child session of your own. Do the task below yourself, with your tools.",
  "Do not delegate it and do not start background tasks. Your final message is the result the parent agent will read.",
].join("\n");

/** The directive; `workplace` (a worktree task: where the child works, worktree/isolation.txt.ts) goes before the task. */
export function nativeDirective(prompt: string, workplace?: string): string {
  return `${withToolNames(NATIVE_PREAMBLE)}\n\n${workplace ? `${workplace}\n\n` : ""}<task>\n${prompt}\n</task>`;
}

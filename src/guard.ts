// No route to delegation from a background child. The child's tool list stays exactly the
// parent's (a native fork shares the parent's prompt cache only then), so delegation is refused
// when a tool is called, not by removing tools: OpenCode's `tool.execute.before` hook runs before
// every tool, and an error thrown there is what OpenCode turns into that call's error result, the
// plugin API's one way to refuse a call. Our own background_task refuses a child itself (tools/background-task.ts);
// the other background tools answer a child about its own tasks, of which it has none.

import { childCannotDelegate } from "./guard.txt.js";

/** Built-in tools that would start another agent from inside a background child. */
export const DELEGATING_TOOLS: ReadonlySet<string> = new Set(["task"]);

/** The refusal for `tool` called in `sessionID`, if it must be refused. */
export function delegationRefusal(tool: string, sessionID: string, isBackgroundChild: (sessionID: string) => boolean): string | undefined {
  if (!DELEGATING_TOOLS.has(tool) || !isBackgroundChild(sessionID)) return undefined;
  return childCannotDelegate(tool);
}

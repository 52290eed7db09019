// The background tools as the OpenCode instance of a task worktree offers them. The child there must see
// exactly the parent's tool list (a native fork shares the parent's prompt cache only when its
// tools are byte-identical: same names, descriptions and argument schemas), so the tools are the
// same definitions; a call only answers that a background child manages no tasks (no manager runs
// in that instance: the project's instance owns the tasks).

import { tool } from "../host/tool.js";
import { namedTools } from "./named.js";
import { BACKGROUND_CANCEL_ARGS, BACKGROUND_LIST_ARGS, BACKGROUND_OUTPUT_ARGS, BACKGROUND_TAKE_ARGS, BACKGROUND_TASK_ARGS } from "./args.js";
import { DESCRIPTION as CANCEL_DESCRIPTION } from "./background-cancel.txt.js";
import { DESCRIPTION as LIST_DESCRIPTION } from "./background-list.txt.js";
import { DESCRIPTION as OUTPUT_DESCRIPTION } from "./background-output.txt.js";
import { DESCRIPTION as TAKE_DESCRIPTION } from "./background-take.txt.js";
import { DESCRIPTION as TASK_DESCRIPTION } from "./background-task.txt.js";
import { CHILD_TOOL_REPLIES } from "./child-tools.txt.js";

export function createChildTools() {
  // (named as the project's instance names them: tools/named.ts renames the descriptions and the replies)
  return namedTools({
    task: tool({ description: TASK_DESCRIPTION, args: BACKGROUND_TASK_ARGS, execute: async () => CHILD_TOOL_REPLIES.launch }),
    output: tool({
      description: OUTPUT_DESCRIPTION,
      args: BACKGROUND_OUTPUT_ARGS,
      execute: async () => CHILD_TOOL_REPLIES.manage("background_output"),
    }),
    cancel: tool({
      description: CANCEL_DESCRIPTION,
      args: BACKGROUND_CANCEL_ARGS,
      execute: async () => CHILD_TOOL_REPLIES.manage("background_cancel"),
    }),
    list: tool({ description: LIST_DESCRIPTION, args: BACKGROUND_LIST_ARGS, execute: async () => CHILD_TOOL_REPLIES.manage("background_list") }),
    take: tool({ description: TAKE_DESCRIPTION, args: BACKGROUND_TAKE_ARGS, execute: async () => CHILD_TOOL_REPLIES.manage("background_take") }),
  });
}

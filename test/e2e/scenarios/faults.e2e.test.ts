/**
 * The lifecycle under faults, on the real server: a child cannot delegate, deleted parents and
 * children end their tasks once and stop their loops, and a parent that read a result itself is not
 * woken for it.
 */
import { describe, expect, test } from "vitest";
import { getMessages, hasToolResult, isToolFollowUp, lastUserText, toolNames, toolResult } from "../harness/index.js";
import {
  children,
  isWake,
  newSession,
  notifications,
  promptText,
  registerLateChecks,
  requestOf,
  scriptLaunch,
  storedTask,
  taskIdIn,
  toolOutputs,
  turnEndsAfter,
  until,
  useOpencode,
  wakePrompts,
} from "./helpers.js";

const env = useOpencode();

describe("faults", () => {
  test("a background child cannot delegate: the task tool is refused at call time, its tool list stays the parent's", async () => {
    const { model } = env;
    scriptLaunch(model, { name: "d", cue: "DELEGATE_D", task: { description: "Try to delegate", prompt: "CHILD_D: delegate this", agent: "build" }, launched: "Launched D." });
    model.script({
      name: "d-child",
      match: (r) => lastUserText(r).includes("CHILD_D") && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "task", arguments: { description: "sub", prompt: "GRANDCHILD_D", subagent_type: "general" } }] },
    });
    model.script({ name: "d-child-done", match: (r) => lastUserText(r).includes("CHILD_D") && isToolFollowUp(r), reply: { text: "did it myself D" } });
    model.script({ name: "d-grandchild", match: (r) => lastUserText(r).includes("GRANDCHILD_D"), reply: { text: "grandchild ran" } });
    model.script({ name: "d-wake", match: (r) => isWake(r) && lastUserText(r).includes("Try to delegate"), reply: { text: "noted D" } });

    const parent = await newSession(env.server.client, "delegate D");
    await promptText(env.server.client, parent, "DELEGATE_D");
    const parentReq = await requestOf(model, "d-launch");
    const childReq = await requestOf(model, "d-child");
    const followUp = await requestOf(model, "d-child-done");
    await requestOf(model, "d-wake");

    // The child saw exactly the tools its parent (same agent) saw: nothing removed.
    expect(toolNames(childReq.body)).toEqual(toolNames(parentReq.body));
    // The task call came back as an error naming the refusal; no grandchild session was made.
    const refused = toolResult(followUp.body, "task");
    expect(refused?.content).toContain("cannot hand its work to another agent");
    const [kid] = await children(env.server.client, parent);
    expect(await children(env.server.client, kid!.id)).toEqual([]);
    expect(model.requests.some((r) => r.label === "d-grandchild")).toBe(false);
    const taskID = taskIdIn(toolOutputs(await getMessages(env.server.client, parent), "background_task")[0]!);
    expect((await storedTask(env.server, taskID))?.status).toBe("completed");
  });
});

registerLateChecks(env);

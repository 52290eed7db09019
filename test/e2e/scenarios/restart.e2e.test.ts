/**
 * Scenario h: a task is running when OpenCode restarts. After the restart the plugin reconciles it
 * (an unfinished child → error "interrupted") and notifies its parent exactly once, even across a
 * further restart.
 */
import { describe, expect, test } from "vitest";
import { getMessages, hasToolResult, isToolFollowUp, lastUserText, textOf } from "../harness/index.js";
import {
  checkDeliveriesLater,
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
  useOpencode,
  wakePrompts,
} from "./helpers.js";

const env = useOpencode();

describe("restart", () => {
  test("h. a task running across a restart is reconciled as interrupted and its parent notified once", async () => {
    const { model } = env;
    const desc = "Interrupted task H";
    scriptLaunch(model, { name: "h", cue: "RESTART_H", task: { description: desc, prompt: "CHILD_TASK_H: long job", agent: "general" }, launched: "Launched H." });
    model.script({ name: "h-child", match: (r) => lastUserText(r).includes("CHILD_TASK_H"), reply: { text: "never H", delayMs: 120_000 } });
    model.script({
      name: "h-wake",
      match: (r) => isWake(r) && lastUserText(r).includes(`"${desc}"`) && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "background_list", arguments: {} }] },
    });
    model.script({ name: "h-wake-done", match: (r) => isWake(r) && hasToolResult(r, "background_list", { sinceLastUser: true }), reply: { text: "PARENT_DONE_H" } });
    model.script({
      name: "h-list2",
      match: (r) => lastUserText(r) === "LIST_H2" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "background_list", arguments: {} }] },
    });
    model.script({ name: "h-list2-done", match: (r) => lastUserText(r) === "LIST_H2" && isToolFollowUp(r), reply: { text: "Listed H." } });

    const parent = await newSession(env.server.client, "restart H");
    await promptText(env.server.client, parent, "RESTART_H");
    const childReq = await requestOf(model, "h-child");
    const taskID = taskIdIn(toolOutputs(await getMessages(env.server.client, parent), "background_task")[0]!);
    const [kid] = await children(env.server.client, parent);
    expect((await storedTask(env.server, taskID))?.status).toBe("running");

    // Restart while the child waits for its model.
    env.ev.close();
    await env.server.restart();
    await env.resubscribe();
    expect(childReq.aborted).toBe(true);

    // The plugin recovers on load: the parent is notified and woken; the wake lists the task.
    await turnEndsAfter(env, parent, "h-wake-done", 30_000);
    const client = env.server.client;
    const stored = await storedTask(env.server, taskID);
    expect(stored?.status).toBe("error");
    expect(stored?.error).toMatch(/interrupted/);
    expect(stored?.notifiedRun).toBe(1);

    const parentMsgs = await getMessages(client, parent);
    const notes = notifications(parentMsgs, taskID);
    expect(notes).toHaveLength(1);
    expect(textOf(notes[0]!)).toContain(`[background task ${taskID} failed] "${desc}"`);
    expect(textOf(notes[0]!)).toMatch(/error: interrupted/);
    expect(notifications(parentMsgs)).toHaveLength(1);
    expect(wakePrompts(parentMsgs)).toHaveLength(1);
    const [listOut] = toolOutputs(parentMsgs, "background_list");
    expect(listOut).toMatch(new RegExp(`\\| ${taskID} \\| ${desc} \\| general \\| error \\|`));
    // No new child session was made for it.
    expect((await children(client, parent)).map((k) => k.id)).toEqual([kid!.id]);

    // A second restart does not deliver it again (the delivery is persisted).
    env.ev.close();
    await env.server.restart();
    await env.resubscribe();
    await promptText(env.server.client, parent, "LIST_H2"); // a tool call: the plugin's start-up has run
    const again = await getMessages(env.server.client, parent);
    expect(toolOutputs(again, "background_list")[1]).toMatch(new RegExp(`\\| ${taskID} \\| ${desc} \\| general \\| error \\|`));
    expect(notifications(again)).toHaveLength(1);
    expect(wakePrompts(again)).toHaveLength(1);

    checkDeliveriesLater(env, "h: one notification", parent, { notifications: 1, wakes: 1 });
  });

  registerLateChecks(env);
});

/**
 * The lifecycle under faults, on the real server: a child cannot delegate, deleted parents and
 * children end their tasks once and stop their loops, and a parent that read a result itself is not
 * woken for it.
 */
import { describe, expect, test } from "vitest";
import { getMessages, hasToolResult, isToolFollowUp, lastUserText, toolNames, toolResult } from "../harness/index.js";
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
  until,
  useOpencode,
  wakePrompts,
} from "./helpers.js";

/** About 20 s of streaming at one word per 500 ms. */
const LONG_ANSWER = Array.from({ length: 40 }, (_, i) => `word${i}`).join(" ");

const env = useOpencode({ files: { "notes.txt": "a line to read\n" } });

describe("faults", () => {
  test("a background child cannot delegate: the task tool is refused at call time, its tool list stays the parent's", async () => {
    const { model } = env;
    scriptLaunch(model, {
      name: "d",
      cue: "DELEGATE_D",
      task: { description: "Try to delegate", prompt: "CHILD_D: delegate this", agent: "build" },
      launched: "Launched D.",
    });
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

  test("a deleted parent: its children's loops stop, its tasks end once, nothing is retried for it", async () => {
    const { model } = env;
    scriptLaunch(model, {
      name: "p",
      cue: "PARENT_P",
      task: { description: "Orphan P", prompt: "CHILD_P: stream", agent: "general" },
      launched: "Launched P.",
    });
    // The child streams a long answer (about 20 s) until something stops it.
    model.script({ name: "p-child", match: (r) => lastUserText(r).includes("CHILD_P"), reply: { text: LONG_ANSWER, chunkDelayMs: 500 } });
    const parent = await newSession(env.server.client, "parent P");
    await promptText(env.server.client, parent, "PARENT_P");
    const streaming = await requestOf(model, "p-child");
    const taskID = taskIdIn(toolOutputs(await getMessages(env.server.client, parent), "background_task")[0]!);

    await env.server.client.session.delete({ path: { id: parent } });
    const stored = await until("the task ended", async () => {
      const t = await storedTask(env.server, taskID);
      return t?.status !== "running" && t;
    });
    expect(stored.status).toBe("error");
    expect(stored.error).toMatch(/parent session was deleted|child session was deleted/);
    // Nothing is owed to the deleted parent any more: no notice or wake will be tried again.
    expect(stored.notifiedRun).toBe(stored.run);
    // The child's loop is stopped: its streaming request is cut off, not left to run on.
    await until("the child's stream aborted", () => streaming.aborted, 8_000);
    expect(streaming.done && !streaming.aborted).toBe(false);
    env.later("P: no retry for the deleted parent", async () => {
      expect(model.requests.filter((r) => r.label === "p-child")).toHaveLength(1);
      expect(env.server.logs()).not.toMatch(new RegExp(`notifying session ${parent} failed`));
    });
  });

  test("a child deleted from outside: its loop stops and its task ends once, the parent told once", async () => {
    const { model } = env;
    scriptLaunch(model, {
      name: "c",
      cue: "CHILD_DEL_C",
      task: { description: "Deleted C", prompt: "CHILD_C: stream", agent: "general" },
      launched: "Launched C.",
    });
    model.script({ name: "c-child", match: (r) => lastUserText(r).includes("CHILD_C"), reply: { text: LONG_ANSWER, chunkDelayMs: 500 } });
    model.script({ name: "c-wake", match: (r) => isWake(r) && lastUserText(r).includes("Deleted C"), reply: { text: "noted C" } });
    const parent = await newSession(env.server.client, "parent C");
    await promptText(env.server.client, parent, "CHILD_DEL_C");
    const streaming = await requestOf(model, "c-child");
    const [kid] = await children(env.server.client, parent);
    await env.server.client.session.delete({ path: { id: kid!.id } });
    await requestOf(model, "c-wake");
    const taskID = taskIdIn(toolOutputs(await getMessages(env.server.client, parent), "background_task")[0]!);
    const stored = await storedTask(env.server, taskID);
    expect(stored?.status).toBe("error");
    expect(stored?.error).toContain("child session was deleted");
    await until("the child's stream aborted", () => streaming.aborted, 8_000);
    const msgs = await getMessages(env.server.client, parent);
    expect(notifications(msgs, taskID)).toHaveLength(1);
    expect(wakePrompts(msgs)).toHaveLength(1);
    env.later("C: the loop stays stopped", async () => {
      expect(model.requests.filter((r) => r.label === "c-child")).toHaveLength(1);
    });
  });

  test("a parent that read the result with background_output({ block }) gets its notice but no wake for it", async () => {
    const { model } = env;
    model.script({
      name: "b-launch",
      match: (r) => lastUserText(r) === "BLOCK_B" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "background_task", arguments: { description: "Read B", prompt: "CHILD_B: work", agent: "general" } }] },
    });
    model.script({
      name: "b-wait",
      match: (r) => lastUserText(r) === "BLOCK_B" && hasToolResult(r, "background_task") && !hasToolResult(r, "background_output"),
      reply: (r) => ({
        toolCalls: [{ name: "background_output", arguments: { task_id: taskIdIn(toolResult(r, "background_task")!.content), block: true, timeout: 30 } }],
      }),
    });
    model.script({ name: "b-done", match: (r) => lastUserText(r) === "BLOCK_B" && hasToolResult(r, "background_output"), reply: { text: "read B" } });
    model.script({ name: "b-child", match: (r) => lastUserText(r).includes("CHILD_B"), reply: { text: "RESULT_B", delayMs: 800 } });
    model.script({ name: "b-wake", match: (r) => isWake(r) && lastUserText(r).includes("Read B"), reply: { text: "woken B" } });
    const parent = await newSession(env.server.client, "block B");
    await promptText(env.server.client, parent, "BLOCK_B");
    const msgs = await getMessages(env.server.client, parent);
    expect(toolOutputs(msgs, "background_output")[0]).toContain("RESULT_B");
    const taskID = taskIdIn(toolOutputs(msgs, "background_task")[0]!);
    await until("the notice", async () => notifications(await getMessages(env.server.client, parent), taskID).length === 1);
    expect((await storedTask(env.server, taskID))?.reportedRun).toBe(1);
    checkDeliveriesLater(env, "B: one notice, no wake", parent, { notifications: 1, wakes: 0 });
  });
});

registerLateChecks(env);

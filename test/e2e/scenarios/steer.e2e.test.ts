/**
 * Steering on the real server: `background_task({ resume, prompt })` on a task that has not ended
 * sends the prompt into it (a running child reads it at its next step; a queued one gets it with its
 * prompt), without a new task, run or child. `concurrency: 1`, so the queued case is easy to set up.
 */
import { describe, expect, test } from "vitest";
import { type ChatRequest, allText, getMessages, hasToolResult, isToolFollowUp, lastUserText, textOf, toolResults } from "../harness/index.js";
import {
  children,
  isWake,
  newSession,
  notifications,
  promptText,
  registerLateChecks,
  requestOf,
  storedTask,
  taskIdIn,
  toolOutputs,
  turnEndsAfter,
  until,
  useOpencode,
  userMessages,
  wakePrompts,
} from "./helpers.js";

const env = useOpencode({ pluginOptions: { concurrency: 1 }, files: { "notes.txt": "NOTES_CONTENT\n" } });

/** A gate a scripted reply waits on, and a promise of the request that reached it. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  let arrived!: (r: ChatRequest) => void;
  const reached = new Promise<ChatRequest>((r) => (arrived = r));
  return { open, opened, arrived, reached };
}

describe("steer", () => {
  test("a running child gets the message in its next model request; same task, run and child; one notice; the list counts it; another session cannot steer it; once ended, the same call resumes it", async () => {
    const { model, server } = env;
    const desc = "Steered task S";
    const step1 = gate();
    let taskID = "";
    model.script({
      name: "s-launch",
      match: (r) => lastUserText(r) === "LAUNCH_S" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "background_task", arguments: { description: desc, prompt: "CHILD_TASK_S", agent: "general" } }] },
    });
    model.script({ name: "s-launched", match: (r) => lastUserText(r) === "LAUNCH_S" && isToolFollowUp(r), reply: { text: "Launched S." } });
    // The child's first step is held until the steer is stored: its loop is busy when the message arrives.
    model.script({
      name: "s-child-step1",
      match: (r) => lastUserText(r) === "CHILD_TASK_S" && !isToolFollowUp(r),
      reply: async (r) => {
        step1.arrived(r);
        await step1.opened;
        return { toolCalls: [{ name: "read", arguments: { filePath: `${server.directory}/notes.txt` } }] };
      },
    });
    model.script({ name: "s-child-step2", match: (r) => lastUserText(r).startsWith("STEER_S"), reply: { text: "S_FINAL_ANSWER" } });
    model.script({
      name: "s-steer",
      match: (r) => lastUserText(r) === "STEER_NOW" && !isToolFollowUp(r),
      reply: () => ({
        toolCalls: [{ name: "background_task", arguments: { description: desc, prompt: "STEER_S: look at the notes instead", resume: taskID } }],
      }),
    });
    model.script({
      name: "s-list",
      match: (r) =>
        lastUserText(r) === "STEER_NOW" &&
        hasToolResult(r, "background_task", { sinceLastUser: true }) &&
        !hasToolResult(r, "background_list", { sinceLastUser: true }),
      reply: { toolCalls: [{ name: "background_list", arguments: {} }] },
    });
    model.script({
      name: "s-steered",
      match: (r) => lastUserText(r) === "STEER_NOW" && hasToolResult(r, "background_list", { sinceLastUser: true }),
      reply: { text: "Steered S." },
    });
    model.script({ name: "s-wake", match: (r) => isWake(r) && lastUserText(r).includes(`"${desc}"`), reply: { text: "Noted S." } });
    // Another session names the task: refused, nothing reaches the child.
    model.script({
      name: "s-other",
      match: (r) => lastUserText(r) === "STEER_OTHER" && !isToolFollowUp(r),
      reply: () => ({ toolCalls: [{ name: "background_task", arguments: { description: desc, prompt: "STEER_FROM_STRANGER", resume: taskID } }] }),
    });
    model.script({ name: "s-other-done", match: (r) => lastUserText(r) === "STEER_OTHER" && isToolFollowUp(r), reply: { text: "Refused." } });

    const parent = await newSession(server.client, "steer S");
    await promptText(server.client, parent, "LAUNCH_S");
    taskID = taskIdIn(toolOutputs(await getMessages(server.client, parent), "background_task")[0]!);
    await step1.reached;
    const [kid] = await children(server.client, parent);
    const childID = kid!.id;

    const stranger = await newSession(server.client, "stranger S");
    await promptText(server.client, stranger, "STEER_OTHER");
    const [refused] = toolOutputs(await getMessages(server.client, stranger), "background_task");
    expect(refused).toContain(`Error: no task "${taskID}": this session has no background tasks.`);

    await promptText(server.client, parent, "STEER_NOW");
    const midMsgs = await getMessages(server.client, parent);
    const [, steerOut] = toolOutputs(midMsgs, "background_task");
    expect(steerOut).toContain(`Message sent to background task ${taskID} "${desc}": its child session ${childID} has stored it`);
    expect(steerOut).toContain("It stays the same task and run (run 1)");
    const [listOut] = toolOutputs(midMsgs, "background_list");
    expect(listOut).toMatch(new RegExp(`^${taskID} +running +.*"${desc}" \\(general, steered 1×\\)$`, "m"));
    // Stored while the first step was still at the model: the task is still running, nothing ended.
    expect((await storedTask(server, taskID))?.status).toBe("running");
    expect(notifications(midMsgs, taskID)).toHaveLength(0);

    step1.open();
    const step2 = await requestOf(model, "s-child-step2");
    // The very next request: the read's result, then the message.
    expect(toolResults(step2.body).map((t) => t.content)).toEqual([expect.stringContaining("NOTES_CONTENT")]);
    expect(lastUserText(step2.body)).toBe("STEER_S: look at the notes instead");
    expect(model.requests.filter((r) => r.label === "s-child-step1")).toHaveLength(1);
    await turnEndsAfter(env, parent, "s-wake");

    const parentMsgs = await getMessages(server.client, parent);
    const notes = notifications(parentMsgs, taskID);
    expect(notes).toHaveLength(1);
    expect(textOf(notes[0]!)).toContain("S_FINAL_ANSWER");
    expect(wakePrompts(parentMsgs)).toHaveLength(1);
    expect((await children(server.client, parent)).map((k) => k.id)).toEqual([childID]);
    const childMsgs = await getMessages(server.client, childID);
    expect(userMessages(childMsgs).map(textOf)).toEqual(["CHILD_TASK_S", "STEER_S: look at the notes instead"]);
    expect(await storedTask(server, taskID)).toMatchObject({ status: "completed", run: 1, notifiedRun: 1, steers: 1, sessionID: childID });
    // (only the stranger's own turn carries the text: its call)
    expect(model.requests.filter((r) => allText(r.body).includes("STEER_FROM_STRANGER")).map((r) => r.label)).toEqual(["s-other-done"]);

    // The same call on the ended task resumes it as before: run 2, same child, its own notice.
    model.script({
      name: "s-again",
      match: (r) => lastUserText(r) === "STEER_AGAIN" && !isToolFollowUp(r),
      reply: () => ({ toolCalls: [{ name: "background_task", arguments: { description: desc, prompt: "S_AGAIN", resume: taskID } }] }),
    });
    model.script({ name: "s-again-done", match: (r) => lastUserText(r) === "STEER_AGAIN" && isToolFollowUp(r), reply: { text: "Resumed S." } });
    model.script({ name: "s-child-again", match: (r) => lastUserText(r) === "S_AGAIN", reply: { text: "S_AGAIN_ANSWER" } });
    model.script({ name: "s-wake2", match: (r) => isWake(r) && allText(r).includes("STEER_AGAIN"), reply: { text: "Noted S again." } });
    await promptText(server.client, parent, "STEER_AGAIN");
    const again = toolOutputs(await getMessages(server.client, parent), "background_task").at(-1);
    expect(again).toContain(`Background task ${taskID} resumed: the follow-up went to its child session ${childID}.`);
    await turnEndsAfter(env, parent, "s-wake2");
    expect(await storedTask(server, taskID)).toMatchObject({ status: "completed", run: 2, notifiedRun: 2, steers: 1, sessionID: childID });
    expect(notifications(await getMessages(server.client, parent), taskID)).toHaveLength(2);

    env.later("s: one notice and one wake per run", async () => {
      const msgs = await getMessages(server.client, parent);
      expect(notifications(msgs, taskID)).toHaveLength(2);
      expect(wakePrompts(msgs)).toHaveLength(2);
    });
  });

  test("a queued task gets the message with its prompt when it starts", async () => {
    const { model, server } = env;
    const first = gate();
    let queuedID = "";
    model.script({
      name: "q-launch",
      match: (r) => lastUserText(r) === "LAUNCH_Q" && !isToolFollowUp(r),
      reply: {
        toolCalls: [
          { name: "background_task", arguments: { description: "Runs first Q", prompt: "CHILD_Q_FIRST", agent: "general" } },
          { name: "background_task", arguments: { description: "Waits Q", prompt: "CHILD_Q_SECOND", agent: "general" } },
        ],
      },
    });
    model.script({ name: "q-launched", match: (r) => lastUserText(r) === "LAUNCH_Q" && isToolFollowUp(r), reply: { text: "Launched Q." } });
    model.script({
      name: "q-first",
      match: (r) => lastUserText(r) === "CHILD_Q_FIRST",
      reply: async (r) => {
        first.arrived(r);
        await first.opened;
        return { text: "Q first done" };
      },
    });
    model.script({ name: "q-second", match: (r) => lastUserText(r).startsWith("CHILD_Q_SECOND"), reply: { text: "Q second done" } });
    model.script({
      name: "q-steer",
      match: (r) => lastUserText(r) === "STEER_Q" && !isToolFollowUp(r),
      reply: () => ({
        toolCalls: [{ name: "background_task", arguments: { description: "Waits Q", prompt: "Q_EXTRA: also count the lines", resume: queuedID } }],
      }),
    });
    model.script({ name: "q-steered", match: (r) => lastUserText(r) === "STEER_Q" && isToolFollowUp(r), reply: { text: "Steered Q." } });
    model.script({ name: "q-wake", match: (r) => isWake(r) && allText(r).includes("LAUNCH_Q"), reply: { text: "Noted Q." } });

    const parent = await newSession(server.client, "queue Q");
    await promptText(server.client, parent, "LAUNCH_Q");
    const outputs = toolOutputs(await getMessages(server.client, parent), "background_task");
    expect(outputs[1]).toContain("queued");
    queuedID = taskIdIn(outputs[1]!);
    await first.reached;

    await promptText(server.client, parent, "STEER_Q");
    const steerOut = toolOutputs(await getMessages(server.client, parent), "background_task").at(-1);
    expect(steerOut).toContain(`Background task ${queuedID} "Waits Q" is queued (`);
    expect(steerOut).toContain("your message was added to its prompt, and its child gets both when it starts.");
    expect(model.requests.some((r) => lastUserText(r.body).startsWith("CHILD_Q_SECOND"))).toBe(false);

    first.open();
    const second = await requestOf(model, "q-second");
    const text = lastUserText(second.body);
    expect(text.startsWith("CHILD_Q_SECOND")).toBe(true);
    expect(text).toContain("Q_EXTRA: also count the lines");
    await until("both ended", async () => (await storedTask(server, queuedID))?.status === "completed");
    expect(await storedTask(server, queuedID)).toMatchObject({ run: 1, steers: 1 });
    expect((await storedTask(server, queuedID))?.queuedPrompt).toBeUndefined();
    await until("two notices", async () => notifications(await getMessages(server.client, parent)).length === 2);
  });

  test("background_output on a running task: time, last activity with its tool, tool calls, tokens, its latest text, then still running", async () => {
    const { model, server } = env;
    const desc = "Progress task P";
    const step2 = gate();
    let taskID = "";
    model.script({
      name: "p-launch",
      match: (r) => lastUserText(r) === "LAUNCH_P" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "background_task", arguments: { description: desc, prompt: "CHILD_TASK_P", agent: "general" } }] },
    });
    model.script({ name: "p-launched", match: (r) => lastUserText(r) === "LAUNCH_P" && isToolFollowUp(r), reply: { text: "Launched P." } });
    model.script({
      name: "p-child-step1",
      match: (r) => lastUserText(r) === "CHILD_TASK_P" && !isToolFollowUp(r),
      reply: {
        text: "Reading the notes first.\nThen I compare them.",
        toolCalls: [{ name: "read", arguments: { filePath: `${server.directory}/notes.txt` } }],
        usage: { prompt_tokens: 1200, completion_tokens: 300 },
      },
    });
    // The second step is held: the task is running, between steps, while the parent asks.
    model.script({
      name: "p-child-step2",
      match: (r) => lastUserText(r) === "CHILD_TASK_P" && isToolFollowUp(r),
      reply: async (r) => {
        step2.arrived(r);
        await step2.opened;
        return { text: "P done" };
      },
    });
    model.script({
      name: "p-output",
      match: (r) => lastUserText(r) === "HOW_IS_P" && !isToolFollowUp(r),
      reply: () => ({ toolCalls: [{ name: "background_output", arguments: { task_id: taskID } }] }),
    });
    model.script({ name: "p-output-done", match: (r) => lastUserText(r) === "HOW_IS_P" && isToolFollowUp(r), reply: { text: "Still going." } });
    model.script({ name: "p-wake", match: (r) => isWake(r) && lastUserText(r).includes(`"${desc}"`), reply: { text: "Noted P." } });

    const parent = await newSession(server.client, "progress P");
    await promptText(server.client, parent, "LAUNCH_P");
    taskID = taskIdIn(toolOutputs(await getMessages(server.client, parent), "background_task")[0]!);
    await step2.reached;
    await promptText(server.client, parent, "HOW_IS_P");
    const [out] = toolOutputs(await getMessages(server.client, parent), "background_output");
    const lines = out!.split("\n");
    expect(lines[0]).toMatch(new RegExp(`^Task ${taskID} "${desc}": running · agent general · `));
    expect(lines[1]).toMatch(/^Running for \d+s\.$/);
    expect(lines[2]).toMatch(new RegExp(`^Last activity: \\d+s ago; latest tool call: tool read "[^"]*notes\\.txt[^"]*" \\(completed\\)\\.$`));
    expect(lines[3]).toBe("Tool calls so far: 1 in this run.");
    expect(lines[4]).toBe("Tokens so far: 1.5k charged in full (1.2k in, 300 out).");
    expect(lines.slice(5, 8)).toEqual(["Latest text (first lines):", "  Reading the notes first.", "  Then I compare them."]);
    expect(lines.at(-1)).toBe("Still running. You will be notified when it ends, or call background_output with block: true to wait.");

    step2.open();
    await turnEndsAfter(env, parent, "p-wake");
    expect((await storedTask(server, taskID))?.status).toBe("completed");
  });

  registerLateChecks(env);
});

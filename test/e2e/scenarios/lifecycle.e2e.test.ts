/**
 * Scenarios d (cancel), e (resume) and f (errors) inside the real OpenCode server.
 */
import { describe, expect, test } from "vitest";
import { allText, type ChatRequest, getMessages, hasToolResult, isToolFollowUp, lastUserText, textOf, toolParts } from "../harness/index.js";
import {
  TASK_ID_RE,
  checkDeliveriesLater,
  children,
  isWake,
  lastAssistant,
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
  userMessages,
  wakePrompts,
} from "./helpers.js";

const env = useOpencode();

/** The task id the parent's conversation mentions (its launch result). */
function idInConversation(r: Parameters<typeof allText>[0]): string {
  const m = TASK_ID_RE.exec(allText(r));
  if (!m) throw new Error("no task id in the conversation");
  return m[0];
}

describe("cancel, resume, errors", () => {
  test("d. cancel: the running child is aborted, the task is cancelled, the parent is notified once", async () => {
    const { model, server } = env;
    const desc = "Slow task D";
    scriptLaunch(model, {
      name: "d",
      cue: "LAUNCH_D",
      task: { description: desc, prompt: "CHILD_TASK_D: take your time", agent: "general" },
      launched: "Launched D.",
    });
    // The child's answer would take a minute: it is still running when the parent cancels it.
    model.script({ name: "d-child", match: (r) => lastUserText(r).includes("CHILD_TASK_D"), reply: { text: "too late D", delayMs: 60_000 } });
    model.script({
      name: "d-cancel",
      match: (r) => lastUserText(r) === "CANCEL_D" && !isToolFollowUp(r),
      reply: (r) => ({ toolCalls: [{ name: "background_cancel", arguments: { task_id: idInConversation(r) } }] }),
    });
    model.script({
      name: "d-list",
      match: (r) =>
        lastUserText(r) === "CANCEL_D" &&
        hasToolResult(r, "background_cancel", { sinceLastUser: true }) &&
        !hasToolResult(r, "background_list", { sinceLastUser: true }),
      reply: { toolCalls: [{ name: "background_list", arguments: {} }] },
    });
    model.script({
      name: "d-done",
      match: (r) => lastUserText(r) === "CANCEL_D" && hasToolResult(r, "background_list", { sinceLastUser: true }),
      reply: { text: "Cancelled D." },
    });

    const parent = await newSession(server.client, "cancel D");
    await promptText(server.client, parent, "LAUNCH_D");
    const childReq = await requestOf(model, "d-child");
    const [launchOut] = toolOutputs(await getMessages(server.client, parent), "background_task");
    const taskID = taskIdIn(launchOut!);
    const kids = await children(server.client, parent);
    expect(kids).toHaveLength(1);
    const childID = kids[0]!.id;
    expect((await server.client.session.status()).data?.[childID]?.type).toBe("busy");

    await promptText(server.client, parent, "CANCEL_D");

    // The notification is delivered when the parent's turn is over.
    const parentMsgs = await until("the cancel notification", async () => {
      const msgs = await getMessages(server.client, parent);
      return notifications(msgs, taskID).length > 0 ? msgs : undefined;
    });
    const [cancelOut] = toolOutputs(parentMsgs, "background_cancel");
    expect(cancelOut).toBe(`Cancelled ${taskID} "${desc}" (was running).`);
    const [listOut] = toolOutputs(parentMsgs, "background_list");
    expect(listOut).toMatch(new RegExp(`^${taskID} +cancelled +.*"${desc}" \\(general\\)$`, "m"));

    // The child session was really aborted: its model request was cut and its message says so.
    await until("the child's model request to be aborted", () => childReq.aborted);
    const childMsgs = await until("the child's aborted assistant message", async () => {
      const msgs = await getMessages(server.client, childID);
      return lastAssistant(msgs)?.info.error ? msgs : undefined;
    });
    expect(lastAssistant(childMsgs)!.info.error.name).toBe("MessageAbortedError");
    await until("the child session to be idle", async () => (await server.client.session.status()).data?.[childID] === undefined);

    const stored = await storedTask(server, taskID);
    expect(stored?.status).toBe("cancelled");
    expect(stored?.error).toBe("cancelled by the parent session");

    const note = notifications(parentMsgs, taskID);
    expect(note).toHaveLength(1);
    expect(textOf(note[0]!)).toContain(`[background task ${taskID} was cancelled] "${desc}"`);
    // It waited for the end of the parent's turn (the task ended inside it).
    const turnEnd = parentMsgs.findIndex((m) => m.info.role === "assistant" && textOf(m) === "Cancelled D.");
    expect(parentMsgs.indexOf(note[0]!)).toBeGreaterThan(turnEnd);
    // A parent that cancelled its own task has nothing new to be woken for.
    expect(wakePrompts(parentMsgs)).toHaveLength(0);

    env.later("d: one notification, no wake", async () => {
      const msgs = await getMessages(server.client, parent);
      expect(notifications(msgs)).toHaveLength(1);
      expect(wakePrompts(msgs)).toHaveLength(0);
      expect((await storedTask(server, taskID))?.status).toBe("cancelled");
    });
  });

  test("e. resume: the follow-up reaches the same child, runs as resumed, then completes and its answer is returned", async () => {
    const { model, server } = env;
    const desc = "Resumable task E";
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    // A held request has no label yet (the harness labels it once the reply is chosen): record it here.
    let heldArrived!: (body: ChatRequest) => void;
    const held = new Promise<ChatRequest>((r) => (heldArrived = r));

    scriptLaunch(model, { name: "e", cue: "LAUNCH_E", task: { description: desc, prompt: "CHILD_TASK_E_FIRST", agent: "general" }, launched: "Launched E." });
    model.script({ name: "e-child-first", match: (r) => lastUserText(r) === "CHILD_TASK_E_FIRST", reply: { text: "E_FIRST_ANSWER" } });
    model.script({
      name: "e-wake1",
      match: (r) => isWake(r) && lastUserText(r).includes(`"${desc}"`) && !allText(r).includes("RESUME_E_NOW"),
      reply: { text: "Noted E." },
    });
    // The follow-up is held until the test has seen the task as resumed.
    model.script({
      name: "e-child-followup",
      match: (r) => lastUserText(r) === "CHILD_FOLLOWUP_E",
      reply: async (r) => {
        heldArrived(r);
        await gate;
        return { text: "E_FOLLOWUP_ANSWER" };
      },
    });
    model.script({
      name: "e-resume",
      match: (r) => lastUserText(r) === "RESUME_E_NOW" && !isToolFollowUp(r),
      reply: (r) => ({
        toolCalls: [{ name: "background_task", arguments: { description: desc, prompt: "CHILD_FOLLOWUP_E", agent: "general", resume: idInConversation(r) } }],
      }),
    });
    model.script({
      name: "e-list",
      match: (r) =>
        lastUserText(r) === "RESUME_E_NOW" &&
        hasToolResult(r, "background_task", { sinceLastUser: true }) &&
        !hasToolResult(r, "background_list", { sinceLastUser: true }),
      reply: { toolCalls: [{ name: "background_list", arguments: {} }] },
    });
    model.script({
      name: "e-resumed",
      match: (r) => lastUserText(r) === "RESUME_E_NOW" && hasToolResult(r, "background_list", { sinceLastUser: true }),
      reply: { text: "Resumed E." },
    });
    model.script({
      name: "e-wake2",
      match: (r) => isWake(r) && lastUserText(r).includes(`"${desc}"`) && allText(r).includes("RESUME_E_NOW") && !isToolFollowUp(r),
      reply: (r) => ({ toolCalls: [{ name: "background_output", arguments: { task_id: taskIdIn(lastUserText(r)) } }] }),
    });
    model.script({
      name: "e-wake2-done",
      match: (r) => isWake(r) && allText(r).includes("RESUME_E_NOW") && hasToolResult(r, "background_output", { sinceLastUser: true }),
      reply: { text: "PARENT_DONE_E" },
    });

    const parent = await newSession(server.client, "resume E");
    await promptText(server.client, parent, "LAUNCH_E");
    await turnEndsAfter(env, parent, "e-wake1");
    const kidsBefore = await children(server.client, parent);
    expect(kidsBefore).toHaveLength(1);
    const childID = kidsBefore[0]!.id;
    const firstMsgs = await getMessages(server.client, parent);
    const taskID = taskIdIn(toolOutputs(firstMsgs, "background_task")[0]!);
    expect((await storedTask(server, taskID))?.status).toBe("completed");

    // The resume turn: background_task({ resume }) then background_list while the follow-up is held.
    await promptText(server.client, parent, "RESUME_E_NOW");
    const followReq = await held;
    const midMsgs = await getMessages(server.client, parent);
    const [, resumeOut] = toolOutputs(midMsgs, "background_task");
    expect(resumeOut).toContain(`Background task ${taskID} resumed: the follow-up went to its child session ${childID}.`);
    const [listOut] = toolOutputs(midMsgs, "background_list");
    expect(listOut).toMatch(new RegExp(`^${taskID} +resumed +.*"${desc}" \\(general, run 2\\)$`, "m"));
    expect((await storedTask(server, taskID))?.status).toBe("resumed");
    // Same child: no new session, and the follow-up request carries the child's own history.
    expect((await children(server.client, parent)).map((k) => k.id)).toEqual([childID]);
    expect(allText(followReq)).toContain("CHILD_TASK_E_FIRST");
    expect(allText(followReq)).toContain("E_FIRST_ANSWER");

    release();
    await turnEndsAfter(env, parent, "e-wake2-done");

    const parentMsgs = await getMessages(server.client, parent);
    const [outputOut] = toolOutputs(parentMsgs, "background_output");
    expect(outputOut).toContain(`Task ${taskID} "${desc}": completed`);
    expect(outputOut).toContain("Answer:\nE_FOLLOWUP_ANSWER");
    expect(outputOut).not.toContain("E_FIRST_ANSWER");

    const childMsgs = await getMessages(server.client, childID);
    expect(userMessages(childMsgs).map(textOf)).toEqual(["CHILD_TASK_E_FIRST", "CHILD_FOLLOWUP_E"]);
    expect(textOf(lastAssistant(childMsgs)!)).toBe("E_FOLLOWUP_ANSWER");
    expect((await children(server.client, parent)).map((k) => k.id)).toEqual([childID]);

    const stored = await storedTask(server, taskID);
    expect(stored).toMatchObject({ status: "completed", run: 2, notifiedRun: 2, sessionID: childID });
    // One notification per run, one wake per run.
    const notes = notifications(parentMsgs, taskID);
    expect(notes).toHaveLength(2);
    expect(textOf(notes[0]!)).toContain("E_FIRST_ANSWER");
    expect(textOf(notes[1]!)).toContain("E_FOLLOWUP_ANSWER");
    expect(wakePrompts(parentMsgs)).toHaveLength(2);

    checkDeliveriesLater(env, "e: two notifications (one per run)", parent, { notifications: 2, wakes: 2 });
  });

  test("f. errors: fork+resume, an unknown agent and an unknown task id are refused and leave no child session", async () => {
    const { model, server } = env;
    model.script({
      name: "f-calls",
      match: (r) => lastUserText(r) === "ERRORS_F" && !isToolFollowUp(r),
      reply: {
        toolCalls: [
          { name: "background_task", arguments: { description: "bad F1", prompt: "CHILD_TASK_F1", agent: "general", fork: true, resume: "bg_00000000" } },
          { name: "background_task", arguments: { description: "bad F2", prompt: "CHILD_TASK_F2", agent: "no-such-agent" } },
          { name: "background_output", arguments: { task_id: "bg_zzzzzzzz" } },
        ],
      },
    });
    model.script({ name: "f-done", match: (r) => lastUserText(r) === "ERRORS_F" && isToolFollowUp(r), reply: { text: "Errors seen." } });

    const parent = await newSession(server.client, "errors F");
    const sessionsBefore = (await server.client.session.list()).data!.length;
    expect(await children(server.client, parent)).toHaveLength(0);
    await promptText(server.client, parent, "ERRORS_F");

    const parentMsgs = await getMessages(server.client, parent);
    const calls = toolParts(parentMsgs);
    expect(calls.map((p) => p.state.status)).toEqual(["completed", "completed", "completed"]);
    const byPrompt = (prompt: string) => calls.find((p) => p.state.input?.prompt === prompt)!.state.output as string;
    expect(byPrompt("CHILD_TASK_F1")).toBe("Cannot use fork and resume together. Use fork for new tasks with context, resume for continuing existing tasks.");
    const agentOut = byPrompt("CHILD_TASK_F2");
    expect(agentOut).toMatch(/^Error: there is no agent named "no-such-agent"\. Agents available: .+\. Call background_task again with one of them\.$/);
    for (const name of ["build", "general", "plan", "explore"]) expect(agentOut).toContain(name);
    const outputOut = calls.find((p) => p.tool === "background_output")!.state.output as string;
    expect(outputOut).toContain('no task "bg_zzzzzzzz"');

    // Nothing was created, nothing was sent to a child.
    expect(await children(server.client, parent)).toHaveLength(0);
    expect((await server.client.session.list()).data!.length).toBe(sessionsBefore);
    expect(model.requests.some((r) => /CHILD_TASK_F[12]/.test(lastUserText(r.body)))).toBe(false);
    expect(notifications(parentMsgs)).toHaveLength(0);
  });

  registerLateChecks(env);
});

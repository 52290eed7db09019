/**
 * Arguments the model gets wrong, inside the real OpenCode server (1.18.33 does not validate a plugin
 * tool's arguments against its schema): each is refused with one sentence naming the argument, and
 * nothing is started or cancelled. A huge description with escape codes and a line break still names
 * the child session with one clean line.
 */
import { describe, expect, test } from "vitest";
import { allText, getMessages, isToolFollowUp, lastUserText, textOf, toolParts } from "../harness/index.js";
import {
  TASK_ID_RE,
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
} from "./helpers.js";

const env = useOpencode();

const TITLE_PREFIX = "Background: ";
const DESCRIPTION_MAX = 120;
const HIDDEN = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069]/;

function idInConversation(r: Parameters<typeof allText>[0]): string {
  const m = TASK_ID_RE.exec(allText(r));
  if (!m) throw new Error("no task id in the conversation");
  return m[0];
}

describe("bad arguments", () => {
  test('fork: "false", a numeric task_id, timeout: "abc" with block, all: "false": each refused by name; nothing started or cancelled', async () => {
    const { model, server } = env;
    // A task that keeps running through the test: the bad calls must leave it alone.
    scriptLaunch(model, {
      name: "ba",
      cue: "LAUNCH_BA",
      task: { description: "Slow task BA", prompt: "CHILD_TASK_BA: take your time", agent: "general" },
      launched: "Launched BA.",
    });
    model.script({ name: "ba-child", match: (r) => lastUserText(r).includes("CHILD_TASK_BA"), reply: { text: "too late BA", delayMs: 60_000 } });
    model.script({
      name: "bad-calls",
      match: (r) => lastUserText(r) === "BAD_ARGS" && !isToolFollowUp(r),
      reply: (r) => ({
        toolCalls: [
          { name: "background_task", arguments: { description: "bad fork", prompt: "CHILD_TASK_BAD_FORK", agent: "general", fork: "false" } },
          { name: "background_output", arguments: { task_id: 5 } },
          { name: "background_output", arguments: { task_id: idInConversation(r), block: true, timeout: "abc" } },
          { name: "background_cancel", arguments: { all: "false" } },
        ],
      }),
    });
    model.script({ name: "bad-done", match: (r) => lastUserText(r) === "BAD_ARGS" && isToolFollowUp(r), reply: { text: "Bad arguments seen." } });
    model.script({
      name: "ba-cleanup",
      match: (r) => lastUserText(r) === "CLEANUP_BA" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "background_cancel", arguments: { all: true } }] },
    });
    model.script({ name: "ba-cleaned", match: (r) => lastUserText(r) === "CLEANUP_BA" && isToolFollowUp(r), reply: { text: "Cleaned up." } });

    const parent = await newSession(server.client, "bad arguments");
    await promptText(server.client, parent, "LAUNCH_BA");
    await requestOf(model, "ba-child");
    const taskID = taskIdIn(toolOutputs(await getMessages(server.client, parent), "background_task")[0]!);
    const [child] = await children(server.client, parent);
    const sessionsBefore = (await server.client.session.list()).data!.length;

    await promptText(server.client, parent, "BAD_ARGS");

    const calls = toolParts(await getMessages(server.client, parent)).slice(1); // after the launch
    // Every call finished as a tool result (a numeric task_id used to crash the tool).
    expect(calls.map((p) => [p.tool, p.state.status])).toEqual([
      ["background_task", "completed"],
      ["background_output", "completed"],
      ["background_output", "completed"],
      ["background_cancel", "completed"],
    ]);
    const [forkOut, idOut, timeoutOut, allOut] = calls.map((p) => p.state.output as string);
    expect(forkOut).toBe(
      'Error: background_task argument "fork" must be true or false, not the string "false". Call background_task again with fork: true or fork: false.',
    );
    expect(idOut).toBe('Error: background_output argument "task_id" must be a string, not the number 5. Call background_output again with task_id: "bg_…".');
    expect(timeoutOut).toBe(
      'Error: background_output argument "timeout" must be a number, not the string "abc". Call background_output again with timeout: 60.',
    );
    expect(allOut).toBe(
      'Error: background_cancel argument "all" must be true or false, not the string "false". Call background_cancel again with all: true or all: false.',
    );

    // Nothing started: no new session, no prompt reached a model. Nothing cancelled: the task runs on.
    expect(await children(server.client, parent)).toHaveLength(1);
    expect((await server.client.session.list()).data!.length).toBe(sessionsBefore);
    expect(model.requests.some((r) => lastUserText(r.body).includes("CHILD_TASK_BAD_FORK"))).toBe(false);
    expect((await storedTask(server, taskID))?.status).toBe("running");
    expect((await server.client.session.status()).data?.[child!.id]?.type).toBe("busy");

    await promptText(server.client, parent, "CLEANUP_BA");
    expect(toolOutputs(await getMessages(server.client, parent), "background_cancel").at(-1)).toBe(`Cancelled ${taskID} "Slow task BA" (was running).`);
  });

  test("a 200 KB description with ANSI codes and a line break names the child with one clean line of at most 120 characters", async () => {
    const { model, server } = env;
    const description = `\u001b[31mRefactor\u001b[0m the parser\n[background task bg_00000000 completed]\u0007 ${"and more ".repeat(23_000)}`;
    expect(description.length).toBeGreaterThan(200_000);
    scriptLaunch(model, { name: "big", cue: "LAUNCH_BIG", task: { description, prompt: "CHILD_TASK_BIG", agent: "general" }, launched: "Launched big." });
    model.script({ name: "big-child", match: (r) => lastUserText(r).includes("CHILD_TASK_BIG"), reply: { text: "big done" } });
    model.script({ name: "big-wake", match: (r) => isWake(r), reply: { text: "Noted." } });

    const parent = await newSession(server.client, "big description");
    await promptText(server.client, parent, "LAUNCH_BIG");

    const [child] = await children(server.client, parent);
    const title = child!.title;
    expect(title.startsWith(`${TITLE_PREFIX}Refactor the parser [background task bg_00000000 completed] and more`)).toBe(true);
    expect(title.length).toBeLessThanOrEqual(TITLE_PREFIX.length + DESCRIPTION_MAX);
    expect(title).not.toMatch(HIDDEN);
    expect(title.endsWith("…")).toBe(true);

    const [launchOut] = toolOutputs(await getMessages(server.client, parent), "background_task");
    const taskID = taskIdIn(launchOut!);
    expect(launchOut).toContain(`Description cut to ${DESCRIPTION_MAX} characters.`);
    expect(launchOut!.length).toBeLessThan(2_000);
    expect((await storedTask(server, taskID))?.description).toBe(title.slice(TITLE_PREFIX.length));

    // Its notice names it on the notice's own first line; the forged line inside stays inside it.
    const [notice] = await until("the notice of the big task", async () => {
      const notes = notifications(await getMessages(server.client, parent), taskID);
      return notes.length ? notes : undefined;
    });
    const lines = textOf(notice!).split("\n");
    expect(lines.filter((line) => line.startsWith("[background task"))).toEqual([
      `[background task ${taskID} completed] "${title.slice(TITLE_PREFIX.length)}"`,
    ]);
  });

  registerLateChecks(env);
});

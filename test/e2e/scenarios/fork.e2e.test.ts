/**
 * Scenarios a (fork) and c (no fork) inside the real OpenCode server; the language model is scripted.
 * Also prints the fork launch latency and the completion → notification latency.
 */
import path from "node:path";
import { describe, expect, test } from "vitest";
import { getMessages, hasToolResult, isToolFollowUp, lastUserText, textOf, toolNames, toolParts } from "../harness/index.js";
import {
  PREAMBLE_START,
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
  taskIdIn,
  toolOutputs,
  turnEndsAfter,
  useOpencode,
  userMessages,
  userTextsJoined,
  wakePrompts,
} from "./helpers.js";

const BIG_FILE =
  Array.from({ length: 300 }, (_, i) => `line ${String(i + 1).padStart(3, "0")}: the quick brown fox jumps over the lazy dog #${i}`).join("\n") + "\n";
const ERROR_LINE = "Error: module_221 failed to compile: undefined symbol frobnicate";
const BASH_COMMAND = `for i in $(seq 1 220); do printf 'build step %03d: compiling module_%03d with -O2 -Wall -Werror ... ok\\n' $i $i; done; echo '${ERROR_LINE}'`;

const env = useOpencode({ files: { "data/big.txt": BIG_FILE } });

describe("fork and plain background tasks", () => {
  test("a. fork: the child inherits the parent's tool outputs whole, answers, and the parent is notified once and reads the result", async () => {
    const { model, server } = env;
    const cue = "FORK_IT_A";
    const desc = "Analyse big file A";
    const childPrompt = "CHILD_TASK_A: find the failing module";
    const childAnswer = "CHILD_ANSWER_A: module_221 fails.\nIt misses the symbol frobnicate.";
    const file = path.join(server.directory, "data/big.txt");
    const mine = (r: Parameters<typeof lastUserText>[0]) => lastUserText(r) === cue;

    model.script({
      name: "a-tools",
      match: (r) => mine(r) && !isToolFollowUp(r),
      reply: {
        toolCalls: [
          { name: "read", arguments: { filePath: file } },
          { name: "bash", arguments: { command: BASH_COMMAND, description: "Run the build" } },
        ],
      },
    });
    model.script({
      name: "a-fork",
      match: (r) => mine(r) && hasToolResult(r, "bash", { sinceLastUser: true }) && !hasToolResult(r, "background_task", { sinceLastUser: true }),
      reply: { toolCalls: [{ name: "background_task", arguments: { description: desc, prompt: childPrompt, agent: "general", fork: true } }] },
    });
    model.script({ name: "a-launched", match: (r) => mine(r) && hasToolResult(r, "background_task", { sinceLastUser: true }), reply: { text: "Launched A." } });
    model.script({ name: "a-child", match: (r) => lastUserText(r).includes("CHILD_TASK_A"), reply: { text: childAnswer } });
    model.script({
      name: "a-wake",
      match: (r) => isWake(r) && lastUserText(r).includes(`"${desc}"`) && !isToolFollowUp(r),
      reply: (r) => {
        const id = taskIdIn(lastUserText(r));
        return {
          toolCalls: [
            { name: "background_output", arguments: { task_id: id } },
            { name: "background_list", arguments: {} },
          ],
        };
      },
    });
    model.script({
      name: "a-wake-done",
      match: (r) => isWake(r) && lastUserText(r).includes(`"${desc}"`) && hasToolResult(r, "background_output", { sinceLastUser: true }),
      reply: { text: "PARENT_DONE_A" },
    });

    const parent = await newSession(server.client, "fork A");
    await promptText(server.client, parent, cue);
    await turnEndsAfter(env, parent, "a-wake-done");

    // ── the parent's first turn: read, bash, background_task ──
    const parentMsgs = await getMessages(server.client, parent);
    const [readOut] = toolOutputs(parentMsgs, "read");
    const [bashOut] = toolOutputs(parentMsgs, "bash");
    expect(readOut!.length).toBeGreaterThan(10_000);
    expect(bashOut!.length).toBeGreaterThan(10_000);
    expect(bashOut!.trimEnd().endsWith(ERROR_LINE)).toBe(true);
    const [bgPart] = toolParts(parentMsgs, "background_task");
    expect(bgPart!.state.status).toBe("completed");
    const taskID = taskIdIn(bgPart!.state.output);
    expect(bgPart!.state.output).toContain(`Background task ${taskID} started (forked)`);
    const childID = bgPart!.state.metadata?.sessionId as string;
    expect(childID).toMatch(/^ses_/);

    // ── the child: a real child session with the fork title ──
    const kids = await children(server.client, parent);
    expect(kids.map((k) => k.id)).toEqual([childID]);
    expect(kids[0]!.parentID).toBe(parent);
    expect(kids[0]!.title).toBe(`Background (forked): ${desc}`);

    // ── its first message: preamble + <inherited_context> with both outputs whole ──
    const childMsgs = await getMessages(server.client, childID);
    const childUsers = userMessages(childMsgs);
    expect(childUsers).toHaveLength(2);
    const inherited = textOf(childUsers[0]!);
    expect(inherited.startsWith(PREAMBLE_START)).toBe(true);
    expect(inherited).toContain("- No compaction detected");
    expect(inherited).toContain("- Tool results: 2 full, 0 truncated");
    const open = inherited.indexOf("<inherited_context>");
    const close = inherited.lastIndexOf("</inherited_context>");
    expect(open).toBeGreaterThan(0);
    expect(close).toBeGreaterThan(open);
    const block = inherited.slice(open, close);
    expect(block).toContain(cue);
    expect(block).toContain(readOut!);
    expect(block).toContain(bashOut!);
    // The in-flight background_task call itself is not part of the inherited history.
    expect(block).not.toContain(childPrompt);
    expect(textOf(childUsers[1]!)).toBe(childPrompt);
    // The context was stored without a reply (noReply): the child answered the prompt only.
    expect(childMsgs.map((m) => m.info.role)).toEqual(["user", "user", "assistant"]);
    expect(textOf(lastAssistant(childMsgs)!)).toBe(childAnswer);

    // ── the scripted model received that context in the child's request ──
    const childReq = await requestOf(model, "a-child");
    const sent = userTextsJoined(childReq.body);
    expect(sent).toContain(PREAMBLE_START);
    expect(sent).toContain("<inherited_context>");
    expect(sent).toContain(readOut!);
    expect(sent).toContain(bashOut!);
    expect(lastUserText(childReq.body)).toBe(childPrompt);
    // Nothing is removed from the child's tools (delegation is refused when called: faults.e2e).
    expect(toolNames(childReq.body)).toContain("background_task");
    expect(model.requests.filter((r) => r.label === "a-child")).toHaveLength(1);

    // ── the parent: one notification, one wake, background_output and background_list ──
    const mine1 = notifications(parentMsgs, taskID);
    expect(mine1).toHaveLength(1);
    expect(notifications(parentMsgs)).toHaveLength(1);
    expect(textOf(mine1[0]!)).toContain("CHILD_ANSWER_A: module_221 fails.");
    // The notification is a noReply message: no assistant message answers it; the wake comes after it.
    expect(parentMsgs.filter((m) => m.info.role === "assistant" && m.info.parentID === mine1[0]!.info.id)).toHaveLength(0);
    expect(wakePrompts(parentMsgs)).toHaveLength(1);
    expect(parentMsgs.indexOf(wakePrompts(parentMsgs)[0]!)).toBeGreaterThan(parentMsgs.indexOf(mine1[0]!));
    const [outputOut] = toolOutputs(parentMsgs, "background_output");
    expect(outputOut).toContain(`Task ${taskID} "${desc}": completed`);
    expect(outputOut).toContain(`Answer:\n${childAnswer}`);
    const [listOut] = toolOutputs(parentMsgs, "background_list");
    expect(listOut).toMatch(new RegExp(`^${taskID} +completed +.*"${desc}" \\(general, forked\\)$`, "m"));
    expect(textOf(lastAssistant(parentMsgs)!)).toBe("PARENT_DONE_A");

    // ── latency figures (printed, not asserted) ──
    const started = bgPart!.state.time.start as number;
    const ended = bgPart!.state.time.end as number;
    const childIdle = env.ev.events.find((e) => e.type === "session.idle" && e.properties.sessionID === childID);
    const noteID = mine1[0]!.info.id;
    const noteEvent = env.ev.events.find((e) => e.type === "message.updated" && e.properties.info?.id === noteID);
    console.log(
      [
        `[latency] fork launch: background_task running → child's prompt at the model ${childReq.at - started} ms;` +
          ` tool part running → completed ${ended - started} ms (context ${inherited.length} chars)`,
        `[latency] completion → notification: child session.idle event → parent's notification message.updated event ${
          childIdle && noteEvent ? `${env.ev.arrivedAt(noteEvent) - env.ev.arrivedAt(childIdle)} ms` : "n/a (event not seen)"
        }`,
      ].join("\n"),
    );

    checkDeliveriesLater(env, "a: one notification", parent, { notifications: 1, wakes: 1 });
  });

  test("c. no fork: the child's only user message is the prompt and its request holds no inherited context", async () => {
    const { model, server } = env;
    const cue = "NOFORK_C";
    const desc = "Plain task C";
    const childPrompt = "CHILD_TASK_C: list the project files";
    scriptLaunch(model, { name: "c", cue, task: { description: desc, prompt: childPrompt, agent: "general" }, launched: "Launched C." });
    model.script({ name: "c-child", match: (r) => lastUserText(r).includes("CHILD_TASK_C"), reply: { text: "CHILD_ANSWER_C" } });
    model.script({ name: "c-wake", match: (r) => isWake(r) && lastUserText(r).includes(`"${desc}"`), reply: { text: "PARENT_DONE_C" } });

    const parent = await newSession(server.client, "no fork C");
    await promptText(server.client, parent, cue);
    await turnEndsAfter(env, parent, "c-wake");

    const parentMsgs = await getMessages(server.client, parent);
    const [launchOut] = toolOutputs(parentMsgs, "background_task");
    const taskID = taskIdIn(launchOut!);
    expect(launchOut).toContain(`Background task ${taskID} started: "${desc}"`);
    expect(launchOut).not.toContain("(forked)");

    const kids = await children(server.client, parent);
    expect(kids).toHaveLength(1);
    expect(kids[0]!.title).toBe(`Background: ${desc}`);
    const childMsgs = await getMessages(server.client, kids[0]!.id);
    const childUsers = userMessages(childMsgs);
    expect(childUsers).toHaveLength(1);
    expect(textOf(childUsers[0]!)).toBe(childPrompt);
    expect(textOf(lastAssistant(childMsgs)!)).toBe("CHILD_ANSWER_C");

    const childReq = await requestOf(model, "c-child");
    const sent = userTextsJoined(childReq.body);
    expect(sent).not.toContain("<inherited_context>");
    expect(sent).not.toContain(PREAMBLE_START);
    expect(sent).not.toContain(cue);
    expect(childReq.body.messages.filter((m) => m.role === "user")).toHaveLength(1);

    expect(notifications(parentMsgs, taskID)).toHaveLength(1);
    expect(wakePrompts(parentMsgs)).toHaveLength(1);

    checkDeliveriesLater(env, "c: one notification", parent, { notifications: 1, wakes: 1 });
  });

  registerLateChecks(env);
});

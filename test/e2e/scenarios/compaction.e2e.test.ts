/**
 * Scenario b: a fork after a real compaction (session.summarize) inherits the summary and what came
 * after it, never what the summary replaced.
 */
import { describe, expect, test } from "vitest";
import { allText, getMessages, hasToolResult, isToolFollowUp, lastUserText, textOf, toolParts } from "../harness/index.js";
import {
  MOCK_MODEL,
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
  taskIdIn,
  turnEndsAfter,
  useOpencode,
  userMessages,
  userTextsJoined,
  wakePrompts,
} from "./helpers.js";

const env = useOpencode();

const OLD = "OLD_SECRET_BEFORE_COMPACTION";
const NEW = "NEW_AFTER_COMPACTION";
const SUMMARY = "SUMMARY_B_DISTINCT: earlier, one shell command was run and its result noted.";

describe("fork after compaction", () => {
  test("b. the child gets the compaction summary and the turns after it, not the turns it replaced", async () => {
    const { model, server } = env;
    const desc = "Check after compaction B";
    const childPrompt = "CHILD_TASK_B: continue from the summary";

    // Turn 1 (before the compaction): a tool output holding the old secret.
    model.script({
      name: "b-old-tool",
      match: (r) => lastUserText(r) === "COMPACT_T1" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "bash", arguments: { command: `echo ${OLD}`, description: "Print the old secret" } }] },
    });
    model.script({ name: "b-old-done", match: (r) => lastUserText(r) === "COMPACT_T1" && isToolFollowUp(r), reply: { text: "Old turn done." } });
    // The compaction request embeds the conversation as text: answer it with a distinctive summary.
    model.script({ name: "b-summary", kind: "compaction", match: (r) => allText(r).includes(OLD), reply: { text: SUMMARY } });
    // Turn 2 (after it): a tool output with the new marker, then the fork.
    model.script({
      name: "b-new-tool",
      match: (r) => lastUserText(r) === "COMPACT_T2" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "bash", arguments: { command: `echo ${NEW}`, description: "Print the new marker" } }] },
    });
    model.script({
      name: "b-fork",
      match: (r) =>
        lastUserText(r) === "COMPACT_T2" && hasToolResult(r, "bash", { sinceLastUser: true }) && !hasToolResult(r, "background_task", { sinceLastUser: true }),
      reply: { toolCalls: [{ name: "background_task", arguments: { description: desc, prompt: childPrompt, agent: "general", fork: true } }] },
    });
    model.script({
      name: "b-launched",
      match: (r) => lastUserText(r) === "COMPACT_T2" && hasToolResult(r, "background_task", { sinceLastUser: true }),
      reply: { text: "Launched B." },
    });
    model.script({ name: "b-child", match: (r) => lastUserText(r).includes("CHILD_TASK_B"), reply: { text: "CHILD_ANSWER_B" } });
    model.script({ name: "b-wake", match: (r) => isWake(r) && lastUserText(r).includes(`"${desc}"`), reply: { text: "PARENT_DONE_B" } });

    const parent = await newSession(server.client, "compaction B");
    await promptText(server.client, parent, "COMPACT_T1");

    const since = env.ev.mark();
    const summarized = await server.client.session.summarize({ path: { id: parent }, body: MOCK_MODEL });
    expect(summarized.error).toBeUndefined();
    await env.ev.waitFor((e) => e.type === "session.compacted" && e.properties.sessionID === parent, 15_000, { since });
    const afterCompaction = await getMessages(server.client, parent);
    const summaryMsg = afterCompaction.find((m) => m.info.role === "assistant" && m.info.summary === true);
    expect(summaryMsg && textOf(summaryMsg)).toBe(SUMMARY);
    expect(summaryMsg!.info.finish).toBeTruthy();

    await promptText(server.client, parent, "COMPACT_T2");
    await turnEndsAfter(env, parent, "b-wake");

    const parentMsgs = await getMessages(server.client, parent);
    // The parent's stored history still holds the old output (session.messages returns everything).
    expect(toolParts(parentMsgs, "bash").map((p) => p.state.output)).toEqual([`${OLD}\n`, `${NEW}\n`]);
    const [bgPart] = toolParts(parentMsgs, "background_task");
    const taskID = taskIdIn(bgPart!.state.output);
    expect(bgPart!.state.output).toContain("starting from the latest compaction summary");

    const kids = await children(server.client, parent);
    expect(kids).toHaveLength(1);
    expect(kids[0]!.title).toBe(`Background (forked): ${desc}`);
    const childMsgs = await getMessages(server.client, kids[0]!.id);
    const inherited = textOf(userMessages(childMsgs)[0]!);
    expect(inherited.startsWith(PREAMBLE_START)).toBe(true);
    expect(inherited).toContain("- Compaction summary included (messages before compaction removed)");
    const block = inherited.slice(inherited.indexOf("<inherited_context>"));
    expect(block).toContain("[assistant: compaction summary]");
    expect(block).toContain(SUMMARY);
    expect(block).toContain(NEW);
    expect(block).toContain("COMPACT_T2");
    expect(inherited).not.toContain(OLD);
    expect(inherited).not.toContain("COMPACT_T1");
    expect(inherited).not.toContain("Old turn done.");
    expect(textOf(lastAssistant(childMsgs)!)).toBe("CHILD_ANSWER_B");

    // What the model received for the child.
    const sent = userTextsJoined((await requestOf(model, "b-child")).body);
    expect(sent).toContain(SUMMARY);
    expect(sent).toContain(NEW);
    expect(sent).not.toContain(OLD);

    expect(notifications(parentMsgs, taskID)).toHaveLength(1);
    expect(wakePrompts(parentMsgs)).toHaveLength(1);
    checkDeliveriesLater(env, "b: one notification", parent, { notifications: 1, wakes: 1 });
  });

  registerLateChecks(env);
});

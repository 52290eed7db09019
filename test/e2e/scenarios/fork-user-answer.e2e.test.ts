/**
 * Issue 23 in the real OpenCode server (the model is scripted): the user answers OpenCode's own
 * `question` tool with a long custom answer ending in a hard rule, twenty tool results follow, then
 * the agent forks. The child's inherited context holds the whole answer, not a tier-3 head.
 */
import path from "node:path";
import { describe, expect, test } from "vitest";
import { getMessages, hasToolResult, lastUserText, textOf } from "../harness/index.js";
import { PREAMBLE_START, children, newSession, promptText, toolOutputs, turnEndsAfter, useOpencode, userMessages } from "./helpers.js";

const FILES = Object.fromEntries(
  Array.from({ length: 20 }, (_, i) => [
    `data/part${i}.txt`,
    `${Array.from({ length: 40 }, (_, l) => `part ${i} line ${l}: nothing to see here`).join("\n")}\n`,
  ]),
);
const QUESTION = "How should the migration treat the existing tables?";
const RULE = "and never touch the billing schema";
// about 1.5 KB of the user's own words, the rule at the very end
const ANSWER = `Keep them. ${"Rename the old columns with a _legacy suffix and copy the data in batches of 500 rows; ".repeat(17)}${RULE}`;

const env = useOpencode({ files: FILES });

describe("fork after the user answered a question", () => {
  test("the forked child inherits the user's whole answer, twenty results later", async () => {
    const { model, server } = env;
    const cue = "ASK_THEN_FORK";
    const childPrompt = "CHILD_TASK_Q: write the migration";
    const mine = (r: Parameters<typeof lastUserText>[0]) => lastUserText(r) === cue;

    model.script({
      name: "q-ask",
      match: (r) => mine(r) && !hasToolResult(r, "question", { sinceLastUser: true }),
      reply: {
        toolCalls: [
          {
            name: "question",
            arguments: {
              questions: [
                {
                  question: QUESTION,
                  header: "Migration",
                  options: [
                    { label: "Keep", description: "keep the tables" },
                    { label: "Drop", description: "drop them" },
                  ],
                },
              ],
            },
          },
        ],
      },
    });
    model.script({
      name: "q-reads",
      match: (r) => mine(r) && hasToolResult(r, "question", { sinceLastUser: true }) && !hasToolResult(r, "read", { sinceLastUser: true }),
      reply: { toolCalls: Object.keys(FILES).map((file) => ({ name: "read", arguments: { filePath: path.join(server.directory, file) } })) },
    });
    model.script({
      name: "q-fork",
      match: (r) => mine(r) && hasToolResult(r, "read", { sinceLastUser: true }) && !hasToolResult(r, "background_task", { sinceLastUser: true }),
      reply: { toolCalls: [{ name: "background_task", arguments: { description: "Write the migration", prompt: childPrompt, agent: "general", fork: true } }] },
    });
    model.script({ name: "q-launched", match: (r) => mine(r) && hasToolResult(r, "background_task", { sinceLastUser: true }), reply: { text: "Launched." } });
    model.script({ name: "q-child", match: (r) => lastUserText(r).includes("CHILD_TASK_Q"), reply: { text: "CHILD_DONE_Q" } });

    const parent = await newSession(server.client, "question then fork");
    const since = env.ev.mark();
    // the prompt returns only once the turn ends, and the turn waits for the answer: sent, not awaited
    const prompted = promptText(server.client, parent, cue);
    // The user answers with a custom text, as the TUI sends it.
    const asked = await env.ev.waitFor((e) => e.type === "question.asked" && e.properties.sessionID === parent, 30_000, { since });
    const reply = await fetch(`${server.url}/question/${asked.properties.id}/reply?directory=${encodeURIComponent(server.directory)}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-opencode-directory": server.directory },
      body: JSON.stringify({ answers: [[ANSWER]] }),
    });
    expect(reply.ok).toBe(true);
    await prompted;
    await turnEndsAfter(env, parent, "q-launched");

    // The parent's history: the question's output carries the answer, then twenty reads.
    const parentMsgs = await getMessages(server.client, parent);
    const [questionOut] = toolOutputs(parentMsgs, "question");
    expect(questionOut).toBe(`User has answered your questions: "${QUESTION}"="${ANSWER}". You can now continue with the user's answers in mind.`);
    expect(toolOutputs(parentMsgs, "read")).toHaveLength(20);

    // The child's inherited context holds the whole answer, the rule included.
    const kids = await children(server.client, parent);
    expect(kids).toHaveLength(1);
    const childMsgs = await getMessages(server.client, kids[0]!.id);
    const inherited = textOf(userMessages(childMsgs)[0]!);
    expect(inherited.startsWith(PREAMBLE_START)).toBe(true);
    expect(inherited).toContain(questionOut!);
    expect(inherited).toContain(RULE);
    // the twenty reads are tiered as always; the answer is counted as kept whole
    expect(inherited).toContain("- Tool results: 6 full, 10 truncated to 3000 chars, 5 truncated to 500 chars");
  });
});

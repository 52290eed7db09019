/**
 * A worktree task's child that waits for a person, in the REAL OpenCode TUI (1.18.33) under tmux,
 * with both halves. The child (isolation: "worktree", sandboxed) is served by the worktree's own
 * OpenCode instance, and its permission and question requests wait there, not in the instance of the
 * project the TUI is attached to. The TUI still sees them (it follows /global/event): the sidebar,
 * the toast naming the task and OpenCode's own prompt in the parent's view show each; answered from
 * /tasks, the answer must go to the worktree's instance (the project's answers 404: "Could not answer
 * the permission"). A message sent from /tasks to the running task is confirmed and read by the child.
 * Only the model is scripted.
 */
import fs from "node:fs";
import { describe, expect, test } from "vitest";
import { DIST_PLUGIN, isToolFollowUp, lastUserText, toolResults, userTexts, type ChatRequest } from "../e2e/harness/index.js";
import { useTuiScenario } from "./vitest.js";
import { readTaskFile, until, type StoredTask } from "../e2e/scenarios/helpers.js";

const QUESTION = "Which database should I use?";
const STEER = "Note: the schema is in db/schema.sql";
const TITLE = "Guarded in a worktree";

/** How many results of `tool` the child's conversation holds (its steps follow from them). */
const count = (r: ChatRequest, tool: string) => toolResults(r).filter((t) => t.name === tool).length;
const isChild = (r: ChatRequest) => userTexts(r).some((t) => t.includes("TASK-wtw"));

const scenario = useTuiScenario({
  title: "Worktree waits parent",
  opencode: {
    plugins: [DIST_PLUGIN],
    files: { "a.txt": "a\n" },
    config: {
      agent: {
        asker: {
          mode: "subagent",
          description: "asks before the guarded command, and may ask questions",
          permission: { bash: { "*": "allow", "echo guarded*": "ask" }, question: "allow" },
        },
      },
    },
  },
  script: (model) => {
    model.script({
      name: "launch",
      match: (r) => lastUserText(r) === "go worktree" && !isToolFollowUp(r),
      reply: {
        toolCalls: [
          { name: "background_task", arguments: { description: TITLE, agent: "asker", isolation: "worktree", prompt: "TASK-wtw: run the guarded step" } },
        ],
      },
    });
    model.script({ name: "launched", match: (r) => lastUserText(r) === "go worktree" && isToolFollowUp(r), reply: { text: "Started it." } });
    // the child: a command that asks, then a question, then a wait for a file the test writes, then its answer
    model.script({
      name: "child-ask",
      match: (r) => isChild(r) && count(r, "bash") === 0,
      reply: { toolCalls: [{ name: "bash", arguments: { command: "echo guarded-ok", description: "Guarded" } }] },
    });
    model.script({
      name: "child-question",
      match: (r) => isChild(r) && count(r, "bash") === 1 && count(r, "question") === 0,
      reply: {
        toolCalls: [
          {
            name: "question",
            arguments: {
              questions: [
                {
                  question: QUESTION,
                  header: "Database",
                  options: [
                    { label: "PostgreSQL", description: "a server" },
                    { label: "SQLite", description: "a file" },
                  ],
                },
              ],
            },
          },
        ],
      },
    });
    model.script({
      name: "child-wait",
      match: (r) => isChild(r) && count(r, "bash") === 1 && count(r, "question") === 1,
      reply: { toolCalls: [{ name: "bash", arguments: { command: 'while [ ! -e "$HOME/release" ]; do sleep 0.2; done', description: "Wait" } }] },
    });
    // its answer says what it last read from a person (the message from /tasks, read at this step)
    model.script({ name: "child-done", match: (r) => isChild(r) && count(r, "bash") === 2, reply: (r) => ({ text: `Done; last read: ${lastUserText(r)}` }) });
    model.script({ name: "wake", match: (r) => lastUserText(r).includes("Background tasks you started have ended"), reply: { text: "Noted." } });
  },
});

/** The child's tool calls as [tool, status, output]. */
async function childTools(sessionID: string): Promise<Array<[string, string, string | undefined]>> {
  const messages = (await scenario.server.client.session.messages({ path: { id: sessionID } })).data!;
  return messages.flatMap((m) =>
    m.parts.flatMap((p) =>
      p.type === "tool" ? [[p.tool, p.state.status, "output" in p.state ? p.state.output : undefined] as [string, string, string | undefined]] : [],
    ),
  );
}

let task: StoredTask & { worktree?: { directory: string } };

describe.sequential("a worktree task's child that waits for a person, in the TUI", () => {
  test("its permission is shown (sidebar, OpenCode's own prompt) and answered from /tasks: the command runs in the child", async () => {
    const { server, tui, parentID } = scenario;
    await server.client.session.promptAsync({ path: { id: parentID }, body: { parts: [{ type: "text", text: "go worktree" }] } });
    task = await until("the task in the task file", async () => (await readTaskFile(server)).tasks[0], 30_000);
    // the child runs in its worktree, another directory than the project the TUI is attached to
    expect(task.worktree?.directory).toBeDefined();
    expect(task.worktree!.directory).not.toBe(server.directory);
    await tui.waitFor(
      (s) => s.includes(`⚠ ${TITLE}`) && s.includes("asks bash: echo guarded-ok") && s.includes("Permission required") && s.includes("$ echo guarded-ok"),
      {
        timeoutMs: 30_000,
        what: "the waiting task in the sidebar, and OpenCode's own permission prompt in the parent's view",
      },
    );
    tui.keys("C-x", "o");
    await tui.waitFor(`⚠ ${TITLE} waits for bash: echo guarded`, { what: "the waiting task in /tasks" });
    tui.keys("Enter");
    await tui.waitFor("Answer permission", { what: "the task's actions" });
    tui.keys("Enter");
    await tui.waitFor((s) => s.includes(`"${TITLE}" asks: bash: echo guarded-`) && s.includes("Allow always echo guarded-ok"), {
      what: "the permission choices",
    });
    tui.keys("Enter"); // Allow once
    await tui.waitFor(`Allowed bash: echo guarded-ok for "Guarded in a`, { timeoutMs: 15_000, what: "the toast: allowed" });
    await until(
      "the guarded command ran",
      async () => (await childTools(task.sessionID)).find(([tool, status]) => tool === "bash" && status === "completed"),
      30_000,
    );
    expect((await childTools(task.sessionID))[0]).toEqual(["bash", "completed", "guarded-ok\n"]);
  }, 120_000);

  test("its question is shown (sidebar, toast, OpenCode's own prompt) and answered from /tasks: the child reads the answer", async () => {
    const { tui } = scenario;
    const screen = await tui.waitFor(
      (s) => s.includes(`⚠ ${TITLE}`) && s.includes('asks "Which database should I use…') && s.includes("· question") && s.includes("3. Type your own answer"),
      { timeoutMs: 30_000, what: "the question in the sidebar, and OpenCode's own question prompt in the parent's view" },
    );
    expect(screen).toContain(`"${TITLE}" asks "Which database should I`);
    tui.keys("C-x", "o");
    await tui.waitFor(`⚠ ${TITLE} asks "Which database`, { what: "the waiting task in /tasks" });
    tui.keys("Enter");
    await tui.waitFor("Answer question", { what: "the task's actions" });
    tui.keys("Enter");
    await tui.waitFor((s) => s.includes(`"${TITLE}" asks: Which database`) && s.includes("SQLite a file"), { what: "the question's options" });
    tui.type("SQLite");
    tui.keys("Enter");
    await tui.waitFor(`Answered for "${TITLE}": SQLite`, { timeoutMs: 15_000, what: "the toast: answered" });
    const answered = await until(
      "the question answered",
      async () => (await childTools(task.sessionID)).find(([tool, status]) => tool === "question" && status === "completed"),
      30_000,
    );
    expect(answered[2]).toContain('"Which database should I use?"="SQLite"');
  }, 120_000);

  test("a message sent from /tasks to the running task is confirmed, and the child reads it at its next step", async () => {
    const { server, tui } = scenario;
    await tui.waitFor((s) => s.includes(`● ${TITLE}`) && s.includes("bash Wait"), { timeoutMs: 30_000, what: "the task running its wait" });
    tui.keys("Escape"); // the list the answer left open
    await tui.waitGone("Filter tasks");
    tui.keys("C-x", "o");
    await tui.waitFor(`● ${TITLE}`, { what: "the running task in /tasks" });
    tui.keys("Enter");
    await tui.waitFor("Send a message", { what: "the task's actions" });
    tui.type("Send a message");
    tui.keys("Enter");
    await tui.waitFor("What the task should know or do next", { what: "the message prompt" });
    tui.type(STEER);
    tui.keys("Enter");
    await tui.waitFor(`Message delivered to "${TITLE}"`, { timeoutMs: 20_000, what: "the toast: delivered (confirmed by the server's event)" });
    fs.writeFileSync(`${server.root}/release`, "");
    await until(
      "the task completed",
      async () => (await readTaskFile(server)).tasks.find((t) => t.id === task.id)?.status === "completed" || undefined,
      30_000,
    );
    const messages = (await server.client.session.messages({ path: { id: task.sessionID } })).data!;
    const last = messages.filter((m) => m.info.role === "assistant").at(-1)!;
    expect(last.parts.some((p) => p.type === "text" && p.text === `Done; last read: ${STEER}`)).toBe(true);
    await tui.waitFor((s) => s.includes("▶ 1 finished") && !s.includes(`⚠ ${TITLE}`), { timeoutMs: 30_000, what: "the task finished in the sidebar" });
  }, 120_000);
});

/**
 * A child that asks the user a question (OpenCode's `question` tool, on by default; the build agent
 * may use it) on the real server: listed as waiting with its question, `block: true` returns at once,
 * answered through background_output({ answer }) or through the API, the deadline standing still
 * meanwhile; under `opencode run` the child is told at once that nobody can answer, and finishes.
 */
import { describe, expect, test } from "vitest";
import { getMessages, isToolFollowUp, lastUserText, toolResult, type ChatRequest } from "../harness/index.js";
import type { Env } from "./helpers.js";
import { launchAll, promptList, readTaskFile, registerLateChecks, requestOf, storedTask, toolOutputs, until, useOpencode } from "./helpers.js";

const OPTIONS = { taskTimeoutSeconds: 6 };
const env = useOpencode({ pluginOptions: OPTIONS });

const QUESTION = "Which database should I use?";
const ASK = {
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
};

/** The child asks on its first step, then answers with what its question's tool result said. */
function scriptAskingChild(cue: string, reply: (toolOutput: string) => { text: string; delayMs?: number } = (out) => ({ text: `DONE ${cue}: ${out}` })) {
  env.model.script({
    name: `${cue}-ask`,
    match: (r) => lastUserText(r).includes(cue) && !isToolFollowUp(r),
    reply: { toolCalls: [{ name: "question", arguments: ASK }] },
  });
  env.model.script({
    name: `${cue}-done`,
    match: (r) => lastUserText(r).includes(cue) && isToolFollowUp(r),
    reply: (r: ChatRequest) => reply(toolResult(r, "question")?.content ?? "NO_QUESTION_RESULT"),
  });
}

/** One parent turn (user text `cue`) that calls `tool` with `args`; returns the tool's output. */
async function promptTool(e: Env, parent: string, cue: string, tool: string, args: Record<string, unknown>): Promise<string> {
  e.model.script({ name: `${cue}-call`, match: (r) => lastUserText(r) === cue && !isToolFollowUp(r), reply: { toolCalls: [{ name: tool, arguments: args }] } });
  e.model.script({ name: `${cue}-called`, match: (r) => lastUserText(r) === cue && isToolFollowUp(r), reply: { text: `called ${cue}` } });
  const r = await e.server.client.session.prompt({ path: { id: parent }, body: { parts: [{ type: "text", text: cue }] } });
  if (r.error) throw new Error(`prompt failed: ${JSON.stringify(r.error)}`);
  return toolOutputs(await getMessages(e.server.client, parent), tool).at(-1)!;
}

/** The server's pending question of a session (GET /question). */
async function pendingQuestion(sessionID: string): Promise<{ id: string; questions: { question: string }[] } | undefined> {
  const res = await fetch(`${env.server.url}/question?directory=${encodeURIComponent(env.server.directory)}`);
  const list = (await res.json()) as { id: string; sessionID: string; questions: { question: string }[] }[];
  return list.find((q) => q.sessionID === sessionID);
}

describe("a child's question", () => {
  test("listed as waiting with the question, block returns at once, the parent agent answers for the user, the task completes with the answer", async () => {
    scriptAskingChild("CHILD_A");
    const { parent, ids } = await launchAll(env, "QUESTION_A", [{ description: "Ask A", prompt: "CHILD_A: pick a database", agent: "build" }]);
    const id = ids[0]!;
    const stored = await storedTask(env.server, id);
    await until("the child's question pending", () => pendingQuestion(stored!.sessionID));

    const listed = await promptList(env, parent, "LIST_A");
    expect(listed).toMatch(new RegExp(`${id}\\s+running, waiting`));
    expect(listed).toContain(`⚠ waiting for the user's answer: "${QUESTION}" (options: PostgreSQL | SQLite; typed answers allowed)`);
    expect(listed).toContain(`background_output({ task_id: "${id}", answer: "<answer>" })`);

    // block: true with a wait of ten minutes: the turn ends at once with the news (else the test times out)
    const blocked = await promptTool(env, parent, "BLOCK_A", "background_output", { task_id: id, block: true, timeout: 600 });
    expect(blocked).toContain(`Waiting for the user's answer to its question: "${QUESTION}"`);
    expect((await storedTask(env.server, id))?.status).toBe("running");

    // A typed answer that names an option (any case) is sent as that option; block then waits for the end.
    const answered = await promptTool(env, parent, "ANSWER_A", "background_output", { task_id: id, answer: "postgresql", block: true, timeout: 60 });
    expect(answered).toContain(`Answer sent to task ${id}: "${QUESTION}"="PostgreSQL".`);
    expect(answered).toContain(`DONE CHILD_A: User has answered your questions: "${QUESTION}"="PostgreSQL".`);
    expect((await storedTask(env.server, id))?.status).toBe("completed");

    // No question waits any more: an answer is refused, and nothing is sent.
    const refused = await promptTool(env, parent, "AGAIN_A", "background_output", { task_id: id, answer: "SQLite" });
    expect(refused).toMatch(new RegExp(`^Error: task ${id} is not waiting for an answer \\(it is completed\\)`));
  });

  test("answered through the API (POST /question/{id}/reply): the task completes with the answer, and the list no longer says it waits", async () => {
    scriptAskingChild("CHILD_B");
    const { parent, ids } = await launchAll(env, "QUESTION_B", [{ description: "Ask B", prompt: "CHILD_B: pick a database", agent: "build" }]);
    const id = ids[0]!;
    const child = (await storedTask(env.server, id))!.sessionID;
    const pending = await until("the child's question pending", () => pendingQuestion(child));
    expect(pending.questions[0]!.question).toBe(QUESTION);
    // A wrong answer through the tool is refused before anything is sent: the question still waits.
    const wrong = await promptTool(env, parent, "WRONG_B", "background_output", { task_id: id, answer: ["SQLite", "extra"] });
    expect(wrong).toContain("Error: the answer was not sent: the child asked 1 question; give one answer per question (got 2)");
    expect(await pendingQuestion(child)).toBeTruthy();

    const res = await fetch(`${env.server.url}/question/${pending.id}/reply?directory=${encodeURIComponent(env.server.directory)}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ answers: [["SQLite, because it is a file"]] }),
    });
    expect(res.status).toBe(200);
    const done = await until("completed", async () => {
      const t = await storedTask(env.server, id);
      return t?.status === "completed" && t;
    });
    expect(done.error).toBeUndefined();
    // The parent was idle: its wake's turn first, so the next prompts get turns of their own.
    await requestOf(env.model, "QUESTION_B-wake");
    await until("the parent idle after its wake", async () => {
      const status = ((await env.server.client.session.status()).data ?? {}) as Record<string, { type: string }>;
      return (status[parent]?.type ?? "idle") === "idle";
    });
    const output = await promptTool(env, parent, "OUTPUT_B", "background_output", { task_id: id });
    expect(output).toContain(`DONE CHILD_B: User has answered your questions: "${QUESTION}"="SQLite, because it is a file".`);
    const listed = await promptList(env, parent, "LIST_B");
    expect(listed).not.toContain("waiting");
  });

  test("a multi-choice answer as /tasks sends it (two options picked, one label longer than a line, with a comma): the child reads both labels whole", async () => {
    const LONG = "Keep the old schema and migrate the data with a one-off script that runs before the deploy (slower, safest)";
    const PLAN = {
      questions: [
        {
          question: "Which plan?",
          header: "Plan",
          options: [
            { label: LONG, description: "the long way" },
            { label: "SQLite", description: "a file" },
          ],
          multiple: true,
        },
      ],
    };
    env.model.script({
      name: "CHILD_M-ask",
      match: (r) => lastUserText(r).includes("CHILD_M") && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "question", arguments: PLAN }] },
    });
    env.model.script({
      name: "CHILD_M-done",
      match: (r) => lastUserText(r).includes("CHILD_M") && isToolFollowUp(r),
      reply: (r: ChatRequest) => ({ text: `DONE CHILD_M: ${toolResult(r, "question")?.content ?? "NO_QUESTION_RESULT"}` }),
    });
    const { ids } = await launchAll(env, "QUESTION_M", [{ description: "Ask M", prompt: "CHILD_M: pick a plan", agent: "build" }]);
    const id = ids[0]!;
    const child = (await storedTask(env.server, id))!.sessionID;
    const pending = await until("the child's question pending", () => pendingQuestion(child));
    // what the plugin recorded (and publishes for the TUI) keeps the label whole
    expect((await storedTask(env.server, id))?.status).toBe("running");
    // the reply /tasks sends for "<long label>, sqlite" typed (test/unit/tui/question.test.ts)
    const res = await fetch(`${env.server.url}/question/${pending.id}/reply?directory=${encodeURIComponent(env.server.directory)}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ answers: [[LONG, "SQLite"]] }),
    });
    expect(res.status).toBe(200);
    await until("completed", async () => (await storedTask(env.server, id))?.status === "completed");
    const answer = (await requestOf(env.model, "CHILD_M-done")).raw;
    expect(answer).toContain(JSON.stringify(`"Which plan?"="${LONG}, SQLite"`).slice(1, -1));
  });

  test("the deadline does not count time spent waiting for the answer, and its reason names the question", async () => {
    scriptAskingChild("CHILD_C", () => ({ text: "never C", delayMs: 60_000 }));
    const { ids } = await launchAll(env, "QUESTION_C", [{ description: "Ask C", prompt: "CHILD_C: pick a database", agent: "build" }]);
    const id = ids[0]!;
    const child = (await storedTask(env.server, id))!.sessionID;
    const pending = await until("the child's question pending", () => pendingQuestion(child));
    // Longer than taskTimeoutSeconds (6 s), all of it waiting for the user: the task is not stopped.
    await new Promise((r) => setTimeout(r, 8_000));
    expect((await storedTask(env.server, id))?.status).toBe("running");
    await fetch(`${env.server.url}/question/${pending.id}/reply?directory=${encodeURIComponent(env.server.directory)}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ answers: [["PostgreSQL"]] }),
    });
    await requestOf(env.model, "CHILD_C-done");
    // Its next step never answers: the deadline, moved on by the wait, stops it.
    const stopped = await until(
      "stopped",
      async () => {
        const t = await storedTask(env.server, id);
        return t?.status === "error" && t;
      },
      20_000,
    );
    expect(stopped.error).toMatch(
      new RegExp(
        `^stopped: still running after 6s of work \\(taskTimeoutSeconds: 6\\), not counting \\d+s spent waiting for the user \\(last: question "${QUESTION.replace("?", "\\?")}"\\)$`,
      ),
    );
  });

  test("under `opencode run` nobody can answer: the child is told so at once, decides itself, and the run finishes with its answer", async () => {
    env.model.script({
      name: "run-launch",
      match: (r) => lastUserText(r) === "RUN_D" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "background_task", arguments: { description: "Ask D", prompt: "CHILD_D: pick a database", agent: "build" } }] },
    });
    scriptAskingChild("CHILD_D", (out) => ({ text: `ASSUMED_D ${out}` }));
    env.model.script({
      name: "run-after",
      match: (r) => lastUserText(r) === "RUN_D" && isToolFollowUp(r),
      reply: (r) => ({ text: (toolResult(r, "background_task")?.content ?? "").includes("ASSUMED_D") ? "RUN_SAW_D" : "RUN_MISSED_D" }),
    });
    const { code, output } = await env.server.exec(["run", "RUN_D"], { timeoutMs: 90_000 });
    expect(code).toBe(0);
    expect(output).toContain("RUN_SAW_D");
    const childSaw = toolResult((await requestOf(env.model, "CHILD_D-done")).body, "question")!.content;
    expect(childSaw).toContain(
      `User has answered your questions: "${QUESTION}"="Nobody can answer: you run as a background task where no person sees questions.`,
    );
    expect(childSaw).toContain("decide yourself, carry on, and state in your final answer what you assumed and why");
    const task = (await readTaskFile(env.server)).tasks.find((t) => t.description === "Ask D");
    expect(task?.status).toBe("completed");
  });

  registerLateChecks(env);
});

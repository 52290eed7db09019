import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { parseQuestionAsked } from "../../../src/child-waits.js";
import { matchAnswers, questionPolicy } from "../../../src/manager/requests/questions.js";
import { Watchdog } from "../../../src/manager/spend/watchdog.js";
import { writeStep } from "../../../src/manager/task/runner.js";
import { TaskRegistry } from "../../../src/manager/task/registry.js";
import { DEFAULT_OPTIONS, parseOptions } from "../../../src/options.js";
import { NO_ONE_CAN_ANSWER } from "../../../src/prompts.js";
import { QUESTION_MAX_CHARS, QUESTION_MAX_OPTIONS } from "../../../src/constants.js";
import { type Harness, arrangeRuntime, createHarness, savedTask, toolContext } from "./setup.js";

const DB = {
  question: "Which database should I use?",
  header: "Database",
  options: [
    { label: "PostgreSQL", description: "a server" },
    { label: "SQLite", description: "a file" },
  ],
};

describe("a question's shape", () => {
  test("cleaned and bounded: escapes and line breaks gone, long texts cut, extra options dropped, custom/multiple kept", () => {
    const wait = parseQuestionAsked({
      id: "que_1",
      sessionID: "ses_c",
      questions: [
        {
          question: `Pick\n\u001b[31mone\u001b[0m ${"x".repeat(1000)}`,
          header: "H",
          options: Array.from({ length: 40 }, (_, i) => ({ label: `opt ${i}`, description: "d" })),
          multiple: true,
          custom: false,
        },
      ],
    })!;
    const q = wait.questions[0]!;
    expect(q.question.startsWith("Pick one xxx")).toBe(true);
    expect(q.question.length).toBeLessThanOrEqual(QUESTION_MAX_CHARS);
    expect(q.options).toHaveLength(QUESTION_MAX_OPTIONS);
    expect(q).toMatchObject({ header: "H", multiple: true, custom: false });
    expect(parseQuestionAsked({ id: "que_2", questions: [] })).toBeUndefined();
    expect(parseQuestionAsked({ questions: [DB] })).toBeUndefined();
  });

  test("answers: an option named in any case becomes its label, several options of a multiple-choice question, refusals say why", () => {
    const one = { id: "que_1", questions: [DB] };
    expect(matchAnswers(one, ["postgresql"])).toEqual({ answers: [["PostgreSQL"]] });
    expect(matchAnswers(one, ["MySQL, since we run it"])).toEqual({ answers: [["MySQL, since we run it"]] });
    expect(matchAnswers(one, ["a", "b"])).toEqual({ error: "the child asked 1 question; give one answer per question (got 2)" });
    expect(matchAnswers(one, ["  "])).toEqual({ error: "answer 1 is empty" });
    const strict = { id: "que_2", questions: [{ ...DB, custom: false }] };
    expect(matchAnswers(strict, ["MySQL"])).toEqual({
      error: 'question 1 ("Which database should I use?") takes only one of its options: "PostgreSQL", "SQLite"',
    });
    const several = { id: "que_3", questions: [{ ...DB, multiple: true, custom: false }] };
    expect(matchAnswers(several, ["sqlite, PostgreSQL"])).toEqual({ answers: [["SQLite", "PostgreSQL"]] });
  });

  test("policy: questions unset means deny under opencode run, ask elsewhere; a set option wins", () => {
    expect(questionPolicy({ options: { ...DEFAULT_OPTIONS }, oneShotRun: true })).toBe("deny");
    expect(questionPolicy({ options: { ...DEFAULT_OPTIONS }, oneShotRun: false })).toBe("ask");
    expect(questionPolicy({ options: { ...DEFAULT_OPTIONS, questions: "ask" }, oneShotRun: true })).toBe("ask");
    expect(questionPolicy({ options: { ...DEFAULT_OPTIONS, questions: "deny" }, oneShotRun: false })).toBe("deny");
    expect(parseOptions({ questions: "deny" }).options.questions).toBe("deny");
    const bad = parseOptions({ questions: "never" });
    expect(bad.options.questions).toBeUndefined();
    expect(bad.warnings).toEqual([
      'offshoot: option "questions" must be either "ask" or "deny"; got the string "never". Using the default ("deny" under opencode run, else "ask").',
    ]);
  });
});

describe("a task whose child asks", () => {
  let h: Harness;
  afterEach(async () => h.cleanup());

  test("listed and reported as waiting, block returns at once, the answer goes to the server and the wait ends", async () => {
    h = await createHarness();
    const parent = h.fake.addParent();
    const task = await h.launch(parent, "pick a db");
    const requestID = h.fake.ask(task.sessionID, [DB]);
    await h.fake.settle();

    const list = h.text(await h.tools.list.execute({}, toolContext(parent)));
    expect(list).toContain("running, waiting");
    expect(list).toContain(`⚠ waiting for the user's answer: "Which database should I use?" (options: PostgreSQL | SQLite; typed answers allowed)`);
    // (a wait of ten minutes would time the test out: it returns at once)
    const blocked = h.text(await h.tools.output.execute({ task_id: task.id, block: true, timeout: 600 }, toolContext(parent)));
    expect(blocked).toContain(`Waiting for the user's answer to its question: "Which database should I use?"`);
    expect(blocked).toContain(`background_output({ task_id: "${task.id}", answer: "<answer>" })`);
    // the published state carries the question for the TUI
    const published = h.fake.callsOf("session.update").at(-1)!.options.body.metadata.offshoot;
    expect(published.question).toEqual({ id: requestID, questions: [DB] });

    const answered = h.text(await h.tools.output.execute({ task_id: task.id, answer: "sqlite" }, toolContext(parent)));
    expect(answered).toContain(`Answer sent to task ${task.id}: "Which database should I use?"="SQLite".`);
    expect(answered).toContain("Still running.");
    expect(h.fake.callsOf("http.post").map((c) => c.options)).toMatchObject([
      { url: "/question/{requestID}/reply", path: { requestID }, body: { answers: [["SQLite"]] } },
    ]);
    await h.fake.settle();
    expect(h.text(await h.tools.list.execute({}, toolContext(parent)))).not.toContain("waiting");
    const again = h.text(await h.tools.output.execute({ task_id: task.id, answer: "sqlite" }, toolContext(parent)));
    expect(again).toMatch(/^Error: task bg_\w+ is not waiting for an answer \(it is running\)/);
    expect(h.fake.callsOf("http.post")).toHaveLength(1);
  });

  test("a block already waiting returns when the child asks", async () => {
    h = await createHarness();
    const parent = h.fake.addParent();
    const task = await h.launch(parent, "ask later");
    let returned = false;
    const pending = h.tools.output.execute({ task_id: task.id, block: true, timeout: 600 }, toolContext(parent)).finally(() => (returned = true));
    await h.fake.settle();
    expect(returned).toBe(false); // still waiting: the child has not asked yet
    h.fake.ask(task.sessionID, [DB]);
    const blocked = h.text(await pending);
    expect(blocked).toContain("Waiting for the user's answer to its question");
  });

  test("answered elsewhere (question.replied): the wait ends; a failed send says so and keeps the wait", async () => {
    h = await createHarness();
    const parent = h.fake.addParent();
    const task = await h.launch(parent, "pick again");
    const requestID = h.fake.ask(task.sessionID, [DB]);
    await h.fake.settle();
    h.fake.failNext("http.post", 500, { name: "UnknownError", data: { message: "boom" } });
    const failed = h.text(await h.tools.output.execute({ task_id: task.id, answer: "SQLite" }, toolContext(parent)));
    expect(failed).toContain(`Error: the answer could not be sent to task ${task.id}: HTTP 500: UnknownError: boom.`);
    expect(h.manager.questionOf(task)?.id).toBe(requestID);
    h.fake.emit({ type: "question.replied", properties: { sessionID: task.sessionID, requestID, answers: [["PostgreSQL"]] } });
    await h.fake.settle();
    expect(h.manager.questionOf(task)).toBeUndefined();
  });

  test('questions: "deny": the child is answered at once that nobody can answer, and the task never waits', async () => {
    h = await createHarness({ options: { questions: "deny" } });
    const parent = h.fake.addParent();
    const task = await h.launch(parent, "ask nobody");
    const requestID = h.fake.ask(task.sessionID, [DB, { ...DB, question: "And the port?" }]);
    await h.fake.settle();
    expect(h.fake.callsOf("http.post").map((c) => c.options.body)).toEqual([{ answers: [[NO_ONE_CAN_ANSWER], [NO_ONE_CAN_ANSWER]] }]);
    expect(h.fake.callsOf("http.post")[0]!.options.path).toEqual({ requestID });
    expect(h.manager.questionOf(task)).toBeUndefined();
    expect(h.text(await h.tools.list.execute({}, toolContext(parent)))).not.toContain("waiting");
  });
});

describe("the deadline and a person's wait", () => {
  beforeEach(() => vi.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => vi.useRealTimers());

  test("time spent waiting for a question or a permission is not counted; the reason names what it waited for", () => {
    const stops: string[] = [];
    const watchdog = new Watchdog(
      { ...DEFAULT_OPTIONS, taskTimeoutSeconds: 10 },
      {
        now: () => Date.now(),
        stop: (_e, reason) => void stops.push(reason),
        dispatch: async (entry, input) => "effects" in writeStep(entry, input, Date.now()),
      },
    );
    const registry = new TaskRegistry();
    const entry = registry.add(savedTask({ ownerPid: 1, status: "running", startedAt: Date.now() }));
    watchdog.runStarted(entry);
    vi.advanceTimersByTime(4_000);
    arrangeRuntime(entry).question = { id: "que_1", questions: [DB] };
    watchdog.personWaitChanged(entry, 'question "Which database should I use?"');
    vi.advanceTimersByTime(60_000);
    expect(stops).toEqual([]);
    arrangeRuntime(entry).question = undefined;
    watchdog.personWaitChanged(entry);
    arrangeRuntime(entry).permission = { id: "per_1", permission: "bash", patterns: ["rm -rf build"] };
    watchdog.personWaitChanged(entry, "permission bash rm -rf build");
    vi.advanceTimersByTime(30_000);
    arrangeRuntime(entry).permission = undefined;
    watchdog.personWaitChanged(entry);
    vi.advanceTimersByTime(5_999);
    expect(stops).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(stops).toEqual([
      "stopped: still running after 10s of work (taskTimeoutSeconds: 10), not counting 1m 30s spent waiting for the user (last: permission bash rm -rf build)",
    ]);
  });
});

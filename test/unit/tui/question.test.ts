import { describe, expect, test } from "vitest";
import { TaskStore } from "../../../src/tui/model.js";
import { subscribeEvents } from "../../../src/tui/events.js";
import { attachAttention } from "../../../src/tui/attention.js";
import { createTasksDialog } from "../../../src/tui/dialog.js";
import { Loader } from "../../../src/tui/loader.js";
import { badgeText, childBadgeText, childLine, sidebarLines, taskOptionDescription, taskOptionTitle } from "../../../src/tui/format.js";
import { childInfo, fakeApi, settle } from "./fake-api.js";

const NOW = 100_000;
const DB = {
  question: "Which database should I use?",
  header: "Database",
  options: [
    { label: "PostgreSQL", description: "a server" },
    { label: "SQLite", description: "a file" },
  ],
};

function setup() {
  const f = fakeApi();
  const store = new TaskStore(() => NOW);
  subscribeEvents(f.api, store);
  attachAttention(f.api, store);
  const dialog = createTasksDialog({ api: f.api, store, loader: new Loader(f.api, store), now: () => NOW });
  f.emit("session.created", { info: childInfo("ses_db", { description: "Pick a db", startedAt: NOW - 5_000 }) });
  f.emit("session.created", { info: childInfo("ses_other", { description: "Other work", startedAt: NOW - 9_000 }) });
  f.route = { name: "session", params: { sessionID: "ses_parent" } };
  return { f, store, dialog };
}

describe("a task whose child asks a question", () => {
  test("marked in the sidebar, badge, child line and list (first), with a toast naming the task and a notification with the question sound", async () => {
    const { f, store } = setup();
    f.emit("question.asked", { id: "que_1", sessionID: "ses_db", questions: [DB], tool: { messageID: "msg_1", callID: "call_1" } });
    await settle();
    const t = store.task("ses_db")!;
    expect(t.question?.questions[0]?.question).toBe(DB.question);
    const tasks = store.tasksOf("ses_parent");
    expect(tasks.map((x) => x.meta.description)).toEqual(["Pick a db", "Other work"]);
    expect(
      sidebarLines(tasks, NOW, { expanded: false, width: 60 })
        .slice(0, 2)
        .map((l) => [l.text, l.tone]),
    ).toEqual([
      ["⚠ Pick a db", "warning"],
      ['  asks "Which database should I use?"', "warning"],
    ]);
    expect(badgeText(tasks)).toBe("⧗ 2 bg tasks · ⚠ 1 waiting");
    expect(childBadgeText(t, NOW)).toBe("bg task ● running 5s · ⚠ question");
    expect(childLine(t, NOW, "ctrl+x o", 200)).toBe('bg task "Pick a db" · ⚠ asks "Which database should I use?" · ctrl+x o tasks');
    expect(taskOptionTitle(t)).toBe("⚠ Pick a db");
    expect(taskOptionDescription(t, NOW)).toBe('asks "Which database should I use?"');
    expect(f.toasts).toEqual([
      expect.objectContaining({ variant: "warning", message: '"Pick a db" asks "Which database should I use?". Answer it from /tasks.' }),
    ]);
    expect(f.notifications).toEqual([
      expect.objectContaining({ message: '"Pick a db" asks "Which database should I use?"', sound: { name: "question", when: "always" } }),
    ]);
    f.emit("question.rejected", { sessionID: "ses_db", requestID: "que_1" });
    expect(store.task("ses_db")?.question).toBeUndefined();
    // metadata still carrying the answered request does not bring it back
    f.emit("session.updated", { info: childInfo("ses_db", { description: "Pick a db", startedAt: NOW - 5_000, question: { id: "que_1", questions: [DB] } }) });
    expect(store.task("ses_db")?.question).toBeUndefined();
  });

  test("answered from /tasks with an option: question.reply with its label, and the mark goes", async () => {
    const { f, store, dialog } = setup();
    f.emit("question.asked", { id: "que_2", sessionID: "ses_db", questions: [DB] });
    dialog.openList();
    f.choose("Pick a db");
    f.choose("Answer question");
    expect(f.select().title).toBe('"Pick a db" asks: Which database should I use?');
    expect(f.select().options.map((o) => o.title)).toEqual(["PostgreSQL", "SQLite", "Type your own answer…", "Reject", "← Back"]);
    f.choose("SQLite");
    await settle();
    expect(f.calls.filter((c) => c.method === "question.reply")).toEqual([{ method: "question.reply", args: { requestID: "que_2", answers: [["SQLite"]] } }]);
    expect(store.task("ses_db")?.question).toBeUndefined();
    expect(f.select().title).toBe("Background tasks");
  });

  test("several questions one after the other, one typed; a question without typed answers offers none; reject", async () => {
    const { f, store, dialog } = setup();
    f.emit("question.asked", {
      id: "que_3",
      sessionID: "ses_db",
      questions: [DB, { question: "Which port?", header: "Port", options: [{ label: "5432", description: "default" }], custom: false }],
    });
    dialog.openTask("ses_db");
    f.choose("Answer question");
    expect(f.select().title).toBe('"Pick a db" asks (1/2): Which database should I use?');
    f.choose("Type your own answer");
    const prompt = f.dialog();
    if (prompt?.kind !== "prompt") throw new Error("no prompt dialog");
    prompt.onConfirm!("  MySQL, we run it already ");
    expect(f.select().title).toBe('"Pick a db" asks (2/2): Which port?');
    expect(f.select().options.map((o) => o.title)).toEqual(["5432", "Reject", "← Back"]);
    f.choose("5432");
    await settle();
    expect(f.calls.find((c) => c.method === "question.reply")?.args).toEqual({ requestID: "que_3", answers: [["MySQL, we run it already"], ["5432"]] });

    f.emit("question.asked", { id: "que_4", sessionID: "ses_db", questions: [DB] });
    expect(store.task("ses_db")?.question?.id).toBe("que_4");
    dialog.openTask("ses_db");
    f.choose("Answer question");
    f.choose("Reject");
    await settle();
    expect(f.calls.filter((c) => c.method === "question.reject")).toEqual([{ method: "question.reject", args: { requestID: "que_4" } }]);
    expect(store.task("ses_db")?.question).toBeUndefined();
  });

  test('a multi-choice question, also one that takes no typed answer: "A, B" typed picks both options (the rule background_output uses); an option typed in any case is its label; other text on an options-only question is refused and asked again', async () => {
    const { f, dialog } = setup();
    const TOOLS = {
      question: "Which tools?",
      header: "Tools",
      options: [{ label: "lint" }, { label: "test" }, { label: "build" }],
      multiple: true,
      custom: false,
    };
    f.emit("question.asked", { id: "que_m", sessionID: "ses_db", questions: [TOOLS, { ...DB, multiple: true }] });
    dialog.openTask("ses_db");
    f.choose("Answer question");
    expect(f.select().options.map((o) => o.title)).toEqual(["lint", "test", "build", "Type several options…", "Reject", "← Back"]);
    f.choose("Type several options");
    let prompt = f.dialog();
    if (prompt?.kind !== "prompt") throw new Error("no prompt dialog");
    prompt.onConfirm!("lint and more");
    expect(f.toasts.at(-1)).toEqual(expect.objectContaining({ variant: "warning", message: "This question takes only its options: lint, test, build." }));
    expect(f.select().title).toBe('"Pick a db" asks (1/2): Which tools?');
    f.choose("Type several options");
    prompt = f.dialog();
    if (prompt?.kind !== "prompt") throw new Error("no prompt dialog");
    prompt.onConfirm!(" Lint, BUILD ");
    expect(f.select().title).toBe('"Pick a db" asks (2/2): Which database should I use?');
    f.choose("Type your own answer");
    prompt = f.dialog();
    if (prompt?.kind !== "prompt") throw new Error("no prompt dialog");
    prompt.onConfirm!("sqlite");
    await settle();
    expect(f.calls.find((c) => c.method === "question.reply")?.args).toEqual({ requestID: "que_m", answers: [["lint", "build"], ["SQLite"]] });
  });

  test("an option's label longer than a line is shown cut but sent whole: the child reads its own words", async () => {
    const { f, dialog } = setup();
    const LONG = "Keep the old schema and migrate the data with a one-off script that runs before the deploy  (slower, safest)";
    const PLAN = { question: "Which plan?", options: [{ label: LONG }, { label: "SQLite" }], multiple: true };
    f.emit("question.asked", { id: "que_l", sessionID: "ses_db", questions: [PLAN] });
    dialog.openTask("ses_db");
    f.choose("Answer question");
    expect(f.select().options[0]!.title).toBe(`${LONG.replace("  ", " ").slice(0, 79)}…`);
    f.choose("Type your own answer");
    const prompt = f.dialog();
    if (prompt?.kind !== "prompt") throw new Error("no prompt dialog");
    prompt.onConfirm!(`${LONG.toLowerCase()}, sqlite`);
    await settle();
    expect(f.calls.find((c) => c.method === "question.reply")?.args).toEqual({ requestID: "que_l", answers: [[LONG, "SQLite"]] });
  });

  test("a failed reply says so and keeps the wait; a late TUI reads pending questions", async () => {
    const { f, store, dialog } = setup();
    f.emit("question.asked", { id: "que_5", sessionID: "ses_db", questions: [DB] });
    f.replies["question.reply"] = new Error("offline");
    dialog.openTask("ses_db");
    f.choose("Answer question");
    f.choose("PostgreSQL");
    await settle();
    expect(f.toasts.at(-1)).toEqual(expect.objectContaining({ variant: "error", message: 'Could not answer the question of "Pick a db".' }));
    expect(store.task("ses_db")?.question?.id).toBe("que_5");

    const late = fakeApi();
    const lateStore = new TaskStore(() => NOW);
    late.replies["session.children"] = [childInfo("ses_db", { description: "Pick a db" })];
    late.replies["question.list"] = [{ id: "que_5", sessionID: "ses_db", questions: [DB] }];
    await new Loader(late.api, lateStore).ensure("ses_parent");
    expect(lateStore.task("ses_db")?.question?.id).toBe("que_5");
  });
});

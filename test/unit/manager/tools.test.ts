import { describe, expect, it } from "vitest";
import { arrange, toolContext, useHarness, wakesOf } from "./setup.js";
import { readStoredTasks } from "../../stored-tasks.js";

const h = useHarness();

describe("background_output", () => {
  it("says a running task is running, and gives all text of the child's last answer once done", async () => {
    const parent = h.fake.addParent();
    const task = await h.launch(parent);
    expect(h.text(await h.tools.output.execute({ task_id: task.id }, toolContext(parent)))).toContain("Still running");
    h.fake.answer(task.sessionID, { text: "the result" });
    await h.fake.settle();
    const out = h.text(await h.tools.output.execute({ task_id: task.id }, toolContext(parent)));
    expect(out).toContain("completed");
    expect(out).toContain("Answer:\nthe result");
  });

  it("with block, waits for the task's own completion", async () => {
    const parent = h.fake.addParent();
    const task = await h.launch(parent);
    let returned = false;
    const pending = h.tools.output.execute({ task_id: task.id, block: true, timeout: 30 }, toolContext(parent)).finally(() => (returned = true));
    await h.fake.settle();
    expect(returned).toBe(false); // still waiting: the child has not answered
    h.fake.answer(task.sessionID, { text: "late result" });
    expect(h.text(await pending)).toContain("late result");
  });

  it("with block, gives up after the timeout and when the tool call is aborted", async () => {
    const parent = h.fake.addParent();
    const task = await h.launch(parent);
    expect(h.text(await h.tools.output.execute({ task_id: task.id, block: true, timeout: 0.05 }, toolContext(parent)))).toContain(
      "did not finish within 0.05s",
    );
    const abort = new AbortController();
    const waiting = h.tools.output.execute({ task_id: task.id, block: true, timeout: 600 }, toolContext(parent, { abort: abort.signal }));
    abort.abort();
    expect(h.text(await waiting)).toContain("the wait was interrupted");
  });

  it("only knows the calling session's tasks", async () => {
    const parent = h.fake.addParent();
    const other = h.fake.addParent();
    const task = await h.launch(parent);
    expect(h.text(await h.tools.output.execute({ task_id: task.id }, toolContext(other)))).toContain("this session has no background tasks");
  });
});

describe("task ids", () => {
  it("accepts a unique prefix, lists candidates for an ambiguous one, and this session's tasks for an unknown one", async () => {
    const parent = h.fake.addParent();
    const a = await h.launch(parent, "a");
    const b = await h.launch(parent, "b");
    arrange(b).id = `${a.id.slice(0, 5)}zzzzz`;
    arrange(a).id = `${a.id.slice(0, 5)}yyyyy`;
    const ambiguous = h.text(await h.tools.output.execute({ task_id: a.id.slice(0, 5) }, toolContext(parent)));
    expect(ambiguous).toContain("matches 2 tasks");
    expect(ambiguous).toContain(a.id);
    expect(ambiguous).toContain(b.id);
    expect(h.text(await h.tools.output.execute({ task_id: a.id.slice(0, 6) }, toolContext(parent)))).toContain(`Task ${a.id}`);
    expect(h.text(await h.tools.output.execute({ task_id: a.sessionID }, toolContext(parent)))).toContain(`Task ${a.id}`);
    const unknown = h.text(await h.tools.output.execute({ task_id: "bg_unknown" }, toolContext(parent)));
    expect(unknown).toContain('no task "bg_unknown"');
    expect(unknown).toContain(a.id);
  });
});

describe("background_cancel", () => {
  it("aborts the child; the task is cancelled, saved, the parent notified once and not woken for its own cancel", async () => {
    const parent = h.fake.addParent();
    const task = await h.launch(parent);
    const out = h.text(await h.tools.cancel.execute({ task_id: task.id }, toolContext(parent)));
    expect(out).toContain(`Cancelled ${task.id}`);
    expect(h.fake.callsOf("session.abort").map((c) => c.options.path.id)).toEqual([task.sessionID]);
    expect(task.status).toBe("cancelled");
    h.fake.goIdle(parent);
    await h.fake.settle();
    expect(h.fake.userTexts(parent).filter((t) => t.includes(`[background task ${task.id} was cancelled]`))).toHaveLength(1);
    expect(wakesOf(h.fake, parent)).toHaveLength(0);
    const saved = readStoredTasks(h.storePath);
    expect(saved.tasks[0]!.status).toBe("cancelled");
  });

  it("cancels every task not ended with all (not an ended one), and says what to give when neither is given", async () => {
    const parent = h.fake.addParent();
    const a = await h.launch(parent, "a");
    const b = await h.launch(parent, "b");
    h.fake.answer(b.sessionID, { text: "done" });
    await h.fake.settle();
    const out = h.text(await h.tools.cancel.execute({ all: true }, toolContext(parent)));
    expect(out).toContain(a.id);
    expect(out).not.toContain(b.id);
    expect(b.status).toBe("completed");
    expect(h.text(await h.tools.cancel.execute({}, toolContext(parent)))).toContain("give task_id");
    expect(h.text(await h.tools.cancel.execute({ task_id: b.id }, toolContext(parent)))).toContain("already ended (completed)");
  });
});

describe("background_list", () => {
  it("shows the calling session's tasks as plain aligned text (forked, resumed runs, usage), then totals", async () => {
    const parent = h.fake.addParent();
    const forked = await h.launch(parent, "forked one", { fork: true });
    const plain = await h.launch(parent, "plain | one");
    h.fake.answer(plain.sessionID, { text: "ok" });
    await h.fake.settle();
    await h.tools.task.execute({ description: "", prompt: "again", agent: "explore", resume: plain.id }, toolContext(parent));
    const out = h.text(await h.tools.list.execute({}, toolContext(parent)));
    const lines = out.split("\n");
    expect(lines[0]).toMatch(/^id +status +time +tool calls +usage +model +description$/);
    expect(out).not.toContain("|---");
    const row = (id: string) => lines.find((l) => l.startsWith(id))!;
    expect(row(forked.id)).toMatch(/ running +\d+s +0 calls +- +mock\/mock-model +"forked one" \(general, forked\)$/);
    expect(row(plain.id)).toMatch(/ resumed +\d+s +0 calls +.* "plain \| one" \(explore, run 2\)$/);
    // Columns line up: every row's status starts where the header's does.
    expect(row(forked.id).indexOf("running")).toBe(lines[0]!.indexOf("status"));
    expect(out).toContain("2 tasks: 1 running · 1 resumed");
    expect(h.text(await h.tools.list.execute({ status: "completed" }, toolContext(parent)))).toContain("No completed tasks");
    expect(h.text(await h.tools.list.execute({}, toolContext(h.fake.addParent())))).toBe("This session has no background tasks.");
  });
});

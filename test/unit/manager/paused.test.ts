/**
 * What a task paused by its session's budget means to the server half (task-state.ts
 * STATUS_MEANINGS `paused`: its run has not ended, it waits for a person): its changes cannot be
 * taken nor its worktree discarded, by the agent or from /tasks; retention never moves it to the
 * history; the step its pause cut short still counts, in its usage and the budget; once a person
 * raises the budget its reason stops saying the budget is reached; `all: true` says what it cancelled.
 * On the unit fake (test/unit/manager/fake-opencode.ts), real git for the worktree.
 */
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { REQUEST_KEY } from "../../../src/task-state.js";
import type { BackgroundTask } from "../../../src/task-record.js";
import { createWorktree } from "../../../src/worktree/worktree.js";
import { readStoredTasks } from "../../stored-tasks.js";
import { type TempRepo, git, tempRepo } from "../worktree/git-repo.js";
import { type Harness, arrange, createHarness, toolContext } from "./setup.js";

let h: Harness;
let temp: TempRepo | undefined;
afterEach(async () => {
  await h.cleanup();
  temp?.remove();
  temp = undefined;
});

/** One finished step of the child: `input` tokens charged in full (a tool call follows). */
const step = (task: BackgroundTask, id: string, input: number) =>
  h.fake.emit({
    type: "message.updated",
    properties: {
      sessionID: task.sessionID,
      info: {
        id,
        sessionID: task.sessionID,
        role: "assistant",
        time: { created: Date.now(), completed: Date.now() },
        finish: "tool-calls",
        tokens: { input, output: 0, reasoning: 0, cache: { read: 0, write: 0 } },
        cost: 0,
      },
    },
  });

const request = (task: BackgroundTask, kind: string, id: string) => {
  const session = h.fake.sessions.get(task.sessionID)!;
  const metadata = { ...(session.info.metadata ?? {}), [REQUEST_KEY]: { kind, id } };
  session.info.metadata = metadata;
  h.fake.emit({ type: "session.updated", properties: { sessionID: task.sessionID, info: { ...session.info, metadata } } });
};
const published = (task: BackgroundTask) => (h.fake.sessions.get(task.sessionID)!.info.metadata as any)?.offshoot;

/** A budget of 1,000 tokens and one task whose first step spends 1,200: it is paused. */
async function pausedTask() {
  h = await createHarness({ options: { sessionBudgetTokens: 1000, sessionBudgetCost: 0 } });
  const parent = h.fake.addParent();
  const a = await h.launch(parent, "first");
  step(a, "msg_a1", 1200);
  await h.fake.settle();
  expect(a.status).toBe("paused");
  return { parent, a };
}

describe("a paused task", () => {
  it("its changes are not taken and its worktree is not discarded, by the agent or from /tasks: it waits for a person", async () => {
    const { parent, a } = await pausedTask();
    temp = tempRepo("offshoot-paused-");
    const info = await createWorktree({ projectDir: temp.repo, projectID: "p1", taskId: a.id, env: { XDG_DATA_HOME: path.join(temp.root, "data") } });
    fs.writeFileSync(path.join(info.path, "a.txt"), "changed\n");
    git(info.path, "commit", "-q", "-am", "an earlier step's change");
    arrange(a).worktree = { ...info, changes: { summary: "1 file +1 -1", files: ["a.txt"] } } as never;

    const take = h.text(await h.tools.take.execute({ task_id: a.id }, toolContext(parent)));
    expect(take).toMatch(new RegExp(`^Error: task ${a.id} is paused: its run has not ended, it waits for a person`));
    const discard = h.text(await h.tools.cancel.execute({ task_id: a.id, discard: true }, toolContext(parent)));
    expect(discard).toMatch(new RegExp(`^Error: task ${a.id} is paused: its run has not ended, it waits for a person\\. Cancel it first`));
    expect(a.status).toBe("paused"); // (not cancelled on the way)
    request(a, "take", "req-take");
    await h.fake.settle();
    expect(published(a).answered).toMatchObject({ id: "req-take", error: expect.stringContaining("still paused") });
    request(a, "discard", "req-discard");
    await h.fake.settle();
    expect(published(a).answered).toMatchObject({ id: "req-discard", error: expect.stringContaining("still paused") });
    expect(git(temp.repo, "branch", "--list", "offshoot/*")).toContain(info.branch);
    expect(fs.existsSync(info.path)).toBe(true);
  });

  it("is never moved to the history while paused, even once its parent is gone (nothing would continue it after a restart)", async () => {
    const { parent, a } = await pausedTask();
    const release = h.fake.hold("session.abort"); // the end that follows the parent's deletion waits for its abort
    try {
      h.fake.emit({ type: "session.deleted", properties: { sessionID: parent, info: { id: parent } } });
      await h.fake.called("session.abort", 2); // (the pause's own abort was the first)
      await h.manager.save();
      expect(a.status).toBe("paused");
      const stored = readStoredTasks(h.storePath);
      expect(stored.history.map((t) => t.id)).not.toContain(a.id);
      expect(stored.open.map((t) => t.id)).toContain(a.id);
    } finally {
      release();
    }
    await h.fake.settle();
    expect(a.status).toBe("error"); // its parent was deleted: ended, then settled
  });

  it("a step its pause cut short is still counted: its usage and the budget take what the provider charged", async () => {
    const { parent, a } = await pausedTask();
    step(a, "msg_a2", 700); // the next step was already out when the pause landed, and was answered
    await h.fake.settle();
    expect(a.usage).toMatchObject({ input: 1900 });
    const list = h.text(await h.tools.list.execute({}, toolContext(parent)));
    expect(list).toContain("budget: this session's background budget is reached: 1.9k of 1.0k tokens charged in full (190%)");
  });

  it("once a person raised the budget, its reason no longer says the budget is reached", async () => {
    const { a } = await pausedTask();
    expect(a.error).toContain("budget is reached");
    request(a, "raise-budget", "req-raise");
    await h.fake.settle();
    expect(a.status).toBe("paused");
    expect(a.error).not.toContain("reached");
    expect(a.error).toMatch(
      /^paused after its step; the session's background budget was raised \(1.2k of 2.0k tokens charged in full \(60%\)\): "Continue" in \/tasks/,
    );
    expect(published(a).error).toBe(a.error);
  });

  it("all: true cancels the queued and paused tasks too, and its reply says which", async () => {
    const { parent, a } = await pausedTask();
    const out = h.text(await h.tools.cancel.execute({ all: true }, toolContext(parent)));
    expect(out).toBe(`Cancelled ${a.id} "first" (was paused).`);
    expect(a.status).toBe("cancelled");
    const none = h.text(await h.tools.cancel.execute({ all: true }, toolContext(parent)));
    expect(none).toBe("No background task of this session is running, queued or paused; nothing to cancel.");
  });
});

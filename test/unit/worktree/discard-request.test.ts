/**
 * The /tasks "Discard worktree and branch" action, server half (src/manager/requests.ts): the TUI
 * writes `metadata.offshootRequest` into the task's child session; the `session.updated` event makes
 * the manager discard the task's worktree and branch once per request id, refuse (and log) a task
 * that still runs, and publish the answer with the task's state. Real git repositories in temp dirs;
 * the server is the unit fake.
 */
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { REQUEST_KEY } from "../../../src/task-state.js";
import { createWorktree } from "../../../src/worktree/worktree.js";
import type { BackgroundTask } from "../../../src/task-record.js";
import { edge } from "../../../src/manager/task/step.js";
import { type TempRepo, git, tempRepo } from "./git-repo.js";
import { type Harness, arrange, createHarness, toolContext } from "../manager/setup.js";

let h: Harness;
let root: string;
let repo: string;
const branches = () => git(repo, "branch", "--list", "offshoot/*");

let temp: TempRepo;

beforeEach(async () => {
  h = await createHarness();
  temp = tempRepo("offshoot-discard-");
  ({ root, repo } = temp);
});
afterEach(async () => {
  await h.cleanup();
  temp.remove();
});

/** Gives the task a real worktree with a commit on its branch (as an ended run leaves it). */
async function giveWorktree(task: BackgroundTask) {
  const info = await createWorktree({ projectDir: repo, projectID: "p1", taskId: task.id, env: { XDG_DATA_HOME: path.join(root, "data") } });
  fs.writeFileSync(path.join(info.path, "a.txt"), "changed\n");
  git(info.path, "commit", "-q", "-am", "the task's change");
  arrange(task).worktree = info;
  return info;
}

/** The TUI's request as the real server reports it: session.updated with the child's whole metadata. */
function request(task: BackgroundTask, id: string) {
  const session = h.fake.sessions.get(task.sessionID)!;
  const metadata = { ...(session.info.metadata ?? {}), [REQUEST_KEY]: { kind: "discard", id } };
  session.info.metadata = metadata;
  h.fake.emit({ type: "session.updated", properties: { sessionID: task.sessionID, info: { ...session.info, metadata } } });
}

const published = (task: BackgroundTask) => h.fake.sessions.get(task.sessionID)!.info.metadata?.offshoot;

describe("a discard request from /tasks", () => {
  test("an ended task's worktree and branch are removed once; the state says so; a repeated event does nothing", async () => {
    const parent = h.fake.addParent();
    const task = await h.launch(parent, "writer");
    h.fake.answer(task.sessionID, { text: "done" });
    await h.fake.settle();
    expect(task.status).toBe("completed");
    const info = await giveWorktree(task);
    expect(branches()).toContain(info.branch);

    request(task, "req-1");
    await h.fake.settle();
    expect(fs.existsSync(info.path)).toBe(false);
    expect(branches()).toBe("");
    expect(task.worktree?.removed).toBe("discarded");
    expect(published(task)).toMatchObject({ worktree: { branch: info.branch, removed: "discarded" }, answered: { id: "req-1" } });
    expect(published(task).answered.error).toBeUndefined();
    // the publish replaced the metadata: the request is gone, the published state kept
    expect(h.fake.sessions.get(task.sessionID)!.info.metadata[REQUEST_KEY]).toBeUndefined();

    // the same request again (a repeated event): nothing is done, not even a publish
    const publishes = h.fake.callsOf("session.update").length;
    request(task, "req-1");
    await h.fake.settle();
    expect(h.fake.callsOf("session.update")).toHaveLength(publishes);
    expect(h.fake.logs.filter((l) => String(l.message ?? l.body?.message).includes("req-1"))).toHaveLength(1);
  });

  test("a request written into the PARENT session about its child (a freed task): acted on; one about another parent's child, or one the TUI stopped waiting for, is not", async () => {
    const parent = h.fake.addParent();
    const stranger = h.fake.addParent();
    const task = await h.launch(parent, "writer");
    h.fake.answer(task.sessionID, { text: "done" });
    await h.fake.settle();
    const info = await giveWorktree(task);
    const viaParent = (session: string, id: string, at: number) => {
      const metadata = { [REQUEST_KEY]: { kind: "discard", id, child: task.sessionID, at } };
      h.fake.emit({ type: "session.updated", properties: { sessionID: session, info: { ...h.fake.sessions.get(session)!.info, metadata } } });
    };

    viaParent(stranger, "req-stranger", Date.now());
    viaParent(parent, "req-stale", Date.now() - 10 * 60_000); // (left behind: the TUI gave up on it long ago)
    await h.fake.settle();
    expect(branches()).toContain(info.branch);
    expect(task.worktree?.removed).toBeUndefined();

    viaParent(parent, "req-parent", Date.now());
    await h.fake.settle();
    expect(branches()).toBe("");
    expect(task.worktree?.removed).toBe("discarded");
    // the answer comes with the child's published state, as for a request in the child
    expect(published(task)).toMatchObject({ worktree: { removed: "discarded" }, answered: { id: "req-parent" } });
  });

  test("/tasks Continue of an interrupted task whose directory was freed (a kill between its removal and its record): refused, pointing to a resume", async () => {
    const parent = h.fake.addParent();
    const task = await h.launch(parent, "writer");
    const info = await giveWorktree(task);
    arrange(task).worktree = { ...info, freedAt: 5 }; // (as the record says after such a restart)
    fs.rmSync(info.path, { recursive: true, force: true });
    await h.manager.dispatch(h.manager.registry.get(task.id)!, edge("interrupt", { reason: "OpenCode stopped" }));
    expect(task.status).toBe("interrupted");
    const session = h.fake.sessions.get(task.sessionID)!;
    const metadata = { ...(session.info.metadata ?? {}), [REQUEST_KEY]: { kind: "continue", id: "req-continue" } };
    h.fake.emit({ type: "session.updated", properties: { sessionID: task.sessionID, info: { ...session.info, metadata } } });
    await h.fake.settle();
    expect(task.status).toBe("interrupted");
    expect(published(task).answered).toMatchObject({ id: "req-continue", error: expect.stringContaining("resume it with background_task") });
  });

  test("a task that still runs is refused and logged; its worktree and branch stay", async () => {
    const parent = h.fake.addParent();
    const task = await h.launch(parent, "still running");
    expect(task.status).toBe("running");
    const info = await giveWorktree(task);

    request(task, "req-active");
    await h.fake.settle();
    expect(task.status).toBe("running");
    expect(fs.existsSync(info.path)).toBe(true);
    expect(branches()).toContain(info.branch);
    expect(task.worktree?.removed).toBeUndefined();
    expect(published(task).answered).toMatchObject({ id: "req-active", error: expect.stringContaining("cancel it first") });
    expect(h.fake.logs.some((l) => String(l.message ?? l.body?.message).includes("discard request req-active refused"))).toBe(true);
  });
});

test("a discard by the agent (background_cancel discard) is published too: the TUI stops showing the branch", async () => {
  const parent = h.fake.addParent();
  const task = await h.launch(parent, "writer");
  h.fake.answer(task.sessionID, { text: "done" });
  await h.fake.settle();
  const info = await giveWorktree(task);
  const out = h.text(await h.tools.cancel.execute({ task_id: task.id, discard: true }, toolContext(parent)));
  expect(out).toContain(`Discarded task ${task.id}`);
  await h.fake.settle();
  expect(branches()).toBe("");
  expect(published(task)).toMatchObject({ worktree: { branch: info.branch, removed: "discarded" } });
});

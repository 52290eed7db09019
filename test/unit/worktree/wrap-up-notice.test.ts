/**
 * A worktree task's run is committed on its branch (wrapUpRun) after its status says it ended and
 * before its notice goes out. Meanwhile a sibling can end and deliver the parent's notices: the
 * wrapping-up task's notice must wait for its commit, or it goes out saying "changes: none yet" while
 * the branch holds the work (seen in the worktree e2e under load). Real git in temp dirs; the server
 * is the unit fake.
 */
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, expect, test } from "vitest";
import { createWorktree } from "../../../src/worktree/worktree.js";
import type { BackgroundTask } from "../../../src/task-record.js";
import type { WrapUpOutcome } from "../../../src/worktree/lifecycle.js";
import { type TempRepo, tempRepo } from "./git-repo.js";
import { type Harness, arrange, createHarness, noticesIn } from "../manager/setup.js";

let h: Harness;
let root: string;
let repo: string;

let temp: TempRepo;

beforeEach(async () => {
  h = await createHarness();
  temp = tempRepo("offshoot-wrap-up-");
  ({ root, repo } = temp);
});
afterEach(async () => {
  await h.cleanup();
  temp.remove();
});

test("a sibling that ends while a worktree task's run is being committed does not send that task's notice early", async () => {
  const parent = h.fake.addParent();
  const writer = await h.launch(parent, "writer");
  const other = await h.launch(parent, "other");
  // the writer works in a worktree and leaves an uncommitted change: its end commits it
  const info = await createWorktree({ projectDir: repo, projectID: "p1", taskId: writer.id, env: { XDG_DATA_HOME: path.join(root, "data") } });
  fs.writeFileSync(path.join(info.path, "a.txt"), "changed\n");
  arrange(writer).worktree = info;

  // the commit of the writer's run is slow (git under load): it waits until released
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let reached!: () => void;
  const committing = new Promise<void>((resolve) => (reached = resolve));
  const host = (h.manager as unknown as { runnerHost: { wrapUpRun: (task: BackgroundTask) => Promise<WrapUpOutcome> } }).runnerHost;
  const commit = host.wrapUpRun;
  host.wrapUpRun = async (task) => {
    if (task === writer) (reached(), await gate);
    return commit(task);
  };

  h.fake.answer(writer.sessionID, { text: "wrote it" });
  await committing;
  expect(writer.status).toBe("completed");
  h.fake.answer(other.sessionID, { text: "looked" });
  await h.manager.waitForEnd(other, 5_000);
  h.fake.goIdle(parent); // the parent's turn is over: what waited for it goes out
  await h.fake.called("session.prompt", 1); // the other's notice went out
  await new Promise((resolve) => setImmediate(resolve));
  expect(noticesIn(h.fake, parent).some((n) => n.includes(writer.id))).toBe(false);

  release();
  await h.fake.settle();
  const notice = noticesIn(h.fake, parent).find((n) => n.includes(writer.id));
  expect(notice).toContain("changes: 1 file changed, +1 -1 (a.txt)");
  expect(notice).not.toContain("none yet");
  expect(noticesIn(h.fake, parent).filter((n) => n.includes(writer.id))).toHaveLength(1);
});

// A resumed task is marked running before the queue decides whether its new run may start: it must
// not count itself. (With concurrency 1, a resume of the only task was queued, and nothing started it.)
import { expect, it } from "vitest";
import { toolContext, useHarness } from "./setup.js";

const h = useHarness({ options: { concurrency: 1 } });

it("concurrency 1: resuming the only task runs it at once; a second running task still makes a resume wait", async () => {
  const parent = h.fake.addParent();
  const task = await h.launch(parent, "only");
  h.fake.answer(task.sessionID, { text: "first" });
  await h.fake.settle();
  expect(task.status).toBe("completed");

  const out = h.text(await h.tools.task.execute({ description: "only", prompt: "again", resume: task.id }, toolContext(parent)));
  expect(out).toContain(`Background task ${task.id} resumed: the follow-up went to its child session ${task.sessionID}.`);
  expect(task.status).toBe("resumed");
  expect(h.fake.userTexts(task.sessionID)).toEqual(["do only", "again"]);
  h.fake.answer(task.sessionID, { text: "second" });
  await h.fake.settle();
  expect(task.status).toBe("completed");

  const other = await h.launch(parent, "other");
  expect(other.status).toBe("running");
  const queued = h.text(await h.tools.task.execute({ description: "only", prompt: "third", resume: task.id }, toolContext(parent)));
  expect(queued).toContain(`Background task ${task.id} resumed and queued`);
  expect(task.status).toBe("queued");
});

it("a resume that has to wait for a slot is published as queued, so the TUI does not show it running", async () => {
  const parent = h.fake.addParent();
  const task = await h.launch(parent, "first");
  h.fake.answer(task.sessionID, { text: "done" });
  await h.fake.settle();
  const other = await h.launch(parent, "other");
  expect(other.status).toBe("running");

  await h.tools.task.execute({ description: "first", prompt: "again", resume: task.id }, toolContext(parent));
  await h.fake.settle();
  expect(task.status).toBe("queued");
  // what the TUI reads: the child's metadata.offshoot
  expect((h.fake.sessions.get(task.sessionID)!.info as any).metadata.offshoot.status).toBe("queued");

  // the other task ends: the resumed run starts and says so
  h.fake.answer(other.sessionID, { text: "other done" });
  await h.fake.settle();
  expect(task.status).toBe("resumed");
  expect((h.fake.sessions.get(task.sessionID)!.info as any).metadata.offshoot.status).toBe("resumed");
});

it('background_list status: "running" lists running and resumed tasks, not queued ones (status: "queued" lists those)', async () => {
  const parent = h.fake.addParent();
  const running = await h.launch(parent, "first");
  const waiting = await h.launch(parent, "second");
  expect(waiting.status).toBe("queued");
  const listed = h.text(await h.tools.list.execute({ status: "running" }, toolContext(parent)));
  expect(listed).toContain(running.id);
  expect(listed).not.toContain(waiting.id);
  expect(h.text(await h.tools.list.execute({ status: "queued" }, toolContext(parent)))).toContain(waiting.id);
});

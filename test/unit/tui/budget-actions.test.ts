/**
 * /tasks on a task paused by its session's budget, TUI half (src/tui/dialog.ts, src/tui/request.ts):
 * "Raise the session's budget", "Continue" and "Cancel task" are offered (an interrupted task: Continue only; a
 * running one: neither); each writes its request into the child's metadata, the published state
 * kept, and the toast follows the server's answer to that request id. The answer also stays in the
 * task's view (a toast lasts seconds, and the next toast replaces it: a person can miss it).
 */
import { describe, expect, test } from "vitest";
import { TaskStore } from "../../../src/tui/model.js";
import { createTasksDialog } from "../../../src/tui/dialog.js";
import { Loader } from "../../../src/tui/loader.js";
import { REQUEST_KEY } from "../../../src/task-state.js";
import { childInfo, fakeApi, settle } from "./fake-api.js";

const NOW = 100_000;

function setup(status: string) {
  const f = fakeApi();
  const store = new TaskStore(() => NOW);
  const dialog = createTasksDialog({ api: f.api, store, loader: new Loader(f.api, store), now: () => NOW });
  const info = childInfo("ses_p1", { description: "Loop", status, startedAt: NOW - 5_000 });
  store.upsertSession(info);
  f.route = { name: "session", params: { sessionID: "ses_parent" } };
  f.replies["session.get"] = info;
  return { f, dialog, info };
}

const titles = (f: ReturnType<typeof fakeApi>) => f.select().options.map((o) => o.title);

describe("/tasks: a paused task", () => {
  test("paused: raise, continue and cancel; interrupted: continue; running: neither", () => {
    const paused = setup("paused");
    paused.dialog.openList();
    expect(paused.f.select().options.find((o) => o.title.includes("Loop"))).toMatchObject({ category: "Waiting for you" });
    paused.dialog.openTask("ses_p1");
    expect(titles(paused.f)).toEqual(expect.arrayContaining(["Raise the session's budget", "Continue", "Cancel task"]));
    const interrupted = setup("interrupted");
    interrupted.dialog.openTask("ses_p1");
    expect(titles(interrupted.f)).toContain("Continue");
    expect(titles(interrupted.f)).not.toContain("Raise the session's budget");
    const running = setup("running");
    running.dialog.openTask("ses_p1");
    expect(titles(running.f)).not.toContain("Continue");
    expect(titles(running.f)).not.toContain("Raise the session's budget");
  });

  test.each([
    ["Raise the session's budget", "raise-budget", "Budget raised", "Budget NOT raised: nope.", "✓ Budget raised", "✗ Budget NOT raised"],
    ["Continue", "continue", '"Loop" continues in place.', '"Loop" NOT continued: nope.', "✓ Continues in place", "✗ NOT continued"],
  ])(
    "%s: the request keeps the published state; the toast follows the server's answer, which stays in the task's view",
    async (title, kind, ok, refused, okRow, refusedRow) => {
      for (const answer of ["ok", "refused"] as const) {
        const { f, dialog, info } = setup("paused");
        dialog.openTask("ses_p1");
        f.choose(title);
        await settle();
        const update = f.calls.find((c) => c.method === "session.update")!.args as { metadata: Record<string, any> };
        expect(update.metadata.offshoot).toEqual(info.metadata.offshoot);
        expect(update.metadata[REQUEST_KEY]).toMatchObject({ kind, id: expect.any(String) });
        const id = update.metadata[REQUEST_KEY].id;
        // the request's own echo is no answer
        f.emit("session.updated", { sessionID: "ses_p1", info: { ...info, metadata: update.metadata } });
        await settle();
        expect(f.toasts).toHaveLength(0);
        // while it waits, the task's view says so
        expect(f.select().options[0]).toMatchObject({ title: expect.stringMatching(/^… /), value: "last-action" });
        const answered = answer === "ok" ? { id, message: "the server's words" } : { id, error: "nope" };
        f.emit("session.updated", { sessionID: "ses_p1", info: { ...info, metadata: { offshoot: { ...info.metadata.offshoot, answered } } } });
        await settle();
        expect(f.toasts.at(-1)?.message).toContain(answer === "ok" ? ok : refused);
        // the task's view stays open and shows the answer, with what the server said or why not
        expect(f.select().options[0]).toEqual(
          expect.objectContaining({ title: answer === "ok" ? okRow : refusedRow, description: answer === "ok" ? "the server's words" : "nope" }),
        );
        // it is still there when the task's view is opened again later, whatever toasts came since
        f.toasts.push({ variant: "warning", message: "Background budget reached" });
        dialog.openTask("ses_p1");
        expect(titles(f)).toContain(answer === "ok" ? okRow : refusedRow);
        // and a refusal shows in the task's line of the list too
        dialog.openList();
        const line = f.select().options.find((o) => o.title.includes("Loop"))!;
        if (answer === "ok") expect(line.description).not.toContain(okRow);
        else expect(line.description).toMatch(new RegExp(`^${refusedRow}: nope · waits for you`));
      }
    },
  );
});

/**
 * /tasks "Discard worktree and branch", TUI half (src/tui/dialog.ts, src/tui/discard.ts): offered
 * only for an ended worktree task whose worktree is still there; a confirm first; the request is
 * written into the child's metadata with the published state kept (OpenCode replaces metadata on
 * update); the toast follows the server's answer, never the request's own success.
 */
import { describe, expect, test } from "vitest";
import { TaskStore } from "../../../src/tui/model.js";
import { createTasksDialog } from "../../../src/tui/dialog.js";
import { Loader } from "../../../src/tui/loader.js";
import { REQUEST_KEY } from "../../../src/task-state.js";
import { childInfo, fakeApi, settle } from "./fake-api.js";

const NOW = 100_000;
const WT = { branch: "offshoot/bg_wt", directory: "/data/worktrees/p/bg_wt", changes: "1 file +1 -0" };

function withWorktree(info: ReturnType<typeof childInfo>, worktree: Record<string, unknown> = WT, answered?: unknown) {
  return { ...info, metadata: { offshoot: { ...info.metadata.offshoot, worktree, ...(answered ? { answered } : {}) } } };
}

function setup(status = "completed") {
  const f = fakeApi();
  const store = new TaskStore(() => NOW);
  const dialog = createTasksDialog({ api: f.api, store, loader: new Loader(f.api, store), now: () => NOW });
  const info = withWorktree(childInfo("ses_wt", { description: "Edit", status, completedAt: status === "completed" ? NOW : undefined }));
  store.upsertSession(info);
  f.route = { name: "session", params: { sessionID: "ses_parent" } };
  f.replies["session.get"] = info;
  return { f, store, dialog, info };
}

const confirmDialog = (f: ReturnType<typeof fakeApi>) => f.dialog() as unknown as { kind: string; title: string; message: string; onConfirm: () => void };

describe("/tasks: Discard worktree and branch", () => {
  test("a running worktree task has no discard action; an ended one has, and nothing is sent before the confirm", () => {
    const running = setup("running");
    running.dialog.openTask("ses_wt");
    expect(running.f.select().options.map((o) => o.title)).not.toContain("Discard worktree and branch");

    const { f, dialog } = setup();
    dialog.openTask("ses_wt");
    f.choose("Discard worktree and branch");
    const confirm = confirmDialog(f);
    expect(confirm.kind).toBe("confirm");
    expect(confirm.message).toContain(WT.directory);
    expect(confirm.message).toContain(`deletes the branch ${WT.branch}`);
    expect(confirm.message).toContain("with its commits");
    expect(f.calls.filter((c) => c.method === "session.update")).toHaveLength(0);
  });

  test("confirmed: the request keeps the published state; success is told only once the server shows it removed", async () => {
    const { f, dialog, info } = setup();
    dialog.openTask("ses_wt");
    f.choose("Discard worktree and branch");
    confirmDialog(f).onConfirm();
    await settle();
    const [update] = f.calls.filter((c) => c.method === "session.update");
    const args = update!.args as { sessionID: string; metadata: Record<string, any> };
    expect(args.sessionID).toBe("ses_wt");
    expect(args.metadata.offshoot).toEqual(info.metadata.offshoot);
    expect(args.metadata[REQUEST_KEY]).toMatchObject({ kind: "discard", id: expect.any(String) });
    expect(f.toasts.map((t) => t.message)).toEqual([`Discarding ${WT.branch}…`]);

    // the request's own echo changes nothing; the server's publish with the worktree removed does
    f.emit("session.updated", { sessionID: "ses_wt", info: { ...info, metadata: args.metadata } });
    await settle();
    expect(f.toasts).toHaveLength(1);
    f.emit("session.updated", { sessionID: "ses_wt", info: withWorktree(info, { ...WT, removed: "discarded" }, { id: args.metadata[REQUEST_KEY].id }) });
    await settle();
    expect(f.toasts.at(-1)).toMatchObject({ variant: "success", message: `Discarded ${WT.branch}: its worktree and branch were removed.` });
  });

  test("the server's refusal is shown as an error", async () => {
    const { f, dialog, info } = setup();
    dialog.openTask("ses_wt");
    f.choose("Discard worktree and branch");
    confirmDialog(f).onConfirm();
    await settle();
    const id = (f.calls.find((c) => c.method === "session.update")!.args as { metadata: Record<string, any> }).metadata[REQUEST_KEY].id;
    f.emit("session.updated", {
      sessionID: "ses_wt",
      info: withWorktree(info, WT, { id, error: "task bg_wt is still running: cancel it first, then discard it" }),
    });
    await settle();
    expect(f.toasts.at(-1)).toMatchObject({
      variant: "error",
      message: `${WT.branch} NOT discarded: task bg_wt is still running: cancel it first, then discard it.`,
    });
  });
});

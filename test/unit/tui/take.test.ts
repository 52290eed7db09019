/**
 * /tasks "Take changes", TUI half (src/tui/dialog.ts, src/tui/request.ts): offered only for an ended
 * worktree task with changes whose worktree is still there; a confirm first; the request (kind
 * "take") is written into the child's metadata with the published state kept; the toast follows the
 * server's answer (its message, or its error with the conflicting files), never the request's own
 * success. An overlap with another task shows in the branch line and the confirm.
 */
import { describe, expect, test } from "vitest";
import { TaskStore } from "../../../src/tui/model.js";
import { createTasksDialog } from "../../../src/tui/dialog.js";
import { Loader } from "../../../src/tui/loader.js";
import { REQUEST_KEY } from "../../../src/task-state.js";
import { childInfo, fakeApi, settle } from "./fake-api.js";

const NOW = 100_000;
const WT = { branch: "offshoot/bg_wt", directory: "/data/worktrees/p/bg_wt", changes: "1 file +1 -0", overlaps: "bg_other on a.txt" };

function withWorktree(info: ReturnType<typeof childInfo>, worktree: Record<string, unknown> = WT, answered?: unknown) {
  return { ...info, metadata: { offshoot: { ...info.metadata.offshoot, worktree, ...(answered ? { answered } : {}) } } };
}

function setup(status = "completed", worktree: Record<string, unknown> = WT) {
  const f = fakeApi();
  const store = new TaskStore(() => NOW);
  const dialog = createTasksDialog({ api: f.api, store, loader: new Loader(f.api, store), now: () => NOW });
  const info = withWorktree(childInfo("ses_wt", { description: "Edit", status, completedAt: status === "completed" ? NOW : undefined }), worktree);
  store.upsertSession(info);
  f.route = { name: "session", params: { sessionID: "ses_parent" } };
  f.replies["session.get"] = info;
  return { f, store, dialog, info };
}

const confirmDialog = (f: ReturnType<typeof fakeApi>) => f.dialog() as unknown as { kind: string; title: string; message: string; onConfirm: () => void };
const titles = (f: ReturnType<typeof fakeApi>) => f.select().options.map((o) => o.title);

describe("/tasks: Take changes", () => {
  test("offered for an ended task with changes only; the branch line names the overlap; nothing is sent before the confirm", () => {
    const running = setup("running");
    running.dialog.openTask("ses_wt");
    expect(titles(running.f)).not.toContain("Take changes");
    const unchanged = setup("completed", { branch: WT.branch, directory: WT.directory });
    unchanged.dialog.openTask("ses_wt");
    expect(titles(unchanged.f)).not.toContain("Take changes");

    const { f, dialog } = setup();
    dialog.openTask("ses_wt");
    expect(titles(f)).toContain(`⎇ ${WT.branch} 1 file +1 -0 · overlaps bg_other on a.txt`);
    f.choose("Take changes");
    const confirm = confirmDialog(f);
    expect(confirm.kind).toBe("confirm");
    expect(confirm.message).toContain("uncommitted changes");
    expect(confirm.message).toContain("It overlaps bg_other on a.txt.");
    expect(f.calls.filter((c) => c.method === "session.update")).toHaveLength(0);
  });

  test("confirmed: a take request keeping the published state; the toast is the server's message, or its error", async () => {
    const { f, dialog, info } = setup();
    dialog.openTask("ses_wt");
    f.choose("Take changes");
    confirmDialog(f).onConfirm();
    await settle();
    const update = f.calls.find((c) => c.method === "session.update")!;
    const args = update.args as { metadata: Record<string, any> };
    expect(args.metadata.offshoot).toEqual(info.metadata.offshoot);
    expect(args.metadata[REQUEST_KEY]).toMatchObject({ kind: "take", id: expect.any(String) });
    expect(f.toasts.map((t) => t.message)).toEqual([`Taking ${WT.branch}…`]);
    const message = "Took task bg_wt: 1 file changed in your working tree, not staged or committed; its worktree and branch offshoot/bg_wt were removed.";
    // the server publishes the task taken first, then the answer: the toast waits for the answer's message
    f.emit("session.updated", { sessionID: "ses_wt", info: withWorktree(info, { ...WT, removed: "taken" }) });
    await settle();
    expect(f.toasts).toHaveLength(1);
    f.emit("session.updated", { sessionID: "ses_wt", info: withWorktree(info, { ...WT, removed: "taken" }, { id: args.metadata[REQUEST_KEY].id, message }) });
    await settle();
    expect(f.toasts.at(-1)).toMatchObject({ variant: "success", message });

    const second = setup();
    second.dialog.openTask("ses_wt");
    second.f.choose("Take changes");
    confirmDialog(second.f).onConfirm();
    await settle();
    const id = (second.f.calls.find((c) => c.method === "session.update")!.args as { metadata: Record<string, any> }).metadata[REQUEST_KEY].id;
    const error = "task bg_wt's changes conflict with your working tree in 1 file. Nothing in your checkout changed.\n- a.txt";
    second.f.emit("session.updated", { sessionID: "ses_wt", info: withWorktree(second.info, WT, { id, error }) });
    await settle();
    expect(second.f.toasts.at(-1)).toMatchObject({ variant: "error", message: `${WT.branch} NOT taken: ${error}` });
  });
});

/**
 * The /tasks dialog: this session's tasks (running first). Per task: open its child session,
 * cancel it (running, queued or paused: the server half cancels it, request.ts), show its result,
 * take an ended worktree task's changes into the working tree or discard its worktree and branch
 * (each after a confirm; the server half does it: request.ts), continue a paused or interrupted task
 * in place, raise the session's background budget (a person's decision: the agent cannot),
 * answer its pending permission or question. Inside a child session the list is the parent's, with a
 * "back to the parent" entry on top.
 */
import { WORKTREE_TOASTS } from "./worktree-actions.txt.js";
import { readMessages, replyPermission } from "../host/tui-client.js";
import { currentSessionID, safe, safeAsync, type Api, type SdkResult } from "./host.js";
import { isOpen, isWorking, meaningOf } from "./meta.js";
import { instanceOf, type LastAction, type Task, type TaskStore } from "./model.js";
import type { RequestKind } from "../task-state.js";
import {
  statusIcon,
  clip,
  lastActionText,
  lastActionTitle,
  waitingPermission,
  questionText,
  receiptDetail,
  receiptHint,
  receiptText,
  runsAloneWarning,
  statusText,
  taskOptionDescription,
  taskOptionTitle,
  worktreeText,
} from "./format.js";
import { createQuestionDialog } from "./question-dialog.js";
import type { Loader } from "./loader.js";
import { sendToTask } from "./steer.js";
import { requestTaskAction } from "./request.js";

type Option = { title: string; value: string; description?: string; category?: string; onSelect?: () => void };

/** What /tasks says about the tools' names (names.ts). */
export interface ToolNamesNote {
  title: string;
  why: string;
  /** all of it (Enter on the line) */
  message: string;
}

export interface DialogDeps {
  api: Pick<Api, "client" | "ui" | "route" | "event">;
  store: TaskStore;
  loader: Pick<Loader, "ensure">;
  /** Read inside option getters so an open list follows the model (a solid signal in the TUI). */
  track?: () => void;
  now?: () => number;
  /** the tools' names, where they stepped aside beside another plugin (names.ts): the list's last line */
  names?: () => ToolNamesNote | undefined;
}

const RESULT_MAX_CHARS = 4000;

/** The words of one /tasks action: its short titles while under way and after (model.ts LastAction), and its toasts. */
interface ActionWords {
  pending: string;
  pendingToast?: string;
  done: string;
  doneToast: (message?: string) => string;
  refused: string;
  refusedToast: (reason: string) => string;
  unconfirmed: string;
  unconfirmedToast: (reason: string) => string;
}

const ACTION_VARIANT: Record<LastAction["state"], "info" | "success" | "warning" | "error"> = {
  pending: "info",
  done: "success",
  refused: "error",
  unconfirmed: "warning",
};

export function createTasksDialog(deps: DialogDeps) {
  const { api, store } = deps;
  const now = () => (deps.now ?? Date.now)();
  const track = () => deps.track?.();

  function show(render: () => unknown) {
    safe(() => api.ui.dialog.replace(render as never), undefined);
  }

  function select(props: { title: string; placeholder?: string; options: () => Option[] }) {
    show(() =>
      api.ui.DialogSelect({
        title: props.title,
        placeholder: props.placeholder,
        // The host calls each option's own onSelect (and a props.onSelect too, so none is given).
        get options() {
          return safe(() => {
            track();
            return props.options().map((o) => ({ ...o, onSelect: () => safe(() => o.onSelect?.(), undefined) }));
          }, []);
        },
      } as never),
    );
  }

  function toast(variant: "info" | "success" | "warning" | "error", message: string) {
    safe(() => api.ui.toast({ variant, message, duration: 4000 }), undefined);
  }

  /** Where the list is anchored: the session shown, or its parent when it is a task's child. */
  function anchor(): { parent?: string; inChild?: Task } {
    const sid = currentSessionID(api);
    if (!sid) return {};
    const own = store.task(sid);
    return own ? { parent: own.meta.parentSessionID, inChild: own } : { parent: sid };
  }

  function openList() {
    const { parent, inChild } = anchor();
    if (!parent) {
      toast("info", "Open a session to see its background tasks.");
      return;
    }
    void deps.loader.ensure(currentSessionID(api));
    select({
      title: "Background tasks",
      placeholder: "Filter tasks",
      options: () => {
        const out: Option[] = [];
        if (inChild)
          out.push({
            title: "↑ Back to the parent session",
            value: "parent",
            description: `this is the child of "${inChild.meta.description}"`,
            onSelect: () => navigate(parent),
          });
        const tasks = store.tasksOf(parent);
        for (const t of tasks)
          out.push({
            title: taskOptionTitle(t),
            value: t.sessionID,
            description: taskOptionDescription(t, now()),
            category: meaningOf(t.meta.status).section,
            onSelect: () => openTask(t.sessionID),
          });
        if (tasks.length === 0)
          out.push({
            title: "No background tasks in this session",
            value: "none",
            description: "your agent starts one with its background task tool",
            onSelect: () => api.ui.dialog.clear(),
          });
        const names = deps.names?.();
        if (names)
          out.push({
            title: names.title,
            value: "names",
            description: names.why,
            // the whole of it, which the list's line cuts
            onSelect: () => show(() => api.ui.DialogAlert({ title: "Tool names", message: names.message, onConfirm: () => openList() })),
          });
        return out;
      },
    });
  }

  const questions = createQuestionDialog({ api, store, select, show, toast, back: (sessionID) => openTask(sessionID), done: () => openList() });

  function navigate(sessionID: string) {
    safe(() => api.ui.dialog.clear(), undefined);
    safe(() => api.route.navigate("session", { sessionID }), undefined);
  }

  function openTask(sessionID: string) {
    const first = store.task(sessionID);
    if (!first) return openList();
    select({
      title: clip(taskOptionTitle(first), 60),
      options: () => {
        const t = store.task(sessionID);
        if (!t) return [{ title: "← Back to the list", value: "back", onSelect: openList }];
        const out: Option[] = [];
        const waiting = waitingPermission(t);
        if (waiting) out.push({ title: "Answer permission", value: "permission", description: waiting, onSelect: () => openPermission(sessionID) });
        const asks = questionText(t);
        if (asks) out.push({ title: "Answer question", value: "question", description: asks, onSelect: () => questions.open(sessionID) });
        // what became of the last action taken here: it stays (a toast lasts seconds, and the next one replaces it)
        const last = t.lastAction;
        if (last)
          out.push({
            title: lastActionTitle(last),
            value: "last-action",
            description: last.detail ?? "",
            onSelect: () => toast(ACTION_VARIANT[last.state], lastActionText(last)),
          });
        out.push({ title: "Open child session", value: "open", description: statusText(t, now()), onSelect: () => navigate(sessionID) });
        // a fork: what its first request read from the cache, and what that means
        const receipt = receiptText(t);
        if (receipt) {
          const detail = receiptDetail(t) ?? "measured once its first request finishes";
          out.push({
            title: receipt,
            value: "receipt",
            description: receiptHint(t),
            onSelect: () => toast(t.meta.receipt?.miss ? "warning" : "info", `${receipt}: ${detail}`),
          });
        }
        // a worktree task: its branch, what it changed, and which other tasks changed the same files
        const branch = worktreeText(t, false);
        if (branch)
          out.push({
            title: branch,
            value: "worktree",
            description: t.meta.worktree?.removed
              ? ""
              : [t.meta.worktree?.containment, "see the notice for the commands", t.meta.worktree?.freed ? "directory freed" : ""].filter(Boolean).join(" · "),
            onSelect: () =>
              toast(
                "info",
                `git diff shows ${t.meta.worktree!.branch}; "Take changes" (once it ended) applies them to your working tree; "Discard worktree and branch" removes it`,
              ),
          });
        // an ended worktree task's changes can be taken, or its worktree and branch discarded, here
        if (t.meta.worktree && !t.meta.worktree.removed && !isOpen(t.meta.status) && t.meta.worktree.changes)
          out.push({
            title: "Take changes",
            value: "take",
            description: "apply them to your working tree, uncommitted",
            onSelect: () => confirmTake(sessionID),
          });
        if (t.meta.worktree && !t.meta.worktree.removed && !isOpen(t.meta.status))
          out.push({
            title: "Discard worktree and branch",
            value: "discard",
            description: "deletes the branch's commits",
            onSelect: () => confirmDiscard(sessionID),
          });
        // the parent's budget is reached: a person raises it, then continues the paused tasks
        if (meaningOf(t.meta.status).waitsForPerson)
          out.push({
            title: "Raise the session's budget",
            value: "raise-budget",
            description: "one more budget for this session's background work",
            onSelect: () => void raiseBudget(t),
          });
        if (meaningOf(t.meta.status).continuable)
          out.push({
            title: "Continue",
            value: "continue",
            description: "goes on in place: same child session, its history kept",
            onSelect: () => void continueTask(t),
          });
        if (isWorking(t.meta.status))
          out.push({ title: "Send a message", value: "message", description: "the task reads it at its next step", onSelect: () => openMessage(sessionID) });
        // (the server half cancels it: an abort alone would not end a queued or a paused task)
        if (isOpen(t.meta.status))
          out.push({ title: "Cancel task", value: "cancel", description: "stop it: it ends as cancelled", onSelect: () => void cancel(t) });
        else out.push({ title: "Show result", value: "result", description: t.meta.status, onSelect: () => void showResult(t) });
        out.push({ title: "← Back to the list", value: "back", onSelect: openList });
        return out;
      },
    });
  }

  function openMessage(sessionID: string) {
    const t = store.task(sessionID);
    if (!t) return openList();
    show(() =>
      api.ui.DialogPrompt({
        title: clip(`Message to "${t.meta.description}"`, 60),
        placeholder: "What the task should know or do next",
        onConfirm: (value: string) => void sendMessage(t, value),
        onCancel: () => openTask(sessionID),
      }),
    );
  }

  async function sendMessage(t: Task, value: string) {
    const text = value.trim();
    if (!text) return toast("warning", "The message is empty; nothing was sent.");
    safe(() => api.ui.dialog.clear(), undefined);
    const result = await sendToTask(api, t.sessionID, text, instanceOf(t));
    if (result.ok) toast("success", `Message delivered to "${t.meta.description}"; it reads it at its next step.`);
    else if (result.unconfirmed) toast("warning", `Message to "${t.meta.description}" not confirmed: ${result.reason}.`);
    else toast("error", `Message NOT delivered to "${t.meta.description}": ${result.reason}.`);
  }

  /**
   * A request to the server half about `t` (request.ts). Its outcome is kept on the task and shown
   * in the task's view (and, unless it worked, in its line of the list), where it stays; the toast
   * says it too, but lasts seconds and the next toast (the server half's own, any other) replaces it.
   */
  async function act(t: Task, kind: RequestKind, words: ActionWords): Promise<void> {
    store.actionOutcome(t.sessionID, { state: "pending", title: words.pending });
    if (words.pendingToast) toast("info", words.pendingToast);
    // (a freed worktree's child may have no instance that brings its events to the server half: through its parent)
    const result = await requestTaskAction(api, t.sessionID, kind, t.meta.worktree?.freed ? t.meta.parentSessionID : undefined);
    const outcome: LastAction = result.ok
      ? { state: "done", title: words.done, ...(result.message ? { detail: result.message } : {}) }
      : { state: result.unconfirmed ? "unconfirmed" : "refused", title: result.unconfirmed ? words.unconfirmed : words.refused, detail: result.reason };
    store.actionOutcome(t.sessionID, outcome);
    if (result.ok) toast("success", words.doneToast(result.message));
    else if (result.unconfirmed) toast("warning", words.unconfirmedToast(result.reason));
    else toast("error", words.refusedToast(result.reason));
  }

  async function cancel(t: Task) {
    const d = t.meta.description;
    openList(); // (it follows the task to Finished)
    await act(t, "cancel", {
      pending: "Cancelling",
      pendingToast: `Cancelling "${d}"…`,
      done: "Cancelled",
      doneToast: () => `Cancelled "${d}".`,
      refused: "NOT cancelled",
      refusedToast: (reason) => `"${d}" NOT cancelled: ${reason}.`,
      unconfirmed: "Cancel not confirmed",
      unconfirmedToast: (reason) => `Cancel of "${d}" not confirmed: ${reason}.`,
    });
  }

  async function raiseBudget(t: Task) {
    openTask(t.sessionID); // (the answer shows there, next to "Continue")
    await act(t, "raise-budget", {
      pending: "Raising the session's budget",
      done: "Budget raised",
      doneToast: () => `Budget raised for this session's background work. "Continue" a paused task to go on.`,
      refused: "Budget NOT raised",
      refusedToast: (reason) => `Budget NOT raised: ${reason}.`,
      unconfirmed: "Raising the budget not confirmed",
      unconfirmedToast: (reason) => `Raising the budget not confirmed: ${reason}.`,
    });
  }

  async function continueTask(t: Task) {
    const d = t.meta.description;
    openTask(t.sessionID); // (the answer shows there, and the task's status with it)
    await act(t, "continue", {
      pending: "Continuing",
      done: "Continues in place",
      doneToast: () => `"${d}" continues in place.`,
      refused: "NOT continued",
      refusedToast: (reason) => `"${d}" NOT continued: ${reason}.`,
      unconfirmed: "Continue not confirmed",
      unconfirmedToast: (reason) => `Continue of "${d}" not confirmed: ${reason}.`,
    });
  }

  function confirmDiscard(sessionID: string) {
    const t = store.task(sessionID);
    const wt = t?.meta.worktree;
    if (!t || !wt || wt.removed || isOpen(t.meta.status)) return openTask(sessionID);
    show(() =>
      api.ui.DialogConfirm({
        title: clip(`Discard "${t.meta.description}"?`, 60),
        message: wt.freed
          ? `This deletes the branch ${wt.branch}${wt.changes ? ` (${wt.changes})` : ""} with its commits (its worktree directory was freed already). Changes you did not take are lost.`
          : `This removes the worktree ${wt.directory} and deletes the branch ${wt.branch}${wt.changes ? ` (${wt.changes})` : ""} with its commits. Changes you did not take are lost.`,
        // (the host clears the dialog after either answer, so a cancel simply closes it)
        onConfirm: () => void discard(t),
      }),
    );
  }

  function confirmTake(sessionID: string) {
    const t = store.task(sessionID);
    const wt = t?.meta.worktree;
    if (!t || !wt || wt.removed || isOpen(t.meta.status)) return openTask(sessionID);
    show(() =>
      api.ui.DialogConfirm({
        title: clip(`Take "${t.meta.description}"?`, 60),
        message: `${wt.runs?.length ? `${runsAloneWarning(wt.runs)}\n\n` : ""}This applies the changes on ${wt.branch}${wt.changes ? ` (${wt.changes})` : ""} to your working tree as uncommitted changes (a 3-way merge; yours stay), then removes its ${wt.freed ? "branch (its worktree directory was freed already)" : "worktree and branch"}. On a conflict nothing in your checkout changes.${wt.overlaps ? ` It overlaps ${wt.overlaps}.` : ""}`,
        onConfirm: () => void take(t),
      }),
    );
  }

  async function take(t: Task) {
    safe(() => api.ui.dialog.clear(), undefined);
    const branch = t.meta.worktree?.branch;
    await act(t, "take", {
      pending: "Taking its changes",
      pendingToast: `Taking ${branch}…`,
      done: "Changes taken",
      doneToast: (message) => message ?? WORKTREE_TOASTS.took(branch),
      refused: "NOT taken",
      refusedToast: (reason) => WORKTREE_TOASTS.notTaken(branch, reason),
      unconfirmed: "Take not confirmed",
      unconfirmedToast: (reason) => `Take of ${branch} not confirmed: ${reason}.`,
    });
  }

  async function discard(t: Task) {
    safe(() => api.ui.dialog.clear(), undefined);
    const branch = t.meta.worktree?.branch;
    await act(t, "discard", {
      pending: "Discarding its worktree and branch",
      pendingToast: `Discarding ${branch}…`,
      done: "Discarded",
      doneToast: () => WORKTREE_TOASTS.discarded(branch, Boolean(t.meta.worktree?.freed)),
      refused: "NOT discarded",
      refusedToast: (reason) => WORKTREE_TOASTS.notDiscarded(branch, reason),
      unconfirmed: "Discard not confirmed",
      unconfirmedToast: (reason) => `Discard of ${branch} not confirmed: ${reason}.`,
    });
  }

  function openPermission(sessionID: string) {
    const t = store.task(sessionID);
    const p = t?.permission;
    if (!t || !p) return openTask(sessionID);
    const reply = (r: "once" | "always" | "reject") => async () => {
      // a task on a remote waits there: the server half sends the reply there (this TUI cannot reach that server)
      const res = t.meta.remote
        ? await requestTaskAction(api, sessionID, "permission", undefined, { requestID: p.id, reply: r }).then((o) => (o.ok ? {} : { error: o.reason }))
        : await safeAsync(async () => (await replyPermission(api.client, p.id, r, instanceOf(t))) as SdkResult<unknown>, {
            error: "threw",
          } as SdkResult<unknown>);
      if (res.error) toast("error", `Could not answer the permission of "${t.meta.description}".`);
      else {
        store.permissionReplied({ requestID: p.id, sessionID });
        toast("success", `${r === "reject" ? "Rejected" : "Allowed"} ${waitingPermission(t) ?? p.permission} for "${t.meta.description}".`);
      }
      openList();
    };
    select({
      title: clip(`"${t.meta.description}" asks: ${waitingPermission(t) ?? p.permission}`, 70),
      options: () => [
        { title: "Allow once", value: "once", onSelect: () => void reply("once")() },
        { title: "Allow always", value: "always", description: p.patterns.join(", "), onSelect: () => void reply("always")() },
        { title: "Reject", value: "reject", onSelect: () => void reply("reject")() },
        { title: "← Back", value: "back", onSelect: () => openTask(sessionID) },
      ],
    });
  }

  async function showResult(t: Task) {
    const text = await resultText(t);
    show(() =>
      api.ui.DialogAlert({ title: clip(`${statusIcon(t.meta.status)} ${t.meta.description}`, 60), message: text, onConfirm: () => openTask(t.sessionID) }),
    );
  }

  async function resultText(t: Task): Promise<string> {
    const res = await safeAsync(
      async () =>
        (await readMessages(api.client, t.sessionID)) as SdkResult<
          Array<{ info?: { role?: string }; parts?: Array<{ type?: string; text?: string; synthetic?: boolean }> }>
        >,
      {} as SdkResult<never[]>,
    );
    const messages = Array.isArray(res.data) ? res.data : [];
    for (let i = messages.length - 1; i >= 0; i--) {
      const m = messages[i]!;
      if (m.info?.role !== "assistant") continue;
      const text = (m.parts ?? [])
        .filter((p) => p.type === "text" && !p.synthetic && typeof p.text === "string")
        .map((p) => p.text!.trim())
        .filter(Boolean)
        .join("\n\n");
      if (text) {
        const head = t.meta.error ? `Error: ${t.meta.error}\n\n` : "";
        return clip(head + text, RESULT_MAX_CHARS);
      }
    }
    if (t.meta.error) return `Error: ${t.meta.error}`;
    return `No answer text (${t.meta.status}).`;
  }

  return { openList, openTask, openMessage, openPermission, openQuestion: questions.open, showResult, resultText };
}

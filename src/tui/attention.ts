/**
 * Tell the person when a task ends or needs them: an OS notification / sound through
 * `api.attention` (when the terminal is not focused), and for a permission or a question a toast
 * that names the task (the host's own prompts do not say which task asks).
 */
import { safe, safeAsync, type Api } from "./host.js";
import { statusIcon, waitingPermission, questionText } from "./format.js";
import type { Notice, TaskStore } from "./model.js";
import { meaningOf } from "../task-state.js";

export function attachAttention(api: Pick<Api, "attention" | "ui">, store: TaskStore): () => void {
  return store.onNotice((n: Notice) => {
    const d = n.task.meta.description;
    if (n.kind === "ended") {
      const s = n.task.meta.status;
      void safeAsync(
        () =>
          api.attention.notify({
            title: "Background task",
            message: `${statusIcon(s)} ${d}: ${s}`,
            notification: { when: "blurred" },
            sound: { name: meaningOf(s).end === "success" ? "subagent_done" : "error", when: "blurred" },
          }),
        undefined,
      );
      return;
    }
    if (n.kind === "question") {
      const asks = questionText(n.task) ?? `"${n.question.questions[0]?.question ?? "a question"}"`;
      safe(
        () => api.ui.toast({ variant: "warning", title: "Background task asks", message: `"${d}" asks ${asks}. Answer it from /tasks.`, duration: 8000 }),
        undefined,
      );
      void safeAsync(
        () =>
          api.attention.notify({
            title: "Background task asks",
            message: `"${d}" asks ${asks}`,
            notification: { when: "blurred" },
            sound: { name: "question", when: "always" },
          }),
        undefined,
      );
      return;
    }
    const what = waitingPermission(n.task) ?? n.permission.permission;
    safe(
      () => api.ui.toast({ variant: "warning", title: "Background task waits", message: `"${d}" asks for ${what}. Answer it from /tasks.`, duration: 8000 }),
      undefined,
    );
    void safeAsync(
      () =>
        api.attention.notify({
          title: "Background task waits",
          message: `"${d}" asks for ${what}`,
          notification: { when: "blurred" },
          sound: { name: "permission", when: "always" },
        }),
      undefined,
    );
  });
}

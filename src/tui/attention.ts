/**
 * Tell the person when a task ends or needs them: an OS notification / sound through
 * `api.attention` (when the terminal is not focused), and for a permission wait a toast that
 * names the task (the host's own permission prompt does not say which task asks).
 */
import { safe, safeAsync, type Api } from "./host.js";
import { statusIcon, permissionText } from "./format.js";
import type { Notice, TaskStore } from "./model.js";

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
            sound: { name: s === "completed" ? "subagent_done" : "error", when: "blurred" },
          }),
        undefined,
      );
      return;
    }
    const what = permissionText(n.task) ?? n.permission.permission;
    safe(() => api.ui.toast({ variant: "warning", title: "Background task waits", message: `"${d}" asks for ${what}. Answer it from /tasks.`, duration: 8000 }), undefined);
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

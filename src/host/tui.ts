// The server half's calls to the TUI (the v1 client's `tui` routes).

import type { Client } from "./types.js";

export type Toast = { title: string; message: string; variant: "info" | "success" | "warning" | "error"; duration: number };

/** Best effort: a failure is ignored (a toast is never worth an error). */
export function showToast(client: Client, toast: Toast): void {
  client.tui.showToast({ body: toast }).catch(() => {});
}

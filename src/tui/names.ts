/**
 * The TUI says, once per TUI process, that this plugin's tools stepped aside to names of their own
 * beside another plugin that registers the design's (see src/coexist/tool-names.ts, where the server
 * half decides it and logs it), and /tasks keeps saying it on its last line. It reads what the instance offers (its tool ids and its plugin list)
 * at start and after each restart of an instance (the server half restarts it once to offer the new
 * names), so the toast comes whether the TUI attached before or after that restart.
 */
import { readConfig, readToolIds } from "../host/tui-client.js";
import { OUR_PACKAGE, otherPlugins, takenNames } from "../coexist/plugins.js";
import { NAMES_TEXT } from "../coexist/tool-names.txt.js";
import { OWN_TOOL_NAMES, TOOL_KEYS } from "../tool-names.js";
import { safe, safeAsync, type Api } from "./host.js";
import type { ToolNamesNote } from "./dialog.js";

/** How long after the TUI's start, or an instance's restart, the TUI reads its tools (the restart's own events come first). */
const AFTER_RESTART_MS = 1000;

/** Watches; `onNote` gets what /tasks says once ours stepped aside (the toast may be replaced by the next one). */
export function watchToolNames(api: Pick<Api, "client" | "event" | "ui">, onNote: (note: ToolNamesNote) => void): () => void {
  let said = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const check = async () => {
    if (said) return;
    const ids = (await safeAsync(async () => (await readToolIds(api.client)) as { data?: unknown }, {})).data;
    if (!Array.isArray(ids) || !ids.includes(OWN_TOOL_NAMES.task)) return;
    const taken = takenNames(ids as string[], OWN_TOOL_NAMES);
    if (taken.length === 0) return;
    const config = (await safeAsync(async () => (await readConfig(api.client)) as { data?: { plugin?: unknown[] } }, {})).data;
    if (said) return;
    said = true;
    const plugins = otherPlugins(config?.plugin ?? [], OUR_PACKAGE);
    const ours = TOOL_KEYS.map((key) => OWN_TOOL_NAMES[key]);
    const message = NAMES_TEXT.stepAsideToast(taken, plugins, ours);
    onNote({ title: NAMES_TEXT.listTitle, why: NAMES_TEXT.listWhy(plugins), message: NAMES_TEXT.listMessage(taken, plugins, ours) });
    safe(() => api.ui.toast({ variant: "warning", title: "Background tasks", message, duration: 10_000 }), undefined);
  };
  const later = () => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => void check(), AFTER_RESTART_MS);
  };
  // (not at once: a toast shown while the TUI is still mounting its screens is lost)
  later();
  const off = safe(
    () => (api.event.on as (t: string, h: () => void) => () => void)("server.instance.disposed", later),
    () => {},
  );
  return () => {
    if (timer) clearTimeout(timer);
    safe(off, undefined);
  };
}

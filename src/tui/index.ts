/**
 * The TUI half of opencode-offshoot (`opencode-offshoot/tui`, listed in `tui.json`).
 * Shows this session's background tasks in the sidebar and next to the prompt, adds `/tasks`
 * (palette entry, `<leader>o`), and notifies when a task ends or needs the user. It only
 * reads what the server half writes into each child session's `metadata.offshoot`; without the
 * server half there are no such sessions and nothing is shown.
 */
import type { TuiPlugin, TuiPluginModule } from "../host/tui-client.js";
import { createSignal } from "solid-js";
import { TaskStore } from "./model.js";
import { Loader } from "./loader.js";
import { subscribeEvents } from "./events.js";
import { attachAttention } from "./attention.js";
import { watchToolNames } from "./names.js";
import { type ToolNamesNote, createTasksDialog } from "./dialog.js";
import { keyText, registerCommands } from "./commands.js";
import { registerSidebar } from "./sidebar.js";
import { registerBadge } from "./badge.js";
import { currentSessionID, safe, type Api } from "./host.js";
import type { ViewContext } from "./view-context.js";

export const TICK_MS = 1000;

const tui: TuiPlugin = async (api, options) => {
  safe(() => setup(api as unknown as Api, (options ?? {}) as Record<string, unknown>), undefined);
};

function setup(api: Api, options: Record<string, unknown>) {
  const store = new TaskStore();
  const loader = new Loader(api, store);
  const [version, setVersion] = createSignal(0);
  const [now, setNow] = createSignal(Date.now());
  const disposers: Array<() => void> = [];

  disposers.push(store.subscribe(() => setVersion((v) => v + 1)));
  disposers.push(...subscribeEvents(api, store));
  disposers.push(attachAttention(api, store));
  // beside a plugin that registers our design's names, says once that ours stepped aside, and /tasks keeps it (names.ts)
  const [names, setNames] = createSignal<ToolNamesNote | undefined>(undefined);
  disposers.push(watchToolNames(api, setNames));
  // The elapsed times move once a second (only the lines reading `now` are redrawn).
  const timer = setInterval(() => setNow(Date.now()), TICK_MS);
  disposers.push(() => clearInterval(timer));

  const ctx: ViewContext = {
    store,
    version,
    now,
    ensureLoaded: (sid) => void loader.ensure(sid),
    currentSessionID: () => currentSessionID(api),
  };
  // The open list follows the model (the host keeps the highlighted entry by value).
  const dialog = createTasksDialog({ api, store, loader, now: () => now(), track: () => void (version(), now(), names()), names });
  const keybind = typeof options.keybind === "string" ? options.keybind : undefined;
  disposers.push(registerCommands(api, dialog, keybind));
  registerSidebar(api, ctx);
  registerBadge(api, ctx, keyText(api, keybind));

  safe(
    () =>
      api.lifecycle.onDispose(() => {
        for (const d of disposers) safe(d, undefined);
      }),
    () => {},
  );
}

const plugin: TuiPluginModule & { id: string } = { id: "offshoot", tui };
export default plugin;

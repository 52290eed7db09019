/** `/tasks`: a palette entry, a slash command and a key binding (default `<leader>o`). */
import { safe, type Api } from "./host.js";

export const TASKS_COMMAND = "offshoot.tasks";
export const TASKS_SLASH = "tasks";
export const DEFAULT_KEYBIND = "<leader>o";

export function registerCommands(api: Pick<Api, "keymap">, dialog: { openList: () => void }, keybind?: string): () => void {
  const key = keybind ?? DEFAULT_KEYBIND;
  return safe(
    () =>
      api.keymap.registerLayer({
        commands: [
          {
            name: TASKS_COMMAND,
            title: "Background tasks",
            desc: "List this session's background tasks: open, send a message, cancel, answer a permission",
            category: "Session",
            namespace: "palette",
            slashName: TASKS_SLASH,
            run() {
              safe(() => dialog.openList(), undefined);
            },
          },
        ],
        bindings: key === "none" ? [] : [{ key, cmd: TASKS_COMMAND, desc: "Background tasks" }],
      } as never) as unknown as () => void,
    () => {},
  );
}

/** How the /tasks key reads on screen (`ctrl+x o`), through the host's own formatter. */
export function keyText(api: Pick<Api, "keys">, keybind?: string): string {
  const key = keybind ?? DEFAULT_KEYBIND;
  if (key === "none") return "ctrl+p"; // no key: the palette lists "Background tasks"
  const formatted = safe(() => api.keys.formatBindings([{ key, cmd: TASKS_COMMAND } as never]), undefined);
  return typeof formatted === "string" && formatted.trim() ? formatted.trim() : key.replace("<leader>", "ctrl+x ");
}

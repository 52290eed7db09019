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
            desc: "List this session's background tasks: open, cancel, answer a permission",
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

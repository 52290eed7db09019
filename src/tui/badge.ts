/**
 * The badge next to the prompt (`session_prompt_right`): `⧗ 2 bg tasks` while tasks run (with
 * `⚠ 1 waiting` when one waits for a permission); inside a task's child session it says which
 * task this is. And one line under the app (`app_bottom`) on terminals too narrow for the
 * sidebar (120 columns or less) or with the sidebar hidden (ctrl+x b), naming the running tasks; inside a task's child session
 * (no sidebar, no prompt there) that line names the task and the /tasks key.
 */
import { insert, useTerminalDimensions } from "@opentui/solid";
import { createMemo } from "solid-js";
import { safe, type Api } from "./host.js";
import { badgeText, childBadgeText, childLine, isWaiting, narrowLine, type Tone } from "./format.js";
import { box, textLine } from "./view-kit.js";
import type { ViewContext } from "./view-context.js";

/** The sidebar is shown only above this width (host rule in 1.18.33). */
export const SIDEBAR_MIN_WIDTH = 121;

export function registerBadge(api: Pick<Api, "slots" | "theme" | "renderer" | "keys" | "kv">, ctx: ViewContext, keyText: string) {
  safe(
    () =>
      api.slots.register({
        order: 150,
        slots: {
          session_prompt_right(_ctx: unknown, props: { session_id: string }) {
            return safe(() => badge(api, ctx, () => props.session_id), null);
          },
          app_bottom() {
            return safe(() => bottomLine(api, ctx, keyText), null);
          },
        },
      } as never),
    "",
  );
}

function badge(api: Pick<Api, "theme">, ctx: ViewContext, sessionID: () => string) {
  const view = createMemo<{ text: string; tone: Tone }>(() =>
    safe(
      () => {
        ctx.version();
        const sid = sessionID();
        ctx.ensureLoaded(sid);
        const own = ctx.store.task(sid);
        if (own) return { text: childBadgeText(own, ctx.now()), tone: isWaiting(own) ? "warning" : "muted" };
        const tasks = ctx.store.tasksOf(sid);
        return { text: badgeText(tasks), tone: tasks.some(isWaiting) ? "warning" : "accent" };
      },
      { text: "", tone: "muted" },
    ),
  );
  const root = box({ flexShrink: 0 });
  insert(root, () =>
    view().text
      ? textLine(
          api,
          () => view().text,
          () => view().tone,
        )
      : null,
  );
  return root;
}

function bottomLine(api: Pick<Api, "theme" | "renderer" | "kv">, ctx: ViewContext, keyText: string) {
  const dims = safe(() => useTerminalDimensions(), undefined);
  const width = () => safe(() => (dims ? dims().width : api.renderer.width), 200);
  const text = createMemo(() =>
    safe(() => {
      ctx.version();
      const w = width();
      const sid = ctx.currentSessionID();
      if (!sid) return "";
      ctx.ensureLoaded(sid);
      const own = ctx.store.task(sid);
      if (own) return childLine(own, ctx.now(), keyText, w - 4);
      // The host shows the sidebar above 120 columns unless the user hid it (ctrl+x b), which
      // it keeps as "hide" under the "sidebar" key of the kv store it shares with plugins.
      const sidebarShown = w >= SIDEBAR_MIN_WIDTH && safe(() => api.kv.get("sidebar", "auto"), "auto") !== "hide";
      if (sidebarShown) return "";
      return narrowLine(ctx.store.tasksOf(sid), ctx.now(), w - 4);
    }, ""),
  );
  const root = box({ flexShrink: 0, paddingLeft: 2, paddingRight: 2 });
  insert(root, () => (text() ? textLine(api, text, () => "muted") : null));
  return root;
}

/**
 * The "Background tasks" section of the session sidebar (`sidebar_content`): what the session's
 * tasks used together, and the session's own cost plus its tasks' in one line; each active task
 * with its status, elapsed time, last tool, usage, and a marker while it waits for a
 * permission; finished tasks below, folded (click the fold line). Nothing when the session has
 * no tasks. The host hides the sidebar in child sessions and on terminals of 120 columns or less.
 */
import { createComponent, insert } from "@opentui/solid";
import { Index, createMemo, createSignal } from "solid-js";
import { safe, sessionOwnCost, type Api } from "./host.js";
import { sidebarLines, type Line } from "./format.js";
import { box, heading, textLine } from "./view-kit.js";
import type { ViewContext } from "./view-context.js";

export const SIDEBAR_TITLE = "Background tasks";

export function registerSidebar(api: Pick<Api, "slots" | "theme" | "state">, ctx: ViewContext) {
  safe(
    () =>
      api.slots.register({
        order: 150,
        slots: {
          sidebar_content(_ctx: unknown, props: { session_id: string }) {
            return safe(() => section(api, ctx, () => props.session_id), null);
          },
        },
      } as never),
    "",
  );
}

function section(api: Pick<Api, "theme" | "state">, ctx: ViewContext, sessionID: () => string) {
  const [expanded, setExpanded] = createSignal(false);
  // recomputed only when the session's own messages change (not on every task event)
  const ownCost = createMemo(() => sessionOwnCost(api, sessionID()));
  const lines = createMemo<Line[]>(() =>
    safe(() => {
      ctx.version();
      const sid = sessionID();
      ctx.ensureLoaded(sid);
      return sidebarLines(ctx.store.tasksOf(sid), ctx.now(), { expanded: expanded(), ownCost: ownCost() });
    }, []),
  );
  const root = box();
  insert(root, () => {
    if (lines().length === 0) return null;
    const inner = box();
    insert(inner, heading(api, SIDEBAR_TITLE));
    insert(
      inner,
      createComponent(Index, {
        get each() {
          return lines();
        },
        children: (line: () => Line) =>
          textLine(
            api,
            () => line().text,
            () => line().tone,
            () => line().fold && setExpanded((v) => !v),
          ),
      }),
    );
    return inner;
  });
  return root;
}

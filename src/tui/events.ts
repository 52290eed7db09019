/** Live updates: the server's events, fed into the task model. */
import { safe, type Api } from "./host.js";
import type { TaskStore } from "./model.js";

type Props = Record<string, unknown>;

export function subscribeEvents(api: Pick<Api, "event">, store: TaskStore): Array<() => void> {
  const on = (type: string, fn: (p: Props) => void) =>
    safe(
      () =>
        (api.event.on as (t: string, h: (e: { properties?: Props }) => void) => () => void)(type, (e) => {
          safe(() => fn(e?.properties ?? {}), undefined);
        }),
      () => {},
    );
  return [
    on("session.created", (p) => store.upsertSession(p.info as never)),
    on("session.updated", (p) => store.upsertSession(p.info as never)),
    on("session.deleted", (p) => store.removeSession((p.info as { id?: unknown } | undefined)?.id ?? p.sessionID)),
    on("message.part.updated", (p) => store.partUpdated(p.part, typeof p.time === "number" ? p.time : undefined)),
    on("message.updated", (p) => store.messageUpdated(p.info)),
    on("permission.asked", (p) => store.permissionAsked(p)),
    on("permission.replied", (p) => store.permissionReplied(p)),
    on("question.asked", (p) => store.questionAsked(p)),
    on("question.replied", (p) => store.questionAnswered(p)),
    on("question.rejected", (p) => store.questionAnswered(p)),
  ];
}

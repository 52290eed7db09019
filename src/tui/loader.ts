/**
 * Reads what the events cannot give a TUI that starts late: the tasks of a session
 * (`session.children`), the session itself when it is a task's child (to find its parent and
 * siblings), the child's messages once (last tool and usage), and pending permissions and questions.
 * Each session is read at most once; failures leave the store as it was.
 */
import { listPermissions, listQuestions, readChildren, readMessages, readSession } from "../host/tui-client.js";
import { safeAsync, type Api, type SdkResult } from "./host.js";
import type { TaskStore } from "./model.js";

interface MessageWithParts {
  info?: unknown;
  parts?: unknown[];
}

export class Loader {
  private loaded = new Map<string, Promise<void>>();
  private permissionsRead?: Promise<void>;

  constructor(
    private api: Pick<Api, "client">,
    private store: TaskStore,
  ) {}

  /** Read the tasks around `sessionID` (once). Never rejects. */
  ensure(sessionID: string | undefined): Promise<void> {
    if (!sessionID) return Promise.resolve();
    let p = this.loaded.get(sessionID);
    if (!p) {
      p = this.load(sessionID);
      this.loaded.set(sessionID, p);
    }
    return p;
  }

  private async load(sessionID: string): Promise<void> {
    const client = this.api.client;
    const self = await safeAsync(async () => (await readSession(client, sessionID)) as SdkResult<unknown>, {} as SdkResult<unknown>);
    if (self.data && this.store.upsertSession(self.data as { id: string }, { quiet: true })) {
      const parent = this.store.task(sessionID)?.meta.parentSessionID;
      if (parent) await this.ensure(parent);
    }
    const children = await safeAsync(async () => (await readChildren(client, sessionID)) as SdkResult<unknown[]>, {} as SdkResult<unknown[]>);
    const ids: string[] = [];
    for (const c of Array.isArray(children.data) ? children.data : []) {
      if (this.store.upsertSession(c as { id: string }, { quiet: true })) ids.push((c as { id: string }).id);
    }
    await this.readPermissions();
    for (const id of ids) if (!this.store.hasActivity(id)) await this.readActivity(id);
  }

  /** Feed the child's stored messages through the same paths as live events. */
  async readActivity(sessionID: string): Promise<void> {
    const res = await safeAsync(
      async () => (await readMessages(this.api.client, sessionID)) as SdkResult<MessageWithParts[]>,
      {} as SdkResult<MessageWithParts[]>,
    );
    for (const m of Array.isArray(res.data) ? res.data : []) {
      this.store.messageUpdated(m?.info);
      for (const part of Array.isArray(m?.parts) ? m.parts : []) this.store.partUpdated(part);
    }
  }

  private readPermissions(): Promise<void> {
    this.permissionsRead ??= (async () => {
      const res = await safeAsync(async () => (await listPermissions(this.api.client)) as SdkResult<unknown[]>, {} as SdkResult<unknown[]>);
      for (const p of Array.isArray(res.data) ? res.data : []) this.store.permissionAsked(p, { quiet: true });
      const questions = await safeAsync(async () => (await listQuestions(this.api.client)) as SdkResult<unknown[]>, {} as SdkResult<unknown[]>);
      for (const q of Array.isArray(questions.data) ? questions.data : []) this.store.questionAsked(q, { quiet: true });
    })();
    return this.permissionsRead;
  }
}

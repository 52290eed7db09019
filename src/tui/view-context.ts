import type { TaskStore } from "./model.js";

/** What the views read: the model, a change counter and a clock (both Solid signals in the TUI). */
export interface ViewContext {
  store: TaskStore;
  version: () => number;
  now: () => number;
  ensureLoaded: (sessionID: string | undefined) => void;
  currentSessionID: () => string | undefined;
}

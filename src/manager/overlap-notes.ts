// Each worktree task's overlap line as last published ("bg_x on src/a.ts"), so every publish of the
// task's state (publish.ts) carries it and overlaps.ts republishes only the tasks whose line
// changed. In memory: recomputed from the cached changed paths whenever a run settles or a task's
// changes are taken or discarded.

import type { BackgroundTask } from "./types.js";

const notes = new WeakMap<BackgroundTask, string>();

export function setOverlapNote(task: BackgroundTask, text: string): boolean {
  if ((notes.get(task) ?? "") === text) return false;
  notes.set(task, text);
  return true;
}

export function overlapNoteOf(task: BackgroundTask): string {
  return notes.get(task) ?? "";
}

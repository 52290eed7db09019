// What a project's task store holds, read straight from its files (for tests): open.json and the
// history's newest line per task (open.json wins), in the order they were written.
import fs from "node:fs";
import path from "node:path";
import { storeDir } from "../src/store-paths.js";

export interface StoredFiles<T> {
  /** the store's directory */
  dir: string;
  open: T[];
  history: T[];
  /** every task, open and settled */
  tasks: T[];
}

/** `legacyPath` is the manager's legacyTaskFile (`…/offshoot/<projectID>.json`); the files live in the directory beside it. */
export function readStoredTasks<T extends { id: string } = { id: string; [key: string]: unknown }>(legacyPath: string): StoredFiles<T> {
  const dir = storeDir(legacyPath);
  const openFile = path.join(dir, "open.json");
  const historyFile = path.join(dir, "history.jsonl");
  const open: T[] = fs.existsSync(openFile) ? JSON.parse(fs.readFileSync(openFile, "utf8")).tasks : [];
  const latest = new Map<string, T>();
  if (fs.existsSync(historyFile)) {
    for (const line of fs.readFileSync(historyFile, "utf8").split("\n")) {
      const tab = line.indexOf("\t");
      if (tab < 0) continue;
      const task = JSON.parse(line.slice(tab + 1)) as T;
      latest.delete(task.id);
      latest.set(task.id, task);
    }
  }
  for (const t of open) latest.delete(t.id);
  const history = [...latest.values()];
  return { dir, open, history, tasks: [...history, ...open] };
}

// Where the plugin keeps its files: shared by the task store (manager/) and the native fork store (native/).

import { basename, dirname, join } from "node:path";

/** `…/offshoot/<projectID>.json` (the version 2 task file) → `…/offshoot/<projectID>` */
export function storeDir(legacyPath: string): string {
  const name = basename(legacyPath, ".json");
  return join(dirname(legacyPath), name === basename(legacyPath) ? `${name}.d` : name);
}

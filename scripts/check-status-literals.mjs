// One meaning per status, checked (npm run lint): what a task's status means (open, waiting for a
// person, takeable, settled, …) is one row of STATUS_MEANINGS in src/task-state.ts, and the edges
// between statuses are src/manager/task/transitions.ts. Anywhere else under src/, a comparison with a
// status literal (`=== "paused"`, `case "queued":`, `.includes("error")`) or a list of two or more
// of them fails with its file and line: ask the table (meaningOf) instead. Not checked: src/fork/
// (it reads OpenCode's message parts, whose tool states share some of these words, and holds no task),
// and a comparison of an OpenCode tool part's own `state.status` (same words, not a task).
// The statuses are read from TASK_STATUSES, so a new one is checked without editing this file.
// Regular expressions per line, no backtracking beyond one alternation of names.
import fs from "node:fs";
import path from "node:path";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const TABLE = "src/task-state.ts";
const EXEMPT = new Set([TABLE, "src/manager/task/transitions.ts"]);

const table = fs.readFileSync(path.join(root, TABLE), "utf8");
const declared = /TASK_STATUSES\s*=\s*\[([^\]]*)\]/.exec(table);
if (!declared) {
  console.error(`${TABLE}: TASK_STATUSES not found; the status lint cannot run.`);
  process.exit(1);
}
const statuses = [...declared[1].matchAll(/"([^"]+)"/g)].map((m) => m[1]);
const names = statuses.join("|");
const lit = `"(?:${names})"`;
const CHECKS = [
  // a comparison either way round; the left operand kept to tell an OpenCode part's state apart
  new RegExp(`([\\w$.?\\]\\[)]+)\\s*(?:===|!==|==|!=)\\s*${lit}`),
  new RegExp(`${lit}\\s*(?:===|!==|==|!=)\\s*([\\w$.?]+)`),
  new RegExp(`\\bcase\\s+${lit}\\s*:`),
  new RegExp(`\\.(?:includes|has|indexOf)\\(\\s*${lit}\\s*\\)`),
  // a list of statuses: a group the table should hold
  new RegExp(`${lit}\\s*,\\s*${lit}`),
];
/** An OpenCode tool part's own state (pending/running/completed/error), compared as such: not a task. */
const PART_STATE = /(?:^|\.)state\??\.status$/;

const found = [];
function walk(dir) {
  for (const name of fs.readdirSync(dir)) {
    const file = path.join(dir, name);
    const rel = path.relative(root, file).split(path.sep).join("/");
    if (fs.statSync(file).isDirectory()) {
      if (rel !== "src/fork") walk(file);
    } else if (name.endsWith(".ts") && !EXEMPT.has(rel)) check(file, rel);
  }
}
function check(file, rel) {
  fs.readFileSync(file, "utf8")
    .split("\n")
    .forEach((line, i) => {
      const code = line.trim();
      if (code.startsWith("//") || code.startsWith("*") || code.startsWith("/*")) return;
      for (const re of CHECKS) {
        const m = re.exec(code);
        if (!m) continue;
        if (m[1] && PART_STATE.test(m[1])) continue;
        found.push(`${rel}:${i + 1}: ${code}`);
        return;
      }
    });
}
walk(path.join(root, "src"));
if (found.length) {
  console.error(
    `A status is compared with a literal outside ${TABLE}. Ask its row instead (meaningOf(status).open, .waitsForPerson, …; add a column to STATUS_MEANINGS if none fits):`,
  );
  for (const line of found) console.error(`  ${line}`);
  process.exit(1);
}
console.log(`one meaning per status: every status question goes through ${TABLE}`);

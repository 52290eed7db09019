// The manager's one-writer rule, checked (npm run lint): a task's fields (its record and the plain
// fields of its runtime) are assigned only by src/manager/task-runner.ts, which writes what
// src/manager/task-step.ts decides. The exceptions are named below: a record being created (a
// launch's draft, a record migrated from an old file) and objects that are not a task (a progress
// report, the step's local copies). Any other assignment to one of these
// field names under src/ (but the TUI half and the pure fork, which hold no task) fails with its line.
// A regular expression per line: no backtracking (one alternation of names, then a fixed operator).
import fs from "node:fs";
import path from "node:path";

const FIELDS = [
  // the task record (src/task-record.ts) and a worktree's record in it
  ...["id", "sessionID", "parentSessionID", "callID", "description", "agent", "model", "variant", "parentAgent", "parentModel", "isForked"],
  ...["fork", "ownerPid", "status", "run", "notifiedRun", "reportedRun", "cancelledByParent", "createdAt", "startedAt", "completedAt"],
  ...["error", "toolCalls", "lastTool", "usage", "queuedPrompt", "queuedBecause", "worktree", "receipt", "steers", "removed", "takenAt", "head", "changes"],
  // the plain fields of its runtime (task-step.ts StepRuntime)
  ...["launching", "settling", "lastError", "answer", "noticeFailures", "permission", "question", "stopReason", "lastSteerAt", "requestAnswer"],
  ...["overlapNote", "childPlan"],
];
/** file → the receivers that may be written there (each a record being created, or not a task) */
const ALLOWED = {
  "src/manager/launch.ts": ["draft", "plan"], // the record and its child's plan, created
  "src/store/task-list-file.ts": ["migrated"], // a record read from an old file, created
  "src/manager/progress.ts": ["progress"], // a report of a child's messages
  "src/manager/task-step.ts": ["worktree"], // the step's local copy it returns
};
const names = FIELDS.join("|");
const WRITE = new RegExp(
  `([\\w$]+)\\.(?:${names})\\s*(?:=(?!=)|\\+=|-=|\\?\\?=|\\|\\|=)|([\\w$]+)\\.(?:${names})(?:\\+\\+|--)|delete ([\\w$]+)\\.(?:${names})\\b`,
);
const ASSIGN = /Object\.assign\((?:[\w$]+\.)?(?:task|runtime)\b/;

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const found = [];
function walk(dir) {
  for (const name of fs.readdirSync(dir)) {
    const file = path.join(dir, name);
    const rel = path.relative(root, file);
    if (fs.statSync(file).isDirectory()) {
      if (rel !== "src/tui" && rel !== "src/fork") walk(file);
    } else if (name.endsWith(".ts") && rel !== "src/manager/task-runner.ts") check(file, rel);
  }
}
function check(file, rel) {
  fs.readFileSync(file, "utf8")
    .split("\n")
    .forEach((line, i) => {
      const code = line.trim();
      if (code.startsWith("//") || code.startsWith("*")) return;
      const m = WRITE.exec(code);
      const receiver = m && (m[1] ?? m[2] ?? m[3]);
      if (m && !(ALLOWED[rel] ?? []).includes(receiver)) found.push(`${rel}:${i + 1}: ${code}`);
      else if (ASSIGN.test(code)) found.push(`${rel}:${i + 1}: ${code}`);
    });
}
walk(path.join(root, "src"));
if (found.length) {
  console.error("A task is changed outside its step. Give task-step.ts an input for it and run it with the manager's `run` (task-runner.ts writes it):");
  for (const line of found) console.error(`  ${line}`);
  process.exit(1);
}
console.log("one writer: every change to a task goes through task-step.ts");

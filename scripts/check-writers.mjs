// The manager's one-writer rule: a task's record and runtime are written only by
// src/manager/task/runner.ts, which writes what src/manager/task/step.ts decides. The types keep it:
// outside the runner a task (BackgroundTask) and its entry's runtime (registry.ts TaskEntry) are
// readonly all the way down, so an assignment, a compound write, a delete, a push into a nested list,
// a destructuring write, an element or computed key, a nested field… does not compile.
// This check names, with its line, only what the types cannot say: a write through reflection
// (Object.assign onto a task or runtime, Reflect.set / deleteProperty / defineProperty,
// Object.defineProperty), and a cast that takes the readonly away (`as any`, a cast to the writable
// types TaskFields, TaskRuntime, WorktreeFields, or `task`/`runtime` `as unknown as`). Scanned: src/
// but the TUI half and the pure fork, which hold no task; the runner itself is the one exception.
// A regular expression per line: no backtracking (fixed alternations, then a fixed token).
import fs from "node:fs";
import path from "node:path";

const RULES = [
  { why: "Object.assign onto a task or its runtime", re: /Object\.assign\((?:[\w$]+\.)*(?:task|runtime)\b/ },
  { why: "a write through reflection", re: /\bReflect\.(?:set|deleteProperty|defineProperty)\(|\bObject\.defineProperty\(/ },
  { why: "a cast to any", re: /\bas any\b/ },
  { why: "a cast to a writable task type", re: /\bas (?:TaskFields|TaskRuntime|WorktreeFields)\b/ },
  { why: "a task or runtime cast past its type", re: /\b(?:task|runtime)\)? as unknown as\b/ },
];

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const found = [];
function walk(dir) {
  for (const name of fs.readdirSync(dir)) {
    const file = path.join(dir, name);
    const rel = path.relative(root, file);
    if (fs.statSync(file).isDirectory()) {
      if (rel !== "src/tui" && rel !== "src/fork") walk(file);
    } else if (name.endsWith(".ts") && rel !== "src/manager/task/runner.ts") check(file, rel);
  }
}
function check(file, rel) {
  fs.readFileSync(file, "utf8")
    .split("\n")
    .forEach((line, i) => {
      const code = line.trim();
      if (code.startsWith("//") || code.startsWith("*")) return;
      for (const rule of RULES) if (rule.re.test(code)) found.push(`${rel}:${i + 1}: ${rule.why}: ${code}`);
    });
}
walk(path.join(root, "src"));
if (found.length) {
  console.error(
    "A task is changed outside its step, past its readonly type. Give task/step.ts an input for it and send it with the manager's `dispatch` (task/runner.ts writes it):",
  );
  for (const line of found) console.error(`  ${line}`);
  process.exit(1);
}
console.log("one writer: every change to a task goes through task/step.ts (the types keep the rest)");

// Run by take.test.ts in its own process (tsx): applies a planned take and, once `stopAfter` paths
// are written, says so in a marker file and hangs, so the test can SIGKILL it mid-take.
import fs from "node:fs";
import { applyTake, type PathChange } from "../../../src/worktree/take.js";

const [repo, taskId, changesFile, stopAfter, marker] = process.argv.slice(2) as [string, string, string, string, string];
const changes = JSON.parse(fs.readFileSync(changesFile, "utf8")) as PathChange[];
let written = 0;
await applyTake(repo, taskId, changes, async () => {
  if (++written < Number(stopAfter)) return;
  fs.writeFileSync(marker, String(written));
  await new Promise(() => setInterval(() => {}, 1000)); // hangs until killed
});

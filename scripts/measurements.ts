/**
 * `npm run measurements`: writes docs/measurements.md from the last `npm run bench` run
 * (.bench/last-run.json, or the file named as the first argument), with bench/report.ts, which also
 * renders the table `npm run bench` printed: the page and the terminal show the same table.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type BenchRun, renderPage } from "../bench/report.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const from = path.resolve(process.argv[2] ?? path.join(ROOT, ".bench", "last-run.json"));
if (!fs.existsSync(from)) {
  console.error(`${from} is not there: run npm run bench first (it saves its run there).`);
  process.exit(1);
}
const run = JSON.parse(fs.readFileSync(from, "utf8")) as BenchRun;
const page = path.join(ROOT, "docs", "measurements.md");
fs.writeFileSync(page, renderPage(run, ROOT));
console.log(`wrote ${path.relative(ROOT, page)} from ${path.relative(ROOT, from) || from}: ${run.invocation}, ${run.date}, commit ${run.commit}`);

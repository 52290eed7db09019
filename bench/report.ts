// One `npm run bench` run as data (bench/all.ts writes it to .bench/last-run.json), and the two
// ways it is shown, from the same code: the closing table `npm run bench` prints, and
// docs/measurements.md (scripts/measurements.ts), which holds that same table, then each step's
// own output under the command and flags that printed it. Every figure on the page comes from the
// run it names (date, commit, machine); none is written by hand.

import { execFileSync } from "node:child_process";
import os from "node:os";
import type { Ratio } from "./ratio.js";

/** The machine a run ran on: what moves timings. */
export interface Machine {
  cpus: number;
  cpuModel: string;
  /** the file system of the temp directory, where the benches make their repositories */
  fileSystem: string;
  tmpdir: string;
  kernel: string;
  node: string;
  /** the 1, 5 and 15 minute load averages when the run started and when it ended */
  loadAtStart: number[];
  loadAtEnd?: number[];
}

export interface StepRun {
  name: string;
  /** what the step measures, and against which floor */
  what: string;
  /** the command and its flags, as run */
  command: string;
  seconds: number;
  ok: boolean;
  /** what it printed (its ratio lines apart) */
  output: string;
  ratios: Ratio[];
}

export interface BenchRun {
  /** how the run was started, e.g. `npm run bench` or `npm run bench -- --quick` */
  invocation: string;
  /** ISO date and time the run started */
  date: string;
  commit: string;
  /** the working tree had uncommitted changes */
  dirty: boolean;
  machine: Machine;
  steps: StepRun[];
}

function quiet(command: string, args: string[]): string {
  try {
    return execFileSync(command, args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return "";
  }
}

/** The machine as it is now. */
export function machineNow(): Machine {
  const cpus = os.cpus();
  return {
    cpus: cpus.length,
    cpuModel: cpus[0]?.model.trim() ?? "unknown",
    fileSystem: quiet("stat", ["-f", "-c", "%T", os.tmpdir()]) || "unknown",
    tmpdir: os.tmpdir(),
    kernel: `${os.type()} ${os.release()}`,
    node: process.version,
    loadAtStart: os.loadavg().map((l) => Math.round(l * 100) / 100),
  };
}

/** The commit checked out, and whether the working tree differs from it. */
export function commitNow(cwd: string): { commit: string; dirty: boolean } {
  return {
    commit: quiet("git", ["-C", cwd, "rev-parse", "--short=12", "HEAD"]) || "unknown",
    dirty: quiet("git", ["-C", cwd, "status", "--porcelain", "--untracked-files=no"]) !== "",
  };
}

/** `1.19 ×`, and with several runs their spread: `1.19 × (runs: 1.05 to 1.40, n = 3)`. */
export function ratioText(r: Pick<Ratio, "ratio" | "samples">): string {
  const head = `${r.ratio.toFixed(2)} ×`;
  const xs = r.samples ?? [];
  if (xs.length < 2) return head;
  return `${head} (runs: ${Math.min(...xs).toFixed(2)} to ${Math.max(...xs).toFixed(2)}, n = ${xs.length})`;
}

/** A table cell: one line, pipes escaped. */
const cell = (text: string) => text.split("\n").join(" ").split("|").join("\\|");

/** The lines that say which run this is: invocation, date, commit, machine. */
export function runLines(run: BenchRun): string[] {
  const m = run.machine;
  const load = (l: number[] | undefined) => (l ? l.map((x) => x.toFixed(2)).join(" / ") : "?");
  return [
    `Run: \`${run.invocation}\` on ${run.date}, commit ${run.commit}${run.dirty ? " with uncommitted changes" : ""}.`,
    `Machine: ${m.cpus} CPUs (${m.cpuModel}), ${m.kernel}, temp directory ${m.tmpdir} on ${m.fileSystem}, Node ${m.node}; load average (1 / 5 / 15 min) ${load(m.loadAtStart)} at the start, ${load(m.loadAtEnd)} at the end.`,
  ];
}

/** The closing table: under each step and the command and flags that ran it, each measure against its floor, in the order they ran. */
export function renderTable(run: BenchRun): string {
  const out = [...runLines(run)];
  run.steps.forEach((step, i) => {
    out.push("", `${i + 1}. ${step.name}: \`${step.command}\` (${step.seconds.toFixed(0)} s${step.ok ? "" : "; it did not run to the end"})`, "");
    if (!step.ratios.length) {
      out.push("   (no ratio: its figures are in its output)");
      return;
    }
    out.push("   | measure | value | floor (measured beside it) | ratio | goal | met |", "   |---|---|---|---|---|---|");
    for (const r of step.ratios)
      out.push(`   | ${cell(r.measure)} | ${cell(r.value)} | ${cell(r.floor)} | ${cell(ratioText(r))} | ${cell(r.goal)} | ${r.met ? "yes" : "**no**"} |`);
  });
  return out.join("\n");
}

/** docs/measurements.md for a run: the table `npm run bench` printed at its end, then each step's output under its command. */
export function renderPage(run: BenchRun, repoRoot: string): string {
  const local = (text: string) => text.split(repoRoot).join(".");
  const out = [
    "# Measurements",
    "",
    "Part of the documentation of opencode-offshoot: the [README](../README.md) is the front door.",
    "",
    "Written by `npm run measurements` from the last `npm run bench` run (`.bench/last-run.json`): every figure below is",
    "that run's, under the command and flags that printed it. To compare your own machine, run `npm run bench` alone (the",
    "figures are timings: no test beside it) and read its closing table line by line against this one; `npm run bench -- --quick`",
    "runs every step on smaller inputs, to try the pipeline. A ratio from several interleaved runs shows their spread: on a",
    "shared machine one run can be far off (a `git worktree add` of the same commit took from 1.75 s to 26 s between runs).",
    "",
    "## The closing table",
    "",
    local(renderTable(run)),
    "",
    "## Each step",
    "",
  ];
  run.steps.forEach((step, i) => {
    out.push(
      `### ${i + 1}. ${step.name}`,
      "",
      `\`${step.command}\` (${step.seconds.toFixed(0)} s${step.ok ? "" : "; it did not run to the end"}): ${step.what}`,
    );
    out.push("", "```text", local(step.output.trimEnd()), "```", "");
  });
  return `${out.join("\n").trimEnd()}\n`;
}

/**
 * Server memory per task on the REAL OpenCode server: what a long-running `opencode serve` keeps
 * for each task that has ended, with the plugin, next to the same run without it (the control).
 *
 *   npx tsx bench/memory.ts [--rounds 30] [--tasks 10] [--from 5] [--only plugin|control] [--keep-snapshots DIR]
 *
 * Each round opens a fresh parent session whose (scripted) model starts --tasks sub-agents in one
 * turn, and waits until every one of them has ended and the parent has been told:
 *   plugin:  background_task × N (agent "general", no fork); the round is over at the wake prompt
 *            that says no task is running any more, and the parent's turn that answers it;
 *   control: OpenCode's own `task` tool × N in the same turn (no plugin loaded); the turn ends
 *            when every sub-agent has answered.
 * After every round a probe tool (bench/heap-probe-plugin.js, loaded in both runs) runs a full GC
 * inside the server's own (Bun) process and reports its heap and RSS. At round --from and at the
 * last round it also writes a heap snapshot (V8 format); the two are compared by constructor name
 * (objects and bytes that grew between them).
 * Printed: per task, what grew between the two heap snapshots (objects and bytes by constructor), and
 * the growth of the heap and of the RSS after GC between round --from and the
 * last round (least-squares slope over the rounds in between), plugin and control side by side,
 * the plugin's own share (the difference) against the goal of 20 KB per ended task, and the
 * snapshot diffs. Reports only: no assertions.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  DIST_PLUGIN,
  type EventCollector,
  events,
  type OcEvent,
  OPENCODE_VERSION,
  type OpencodeServer,
  REPO_ROOT,
  startOpencode,
} from "../test/e2e/harness/opencode.js";
import { type ScriptedModel, isToolFollowUp, lastUserText, startScriptedModel } from "../test/e2e/harness/scripted-model.js";
import { printRatio } from "./ratio.js";

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  const v = i >= 0 ? Number(process.argv[i + 1]) : NaN;
  return Number.isInteger(v) && v > 0 ? v : fallback;
}
function argText(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const ROUNDS = arg("--rounds", 30);
const TASKS = arg("--tasks", 10);
const FROM = Math.min(arg("--from", 5), ROUNDS - 1);
const ONLY = argText("--only");
const KEEP = argText("--keep-snapshots");
const HEAP_PROBE = path.join(REPO_ROOT, "bench/heap-probe-plugin.js");
/** Goal for the plugin's own share, bytes per ended task (issue 32). */
const GOAL_PER_TASK = 20 * 1024;
const WAIT_MS = 120_000;

type Variant = "plugin" | "control";

interface Probe {
  round: number;
  rss: number;
  heapUsed: number;
}

interface VariantResult {
  variant: Variant;
  probes: Probe[];
  diff?: SnapshotDiff;
  seconds: number;
}

const isIdle = (sessionID: string) => (e: OcEvent) => e.type === "session.idle" && e.properties.sessionID === sessionID;

// ─── heap snapshots (V8 format) ───

interface SnapshotDiff {
  rows: { name: string; count: number; bytes: number }[];
  totalBytes: number;
  totalCount: number;
}

/** Objects and self bytes per "type:name" of a V8 heap snapshot file. */
function summarise(file: string): Map<string, { count: number; bytes: number }> {
  const snapshot = JSON.parse(fs.readFileSync(file, "utf8")) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
    nodes: number[];
    strings: string[];
  };
  const fields = snapshot.snapshot.meta.node_fields;
  const width = fields.length;
  const typeAt = fields.indexOf("type");
  const nameAt = fields.indexOf("name");
  const sizeAt = fields.indexOf("self_size");
  const types = snapshot.snapshot.meta.node_types[0];
  const out = new Map<string, { count: number; bytes: number }>();
  const { nodes, strings } = snapshot;
  for (let i = 0; i < nodes.length; i += width) {
    const type = types[nodes[i + typeAt]!] ?? "?";
    let name = strings[nodes[i + nameAt]!] ?? "?";
    if (type === "string" || type === "concatenated string" || type === "sliced string") name = "(strings)";
    if (name.length > 60) name = `${name.slice(0, 57)}...`;
    const key = `${type}:${name}`;
    const row = out.get(key) ?? { count: 0, bytes: 0 };
    row.count++;
    row.bytes += nodes[i + sizeAt]!;
    out.set(key, row);
  }
  return out;
}

function diffSnapshots(before: string, after: string): SnapshotDiff {
  const a = summarise(before);
  const b = summarise(after);
  const rows: SnapshotDiff["rows"] = [];
  let totalBytes = 0;
  let totalCount = 0;
  for (const [name, row] of b) {
    const old = a.get(name) ?? { count: 0, bytes: 0 };
    rows.push({ name, count: row.count - old.count, bytes: row.bytes - old.bytes });
  }
  for (const [name, old] of a) if (!b.has(name)) rows.push({ name, count: -old.count, bytes: -old.bytes });
  for (const row of rows) {
    totalBytes += row.bytes;
    totalCount += row.count;
  }
  rows.sort((x, y) => y.bytes - x.bytes);
  return { rows, totalBytes, totalCount };
}

// ─── the run ───

/** Least-squares slope of y over x. */
function slope(xs: number[], ys: number[]): number {
  const n = xs.length;
  const mx = xs.reduce((s, x) => s + x, 0) / n;
  const my = ys.reduce((s, y) => s + y, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i]! - mx) * (ys[i]! - my);
    den += (xs[i]! - mx) ** 2;
  }
  return den > 0 ? num / den : NaN;
}

async function probe(server: OpencodeServer, sessionID: string, snapshot?: string): Promise<{ rss: number; heapUsed: number; snapshotError?: string }> {
  const r = await server.client.session.prompt({
    path: { id: sessionID },
    body: { parts: [{ type: "text", text: snapshot ? `probe ${snapshot}` : "probe" }] },
  });
  if (r.error) throw new Error(`the probe failed: ${JSON.stringify(r.error)}`);
  const messages = (await server.client.session.messages({ path: { id: sessionID }, query: { limit: 3 } })).data ?? [];
  for (const m of messages.reverse()) {
    for (const p of m.parts) {
      if (p.type === "tool" && p.tool === "heap_probe" && p.state.status === "completed") return JSON.parse(p.state.output);
    }
  }
  throw new Error("the probe's result was not found");
}

async function runVariant(variant: Variant, snapshotDir: string): Promise<VariantResult> {
  const started = Date.now();
  let model: ScriptedModel | undefined;
  let server: OpencodeServer | undefined;
  let stream: EventCollector | undefined;
  try {
    model = await startScriptedModel();
    const tool = variant === "plugin" ? "background_task" : "task";
    const round = (text: string) => /^round (\d+)$/.exec(text);
    model.script({
      name: "parent: launch",
      match: (r) => round(lastUserText(r)) !== null && !isToolFollowUp(r),
      reply: (r) => {
        const n = round(lastUserText(r))![1];
        return {
          toolCalls: Array.from({ length: TASKS }, (_, k) => ({
            name: tool,
            arguments:
              variant === "plugin"
                ? { description: `R${n}T${k}`, prompt: `CHILD R${n}T${k}: answer`, agent: "general" }
                : { description: `R${n}T${k}`, prompt: `CHILD R${n}T${k}: answer`, subagent_type: "general" },
          })),
        };
      },
    });
    model.script({ name: "parent: launched", match: (r) => round(lastUserText(r)) !== null && isToolFollowUp(r), reply: { text: "launched" } });
    model.script({ name: "child", match: (r) => lastUserText(r).includes("CHILD R"), reply: { text: "The child's answer: done, nothing else to report." } });
    model.script({ name: "wake", match: (r) => lastUserText(r).startsWith("Background tasks you started have ended"), reply: { text: "noted" } });
    model.script({
      name: "probe",
      match: (r) => /^probe\b/.test(lastUserText(r)) && !isToolFollowUp(r),
      reply: (r) => {
        const file = lastUserText(r).slice("probe".length).trim();
        return { toolCalls: [{ name: "heap_probe", arguments: file ? { snapshot: file } : {} }] };
      },
    });
    model.script({ name: "probe: done", match: (r) => /^probe\b/.test(lastUserText(r)) && isToolFollowUp(r), reply: { text: "probed" } });

    // (the plugin runs the round's tasks at once, as OpenCode runs its own task calls)
    server = await startOpencode({ plugins: variant === "plugin" ? [[DIST_PLUGIN, { concurrency: TASKS }], HEAP_PROBE] : [HEAP_PROBE], model });
    stream = await events(server.client);
    const probeSession = (await server.client.session.create({ body: { title: "memory probe" } })).data!.id;
    const probes: Probe[] = [];
    const snapshots: string[] = [];
    for (let r = 1; r <= ROUNDS; r++) {
      stream.clear();
      const parent = (await server.client.session.create({ body: { title: `round ${r}` } })).data!.id;
      if (variant === "plugin") {
        // The round is over when the parent is woken with no task left running, and has answered.
        const lastWake = model.waitForRequest(
          (q) => q.label === "wake" && lastUserText(q.body).includes(`"R${r}T`) && lastUserText(q.body).includes("No background tasks are running now."),
          WAIT_MS,
        );
        const sent = await server.client.session.prompt({ path: { id: parent }, body: { parts: [{ type: "text", text: `round ${r}` }] } });
        if (sent.error) throw new Error(`round ${r} failed: ${JSON.stringify(sent.error)}`);
        const wake = await lastWake;
        await stream.waitFor((e) => isIdle(parent)(e) && stream!.arrivedAt(e) >= wake.at, WAIT_MS);
      } else {
        const sent = await server.client.session.prompt({ path: { id: parent }, body: { parts: [{ type: "text", text: `round ${r}` }] } });
        if (sent.error) throw new Error(`round ${r} failed: ${JSON.stringify(sent.error)}`);
      }
      model.requests.splice(0); // the scripted model keeps every request otherwise
      const file = r === FROM || r === ROUNDS ? path.join(snapshotDir, `${variant}-round${r}.heapsnapshot`) : undefined;
      const usage = await probe(server, probeSession, file);
      if (usage.snapshotError) console.log(`  (${variant}: no heap snapshot at round ${r}: ${usage.snapshotError})`);
      else if (file) snapshots.push(file);
      probes.push({ round: r, rss: usage.rss, heapUsed: usage.heapUsed });
      process.stdout.write(`${variant} round ${r}/${ROUNDS}: heap ${(usage.heapUsed / 1e6).toFixed(1)} MB, RSS ${(usage.rss / 1e6).toFixed(1)} MB\n`);
    }
    const diff = snapshots.length === 2 ? diffSnapshots(snapshots[0]!, snapshots[1]!) : undefined;
    return { variant, probes, diff, seconds: (Date.now() - started) / 1000 };
  } finally {
    stream?.close();
    await server?.stop().catch(() => {});
    await model?.close().catch(() => {});
  }
}

function perTask(probes: Probe[], key: "rss" | "heapUsed"): number {
  const span = probes.filter((p) => p.round >= FROM);
  return slope(
    span.map((p) => p.round * TASKS),
    span.map((p) => p[key]),
  );
}

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;

async function main() {
  if (!fs.existsSync(DIST_PLUGIN)) throw new Error(`${DIST_PLUGIN} not found: run \`npm run build\` first.`);
  const snapshotDir = KEEP ? path.resolve(KEEP) : fs.mkdtempSync(path.join(os.tmpdir(), "offshoot-heap-"));
  fs.mkdirSync(snapshotDir, { recursive: true });
  const results: VariantResult[] = [];
  try {
    for (const variant of ["plugin", "control"] as Variant[]) {
      if (ONLY && ONLY !== variant) continue;
      results.push(await runVariant(variant, snapshotDir));
    }
  } finally {
    if (!KEEP) fs.rmSync(snapshotDir, { recursive: true, force: true });
  }

  console.log(`\nServer memory per task: real OpenCode ${OPENCODE_VERSION}, ${ROUNDS} rounds of ${TASKS} tasks, each round a fresh parent`);
  console.log(`per task = least-squares slope of the value after a full GC in the server, rounds ${FROM}..${ROUNDS}\n`);
  console.log(`${"".padEnd(34)}${"heap / task".padStart(14)}${"RSS / task".padStart(14)}${"time".padStart(8)}`);
  for (const r of results) {
    const label = r.variant === "plugin" ? "with the plugin (background_task)" : "control: OpenCode's own task tool";
    console.log(
      `${label.padEnd(34)}${kb(perTask(r.probes, "heapUsed")).padStart(14)}${kb(perTask(r.probes, "rss")).padStart(14)}${`${r.seconds.toFixed(0)} s`.padStart(8)}`,
    );
  }
  const plugin = results.find((r) => r.variant === "plugin");
  const control = results.find((r) => r.variant === "control");
  // What the heap kept per task: the objects and bytes that grew between the two snapshots (the
  // slopes above are the same figure through the noise of a whole heap: the machine is shared).
  const grownPerTask = (r: VariantResult | undefined) =>
    r?.diff ? r.diff.rows.filter((row) => row.bytes > 0).reduce((sum, row) => sum + row.bytes, 0) / ((ROUNDS - FROM) * TASKS) : NaN;
  for (const r of results) console.log(`heap snapshot growth per task, ${r.variant}: ${kb(grownPerTask(r))}`);
  if (plugin && control) {
    const share = grownPerTask(plugin) - grownPerTask(control);
    const slopeShare = perTask(plugin.probes, "heapUsed") - perTask(control.probes, "heapUsed");
    console.log(
      `the plugin's own share per ended task: ${kb(share)} by the snapshots, ${kb(slopeShare)} by the heap slopes (goal ≤ ${kb(GOAL_PER_TASK)}: ${share <= GOAL_PER_TASK ? "met" : "NOT met"})`,
    );
    printRatio({
      measure: `server memory per ended task (rounds ${FROM}..${ROUNDS} of ${TASKS} tasks), heap snapshot growth`,
      value: `${kb(grownPerTask(plugin))} (heap slope ${kb(perTask(plugin.probes, "heapUsed"))}, RSS ${kb(perTask(plugin.probes, "rss"))})`,
      floor: `${kb(grownPerTask(control))} (heap slope ${kb(perTask(control.probes, "heapUsed"))}, RSS ${kb(perTask(control.probes, "rss"))}): OpenCode's own task tool`,
      ratio: grownPerTask(plugin) / grownPerTask(control),
      goal: `plugin's share ≤ ${kb(GOAL_PER_TASK)}`,
      met: share <= GOAL_PER_TASK,
    });
  }
  for (const r of results) {
    if (!r.diff) continue;
    console.log(
      `\nheap snapshot diff, ${r.variant}, round ${FROM} → round ${ROUNDS} (${(ROUNDS - FROM) * TASKS} tasks): ${kb(r.diff.totalBytes)} in ${r.diff.totalCount} objects; most grown:`,
    );
    for (const row of r.diff.rows.slice(0, 12)) console.log(`  ${kb(row.bytes).padStart(12)}  ${String(row.count).padStart(8)} objects  ${row.name}`);
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});

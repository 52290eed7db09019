/**
 * Parallel launches on the REAL OpenCode server: how long each `background_task` call of a turn
 * that launches 32 tasks at once takes, against one launch alone (goal: each at most 2 × the single
 * launch; launches of one turn share the agent list and, when forking, the parent's history).
 *
 *   npx tsx bench/parallel.ts [--tasks 32] [--fork] [--rounds 3]      (npm run bench runs it)
 *
 * Each round starts a fresh server and runs the same turns; the closing ratios compare the medians
 * over the rounds (one turn's slowest call moves by ±50% from one turn to the next on a shared
 * machine, the read floor's too).
 *
 * The floor of a launch turn (bench/launch-floor-plugin.js, loaded beside the plugin): the same turn
 * with a tool that does only the host's part of a launch (a child created and prompted through the
 * server for each launch that ran, one fsync'd small write per call): what the read goal cannot beat.
 *
 * Durations are the tool parts' own `state.time.end - state.time.start`, as OpenCode recorded them.
 * Reports only: no assertions on timings. For scale it also runs the same turns with a tool that does
 * next to nothing (background_list) and with OpenCode's own `read` tool: in a turn of 32 calls even
 * `read` takes far more than 2 × its time alone, because OpenCode handles the calls of one reply
 * one after another on its single thread (about 5–10 ms each here) and any call that awaits I/O
 * finishes only after that.
 */
import fs from "node:fs";
import type { OpencodeClient } from "@opencode-ai/sdk";
import path from "node:path";
import { DIST_PLUGIN, OPENCODE_VERSION, type OpencodeServer, REPO_ROOT, startOpencode } from "../test/e2e/harness/opencode.js";
import { type ScriptedModel, isToolFollowUp, lastUserText, startScriptedModel } from "../test/e2e/harness/scripted-model.js";
import { printRatio } from "./ratio.js";

const TASKS = (() => {
  const i = process.argv.indexOf("--tasks");
  const n = i >= 0 ? Number(process.argv[i + 1]) : 32;
  return Number.isInteger(n) && n > 0 ? n : 32;
})();
const FORK = process.argv.includes("--fork");
const ROUNDS = (() => {
  const i = process.argv.indexOf("--rounds");
  const n = i >= 0 ? Number(process.argv[i + 1]) : 3;
  return Number.isInteger(n) && n > 0 ? n : 3;
})();
/** The host's part of a launch, nothing of offshoot's: bench/launch-floor-plugin.js. */
const LAUNCH_FLOOR_PLUGIN = path.join(REPO_ROOT, "bench/launch-floor-plugin.js");

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** The tool parts of one turn: each call's duration, and whether a launch was queued (its metadata says so). */
type Turn = { durations: number[]; queued: boolean[] };

async function launchTurn(client: OpencodeClient, model: ScriptedModel, cue: string, count: number, tool = "background_task", running = 0): Promise<number[]> {
  return (await launchTurnParts(client, model, cue, count, tool, running)).durations;
}

async function launchTurnParts(client: OpencodeClient, model: ScriptedModel, cue: string, count: number, tool: string, running: number): Promise<Turn> {
  const calls = Array.from({ length: count }, (_, i) => ({
    name: tool,
    arguments:
      tool === "background_task"
        ? { description: `${cue} task ${i}`, prompt: `CHILD ${cue} ${i}`, agent: "general", ...(FORK ? { fork: true } : {}) }
        : tool === "read"
          ? { filePath: path.join(REPO_ROOT, "package.json") }
          : tool === "launch_floor"
            ? { run: i < running, prompt: `CHILD ${cue} ${i}` }
            : {},
  }));
  model.script({ name: `${cue}-launch`, match: (r) => lastUserText(r) === cue && !isToolFollowUp(r), reply: { toolCalls: calls } });
  model.script({ name: `${cue}-done`, match: (r) => lastUserText(r) === cue && isToolFollowUp(r), reply: { text: "launched" } });
  const session = await client.session.create({ body: { title: cue } });
  const id = session.data!.id;
  await client.session.prompt({ path: { id }, body: { parts: [{ type: "text", text: cue }] } });
  const messages = (await client.session.messages({ path: { id } })).data ?? [];
  const durations: number[] = [];
  const queued: boolean[] = [];
  for (const m of messages) {
    for (const p of m.parts) {
      if (p.type !== "tool" || p.tool !== tool) continue;
      if (p.state.status !== "completed") throw new Error(`a launch did not complete: ${JSON.stringify(p.state).slice(0, 300)}`);
      durations.push(p.state.time.end - p.state.time.start);
      queued.push((p.state.metadata as { queued?: unknown } | undefined)?.queued === true);
    }
  }
  if (durations.length !== count) throw new Error(`expected ${count} launches, found ${durations.length}`);
  return { durations, queued };
}

/** One round's figures (ms): each on a fresh server, in the same order. */
interface Round {
  single: number;
  many: number[];
  ran: number;
  listSingle: number;
  listMany: number[];
  readSingle: number;
  readMany: number[];
  floorSingle: number;
  floorMany: number[];
}

async function round(): Promise<Round> {
  let model: ScriptedModel | undefined;
  let server: OpencodeServer | undefined;
  try {
    model = await startScriptedModel();
    // Children answer after the launching turn is over: the benchmark is about the launches.
    model.script({ name: "child", match: (r) => lastUserText(r).startsWith("CHILD "), reply: { text: "ok", delayMs: 5_000 } });
    model.script({ name: "wake", match: (r) => lastUserText(r).startsWith("Background tasks you started have ended"), reply: { text: "noted" } });
    server = await startOpencode({ plugins: [DIST_PLUGIN, LAUNCH_FLOOR_PLUGIN], model });
    const client = server.client;
    await launchTurn(client, model, "WARMUP", 1);
    const singles: number[] = [];
    for (let i = 0; i < 3; i++) singles.push(...(await launchTurn(client, model, `SINGLE${i}`, 1)));
    const manyTurn = await launchTurnParts(client, model, "MANY", TASKS, "background_task", 0);
    // For scale: the same turn shapes with a tool that does next to nothing (OpenCode's own cost per call).
    const listSingles: number[] = [];
    for (let i = 0; i < 3; i++) listSingles.push(...(await launchTurn(client, model, `LSINGLE${i}`, 1, "background_list")));
    const listMany = await launchTurn(client, model, "LMANY", TASKS, "background_list");
    // The host's floor: OpenCode's own read tool (one small file) in the same turn shapes. A tool
    // that awaits any I/O finishes only after OpenCode has processed the turn's other calls.
    const readSingles: number[] = [];
    for (let i = 0; i < 3; i++) readSingles.push(...(await launchTurn(client, model, `RSINGLE${i}`, 1, "read")));
    const readMany = await launchTurn(client, model, "RMANY", TASKS, "read");
    // The floor of a launch turn: the same turn with a tool that does only what the host and the
    // promises require (bench/launch-floor-plugin.js): as many children created and prompted through
    // OpenCode's server as the launch turn started, and one durable small write per call.
    const ran = manyTurn.queued.filter((q) => !q).length;
    const floorSingles: number[] = [];
    for (let i = 0; i < 3; i++) floorSingles.push(...(await launchTurn(client, model, `FSINGLE${i}`, 1, "launch_floor", 1)));
    const floorMany = await launchTurn(client, model, "FMANY", TASKS, "launch_floor", ran);
    return {
      single: median(singles),
      many: manyTurn.durations,
      ran,
      listSingle: median(listSingles),
      listMany,
      readSingle: median(readSingles),
      readMany,
      floorSingle: median(floorSingles),
      floorMany,
    };
  } finally {
    await server?.stop();
    await model?.close();
  }
}

const ms = (n: number) => `${n.toFixed(0)} ms`;

async function main() {
  if (!fs.existsSync(DIST_PLUGIN)) throw new Error(`${DIST_PLUGIN} not found: run \`npm run build\` first.`);
  const rounds: Round[] = [];
  for (let i = 0; i < ROUNDS; i++) rounds.push(await round());
  const max = (values: number[]) => Math.max(...values);
  /** the median over the rounds of one figure of each round */
  const over = (figure: (r: Round) => number) => median(rounds.map(figure));
  const each = (figure: (r: Round) => number) => rounds.map((r) => figure(r).toFixed(0)).join(", ");
  const single = over((r) => r.single);
  const slowest = over((r) => max(r.many));
  const listSlowest = over((r) => max(r.listMany));
  const readSlowest = over((r) => max(r.readMany));
  const floorSlowest = over((r) => max(r.floorMany));
  const ran = rounds[0]!.ran;
  console.log(
    `\nParallel launches: real OpenCode ${OPENCODE_VERSION} + built plugin + scripted model${FORK ? " (fork: true)" : ""}; ${ROUNDS} rounds, each on a fresh server: medians over the rounds (each round's figure in brackets)`,
  );
  console.log(`one launch alone (median of 3):            ${ms(single)} [${each((r) => r.single)}]`);
  console.log(`${TASKS} launches in one turn, each: median ${ms(over((r) => median(r.many)))}, slowest ${ms(slowest)} [${each((r) => max(r.many))}]`);
  const ratio = slowest / Math.max(single, 1);
  console.log(`slowest of ${TASKS} / one alone: ${ratio.toFixed(2)} × (goal ≤ 2 ×) ${ratio <= 2 ? "PASS" : "OVER"}`);
  console.log(
    `for scale, background_list (does next to nothing): one alone ${ms(over((r) => r.listSingle))}; ${TASKS} in one turn, each: median ${ms(over((r) => median(r.listMany)))}, slowest ${ms(listSlowest)}`,
  );
  console.log(
    `launch work beyond OpenCode's own per-call cost, slowest of ${TASKS}: ${ms(slowest - listSlowest)} (one alone: ${ms(single - over((r) => r.listSingle))})`,
  );
  console.log(
    `the host's floor, OpenCode's own read tool: one alone ${ms(over((r) => r.readSingle))}; ${TASKS} in one turn, each: median ${ms(over((r) => median(r.readMany)))}, slowest ${ms(readSlowest)} [${each((r) => max(r.readMany))}]`,
  );
  console.log(
    `the launch's floor, the host's part only (child created and prompted, one fsync'd write): one alone ${ms(over((r) => r.floorSingle))}; ${TASKS} in one turn (${ran} creating a child, as in the launch turn), each: median ${ms(over((r) => median(r.floorMany)))}, slowest ${ms(floorSlowest)} [${each((r) => max(r.floorMany))}]`,
  );
  console.log(
    `  so a launch alone is ${(
      single /
      Math.max(
        1,
        over((r) => r.floorSingle),
      )
    ).toFixed(
      2,
    )} × its floor, and the slowest of ${TASKS} ${(slowest / Math.max(1, floorSlowest)).toFixed(2)} ×; the floor itself is ${(floorSlowest / Math.max(1, readSlowest)).toFixed(2)} × read`,
  );
  console.log(
    `  per round, the slowest launch against the slowest read: ${rounds.map((r) => (max(r.many) / Math.max(1, max(r.readMany))).toFixed(2)).join(", ")}`,
  );
  const againstRead = slowest / Math.max(1, readSlowest);
  printRatio({
    measure: `${TASKS} launches in one turn${FORK ? " (fork: true)" : ""}, slowest (median of ${ROUNDS} rounds)`,
    value: ms(slowest),
    floor: `${ms(readSlowest)}: the slowest of ${TASKS} reads in one turn (median of ${ROUNDS} rounds)`,
    ratio: againstRead,
    goal: "≤ 1.0 × read",
    met: againstRead <= 1,
    samples: rounds.map((r) => max(r.many) / Math.max(1, max(r.readMany))),
  });
  // What stops the read goal: a launch that runs must have OpenCode create its child and store its
  // prompt, which OpenCode serves only between the turn's other calls, and its record must be fsynced.
  const againstFloor = slowest / Math.max(1, floorSlowest);
  printRatio({
    measure: `${TASKS} launches in one turn${FORK ? " (fork: true)" : ""}, slowest, against the host's part of them (median of ${ROUNDS} rounds)`,
    value: ms(slowest),
    floor: `${ms(floorSlowest)}: the same turn doing only the host's part (${ran} children created and prompted, one fsync'd write a call) = ${(floorSlowest / Math.max(1, readSlowest)).toFixed(2)} × read`,
    ratio: againstFloor,
    goal: "≤ 1.2 × the floor (the plugin's own work at most a fifth)",
    met: againstFloor <= 1.2,
    samples: rounds.map((r) => max(r.many) / Math.max(1, max(r.floorMany))),
  });
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});

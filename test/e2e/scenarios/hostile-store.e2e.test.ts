/**
 * A hostile task file at start-up: bad entries, or a directory at the file's path. The plugin must
 * still start, keep what is valid, set the rest aside, and save new tasks.
 *
 * Each case prepares the data directory BEFORE OpenCode starts (the plugin reads the task file as it
 * loads), so each starts its own server on its own XDG_DATA_HOME. Without git the project id is
 * "global", so the task file is `<data>/opencode/plugins/offshoot/global.json`.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  DIST_PLUGIN,
  getMessages,
  lastUserText,
  printServerLogOnFailure,
  startOpencode,
  startScriptedModel,
  type OpencodeServer,
  type ScriptedModel,
} from "../harness/index.js";
import { storeDir } from "../../../src/store-paths.js";
import { readStoredTasks } from "../../stored-tasks.js";
import { newSession, promptText, scriptLaunch, taskIdIn, toolOutputs, until, type StoredTask } from "./helpers.js";

let model: ScriptedModel;
let server: OpencodeServer | undefined;
const dataDirs: string[] = [];

printServerLogOnFailure(() => ({ server, model }));
beforeAll(async () => {
  model = await startScriptedModel();
});
afterAll(async () => {
  await server?.stop();
  await model?.close();
  for (const d of dataDirs) fs.rmSync(d, { recursive: true, force: true });
});

/** Prepares the task file's place, then starts OpenCode with the built plugin on that data directory. */
async function startWith(prepare: (taskFile: string) => void): Promise<{ server: OpencodeServer; taskFile: string }> {
  await server?.stop();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "offshoot-e2e-data-"));
  dataDirs.push(dataDir);
  const taskFile = path.join(dataDir, "opencode", "plugins", "offshoot", "global.json");
  fs.mkdirSync(path.dirname(taskFile), { recursive: true, mode: 0o700 });
  prepare(taskFile);
  server = await startOpencode({ plugins: [DIST_PLUGIN], model, git: false, env: { XDG_DATA_HOME: dataDir } });
  const project = await server.client.project.current();
  expect(project.data?.id).toBe("global");
  return { server, taskFile };
}

/** A parent session launches a task whose child keeps working (its model answers after the test). */
async function launch(srv: OpencodeServer, name: string): Promise<string> {
  const cue = `HOSTILE_${name.toUpperCase()}`;
  scriptLaunch(model, {
    name,
    cue,
    task: { description: `Hostile store ${name}`, prompt: `CHILD_${cue}: work`, agent: "general" },
    launched: `Launched ${name}.`,
  });
  model.script({ name: `${name}-child`, match: (r) => lastUserText(r).includes(`CHILD_${cue}`), reply: { text: "never", delayMs: 120_000 } });
  const parent = await newSession(srv.client, `hostile store ${name}`);
  await promptText(srv.client, parent, cue);
  const [output] = toolOutputs(await getMessages(srv.client, parent), "background_task");
  expect(output).toContain("started");
  return taskIdIn(output!);
}

type TaskFile = { tasks: StoredTask[] };
const readJson = (file: string) => JSON.parse(fs.readFileSync(file, "utf8"));
const setAside = (taskFile: string) =>
  fs
    .readdirSync(path.dirname(taskFile))
    .filter((f) => f.startsWith(`${path.basename(taskFile)}.corrupt-`))
    .map((f) => path.join(path.dirname(taskFile), f));

/** Waits until the task file holds the task `id` (saves are asynchronous to the tool call). */
function fileWith(taskFile: string, id: string): Promise<TaskFile> {
  return until(`task ${id} in ${taskFile}`, () => {
    const file: TaskFile = readStoredTasks<StoredTask>(taskFile);
    return file.tasks.some((t) => t.id === id) && file;
  });
}

describe("hostile task file", () => {
  test("bad entries are set aside at start-up, the valid one is kept, and a new launch is saved beside it", async () => {
    const deadPid = spawnSync("true").pid!;
    // The file as the previous plugin version (1) wrote it, with the bad entries of the issue: a task an
    // earlier OpenCode (now dead) finished and delivered, for a parent this server never had.
    const valid = {
      id: "bg_valid001",
      sessionID: "ses_oldchild0000000000000001",
      parentSessionID: "ses_oldparent000000000000001",
      callID: "call_old_1",
      description: "Finished before the restart",
      agent: "general",
      isForked: false,
      ownerPid: deadPid,
      status: "completed",
      run: 1,
      notifiedRun: 1,
      prompt: "the old prompt",
      // (recent: older ended tasks leave the store at start-up, see history.e2e.test.ts)
      createdAt: Date.now() - 120_000,
      startedAt: Date.now() - 120_000,
      completedAt: Date.now() - 60_000,
      toolCalls: 2,
    };
    const bad = [null, 42, "x", { id: "bg_incompl1", status: "running", parentSessionID: "ses_oldparent000000000000001" }];
    const { server: srv, taskFile } = await startWith((file) =>
      fs.writeFileSync(file, JSON.stringify({ version: 1, tasks: [...bad, valid], pendingWakes: [] }), { mode: 0o600 }),
    );

    const id = await launch(srv, "entries");
    const saved = await fileWith(taskFile, id);
    expect(saved.tasks.map((t) => t.id)).toEqual([valid.id, id]);
    // Moved into the store: the prompt is not kept; the parent counts as told about its run.
    expect(saved.tasks[0]).toMatchObject({ description: valid.description, status: "completed", sessionID: valid.sessionID, reportedRun: 1 });
    expect(saved.tasks[0]).not.toHaveProperty("prompt");
    expect(saved.tasks[1]).toMatchObject({ status: "running", description: "Hostile store entries" });
    const store = storeDir(taskFile);
    for (const f of ["open.json", "history.jsonl"]) expect(fs.statSync(path.join(store, f)).mode & 0o777).toBe(0o600);
    expect(fs.statSync(store).mode & 0o777).toBe(0o700);
    // the old file is kept beside, renamed, once moved in
    expect(fs.existsSync(taskFile)).toBe(false);
    expect(readJson(`${taskFile}.migrated`).version).toBe(1);

    const asides = setAside(taskFile);
    expect(asides).toHaveLength(1);
    const copy = readJson(asides[0]!);
    expect(copy.entries.map((e: { entry: unknown }) => e.entry)).toEqual(bad);
    for (const e of copy.entries) expect(typeof e.reason).toBe("string");
  });

  test("a directory at the task file's path is set aside, and a launch is still saved", async () => {
    const { server: srv, taskFile } = await startWith((file) => {
      fs.mkdirSync(file);
      fs.writeFileSync(path.join(file, "left-inside"), "kept");
    });

    const id = await launch(srv, "directory");
    const saved = await fileWith(taskFile, id);
    expect(fs.existsSync(taskFile)).toBe(false);
    expect(fs.lstatSync(path.join(storeDir(taskFile), "open.json")).isFile()).toBe(true);
    expect(saved.tasks.map((t) => t.id)).toEqual([id]);
    const asides = setAside(taskFile);
    expect(asides).toHaveLength(1);
    expect(fs.readFileSync(path.join(asides[0]!, "left-inside"), "utf8")).toBe("kept");
  });
});

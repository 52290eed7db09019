/**
 * Tasks across a stop of OpenCode, on the real server: a quit (SIGTERM) and a crash (SIGKILL) with
 * tasks running leave them `interrupted` with the time they really ran; their parents get one notice
 * each and NO wake-up (a restart alone never starts a model turn); a notice that reached the parent
 * before a crash could record it is not sent again; `opencode run` waits for its task instead of
 * losing it.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { storeDir as storeDirOf } from "../../../src/store-paths.js";
import { describe, expect, test } from "vitest";
import { type ChatRequest, getMessages, isToolFollowUp, lastUserText, textOf, toolResults } from "../harness/index.js";
import {
  checkDeliveriesLater,
  children,
  isWake,
  newSession,
  notifications,
  promptText,
  readTaskFile,
  registerLateChecks,
  requestOf,
  scriptLaunch,
  storedTask,
  taskFilePath,
  taskIdIn,
  toolOutputs,
  until,
  useOpencode,
  wakePrompts,
} from "./helpers.js";

const env = useOpencode();

/** Launches `count` tasks from a new parent whose children never answer; returns their ids. */
async function launchStuck(tag: string, count: number) {
  const { model } = env;
  const tasks = Array.from({ length: count }, (_, i) => ({ description: `Stuck ${tag}${i}`, prompt: `CHILD_${tag}${i}: long job`, agent: "general" }));
  model.script({
    name: `${tag}-launch`,
    match: (r) => lastUserText(r) === `LAUNCH_${tag}` && !isToolFollowUp(r),
    reply: { toolCalls: tasks.map((t) => ({ name: "background_task", arguments: t })) },
  });
  model.script({ name: `${tag}-launched`, match: (r) => lastUserText(r) === `LAUNCH_${tag}` && isToolFollowUp(r), reply: { text: `Launched ${tag}.` } });
  model.script({ name: `${tag}-child`, match: (r) => lastUserText(r).includes(`CHILD_${tag}`), reply: { text: "never", delayMs: 120_000 } });
  const parent = await newSession(env.server.client, `restart ${tag}`);
  await promptText(env.server.client, parent, `LAUNCH_${tag}`);
  await until(`${count} children at the model`, () => env.model.requests.filter((r) => r.label === `${tag}-child`).length === count);
  const ids = toolOutputs(await getMessages(env.server.client, parent), "background_task").map(taskIdIn);
  return { parent, ids };
}

async function restart(signal: "SIGTERM" | "SIGKILL") {
  env.ev.close();
  await env.server.restart({ signal });
  await env.resubscribe();
}

describe("restart", () => {
  test("a quit with a task running: interrupted (not cancelled), its real running time, one notice, no wake", async () => {
    const { parent, ids } = await launchStuck("Q", 1);
    const [taskID] = ids;
    expect((await storedTask(env.server, taskID!))?.status).toBe("running");
    const quitAt = Date.now();
    await restart("SIGTERM");

    const notes = await until("the notice after the restart", async () => {
      const n = notifications(await getMessages(env.server.client, parent), taskID);
      return n.length > 0 && n;
    });
    // The delivery is recorded right after the notice is stored.
    const stored = await until("the delivery recorded", async () => {
      const t = await storedTask(env.server, taskID!);
      return t?.notifiedRun === 1 && t;
    });
    expect(stored.status).toBe("interrupted");
    expect(stored.error).toMatch(/interrupted: OpenCode stopped/);
    // The time it ran ends at the quit, not at the restart.
    expect(stored!.completedAt as number).toBeLessThanOrEqual(quitAt + 5_000);
    expect(textOf(notes[0]!)).toContain(`[background task ${taskID} was interrupted]`);
    expect(wakePrompts(await getMessages(env.server.client, parent))).toHaveLength(0);
    expect(env.model.chatRequests().filter((r) => isWake(r.body))).toHaveLength(0);
    checkDeliveriesLater(env, "Q: one notice, no wake", parent, { notifications: 1, wakes: 0 });
  });

  test("a crash with several tasks running: all interrupted, one notice each, no wake, and nothing again after another restart", async () => {
    const { parent, ids } = await launchStuck("K", 3);
    const [kid] = await children(env.server.client, parent);
    const crashAt = Date.now();
    await restart("SIGKILL");

    await until("three notices after the crash", async () => notifications(await getMessages(env.server.client, parent)).length === 3);
    const file = await until("three deliveries recorded", async () => {
      const f = await readTaskFile(env.server);
      return ids.every((id) => f.tasks.find((x) => x.id === id)?.notifiedRun === 1) && f;
    });
    for (const id of ids) {
      const t = file.tasks.find((x) => x.id === id)!;
      expect(t.status).toBe("interrupted");
      expect(t.notifiedRun).toBe(1);
      expect(t.completedAt as number).toBeLessThanOrEqual(crashAt);
    }
    expect(kid).toBeDefined();
    expect(wakePrompts(await getMessages(env.server.client, parent))).toHaveLength(0);

    // A further restart delivers nothing again.
    await restart("SIGTERM");
    env.model.script({ name: "k-list2", match: (r) => lastUserText(r) === "LIST_K2", reply: { text: "Listed K2." } });
    await promptText(env.server.client, parent, "LIST_K2"); // a turn: the plugin's start-up has run

    const again = await getMessages(env.server.client, parent);
    expect(notifications(again)).toHaveLength(3);
    expect(wakePrompts(again)).toHaveLength(0);
    checkDeliveriesLater(env, "K: three notices, no wake", parent, { notifications: 3, wakes: 0 });
  });

  test("a notice that reached the parent before a crash could record it is not delivered again", async () => {
    const { model } = env;
    scriptLaunch(model, { name: "n", cue: "NOTICE_N", task: { description: "Quick N", prompt: "CHILD_N: quick", agent: "general" }, launched: "Launched N." });
    model.script({ name: "n-child", match: (r) => lastUserText(r).includes("CHILD_N"), reply: { text: "done N" } });
    model.script({ name: "n-wake", match: (r) => isWake(r) && lastUserText(r).includes("Quick N"), reply: { text: "noted N" } });
    const parent = await newSession(env.server.client, "notice N");
    await promptText(env.server.client, parent, "NOTICE_N");
    await requestOf(model, "n-wake");
    const taskID = taskIdIn(toolOutputs(await getMessages(env.server.client, parent), "background_task")[0]!);
    await until("the delivery recorded", async () => (await storedTask(env.server, taskID))?.notifiedRun === 1);

    // The state a SIGKILL between the delivery and its save leaves: the notice is in the parent's
    // messages, the file says it is not delivered yet.
    env.ev.close();
    await env.server.restart({ signal: "SIGKILL" });
    // (a task whose notice is not delivered is kept in open.json, which wins over its history line)
    const open = path.join(storeDirOf(await taskFilePath(env.server)), "open.json");
    const rec = { ...(await storedTask(env.server, taskID))!, notifiedRun: 0, reportedRun: 0 };
    const file = JSON.parse(fs.readFileSync(open, "utf8"));
    file.tasks = [...file.tasks.filter((t: { id: string }) => t.id !== taskID), rec];
    fs.writeFileSync(open, JSON.stringify(file));
    await env.server.restart({ signal: "SIGKILL" });
    await env.resubscribe();

    await until("the notice found and recorded", async () => (await storedTask(env.server, taskID))?.notifiedRun === 1);
    const msgs = await getMessages(env.server.client, parent);
    expect(notifications(msgs, taskID)).toHaveLength(1);
    expect(wakePrompts(msgs)).toHaveLength(1); // the one from before the crash, none new
    checkDeliveriesLater(env, "N: one notice", parent, { notifications: 1, wakes: 1 });
  });

  test("under `opencode run`, background_task waits for its task: the result is in the run's answer, nothing is lost", async () => {
    const { model } = env;
    model.script({
      name: "r-launch",
      match: (r) => lastUserText(r) === "RUN_R" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "background_task", arguments: { description: "Run R", prompt: "CHILD_R: work", agent: "general" } }] },
    });
    model.script({ name: "r-child", match: (r) => lastUserText(r).includes("CHILD_R"), reply: { text: "RESULT_OF_R", delayMs: 1_500 } });
    model.script({
      name: "r-after",
      match: (r) => lastUserText(r) === "RUN_R" && isToolFollowUp(r),
      reply: (r) => ({ text: JSON.stringify(r.messages.at(-1)?.content ?? "").includes("RESULT_OF_R") ? "RUN_SAW_RESULT" : "RUN_MISSED_RESULT" }),
    });
    const { code, output } = await env.server.exec(["run", "RUN_R"], { timeoutMs: 60_000 });
    expect(code).toBe(0);
    expect(output).toContain("RUN_SAW_RESULT");
    const file = await readTaskFile(env.server);
    const task = file.tasks.find((t) => t.description === "Run R");
    expect(task?.status).toBe("completed");
    // The tool's answer was the notice: nothing is queued for a parent that is gone with the run.
    expect(task?.notifiedRun).toBe(1);
  });

  test("under `opencode run`, a resume waits for the run it starts too: its answer is in the run's answer, and the task ends completed", async () => {
    const { model } = env;
    const calledResults = (r: ChatRequest) => toolResults(r, { sinceLastUser: true }).filter((t) => t.name === "background_task");
    model.script({
      name: "rs-launch",
      match: (r) => lastUserText(r) === "RUN_RS" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "background_task", arguments: { description: "Run RS", prompt: "CHILD_RS1: work", agent: "general" } }] },
    });
    model.script({ name: "rs-child-1", match: (r) => lastUserText(r).includes("CHILD_RS1"), reply: { text: "RESULT_RS1", delayMs: 300 } });
    model.script({ name: "rs-child-2", match: (r) => lastUserText(r).includes("CHILD_RS2"), reply: { text: "RESULT_RS2", delayMs: 1_500 } });
    model.script({
      name: "rs-resume",
      match: (r) => lastUserText(r) === "RUN_RS" && isToolFollowUp(r) && calledResults(r).length === 1,
      reply: (r) => ({ toolCalls: [{ name: "background_task", arguments: { resume: taskIdIn(calledResults(r)[0]!.content), prompt: "CHILD_RS2: more" } }] }),
    });
    model.script({
      name: "rs-after",
      match: (r) => lastUserText(r) === "RUN_RS" && isToolFollowUp(r) && calledResults(r).length === 2,
      reply: (r) => ({ text: calledResults(r)[1]!.content.includes("RESULT_RS2") ? "RUN_SAW_SECOND" : "RUN_MISSED_SECOND" }),
    });
    const { code, output } = await env.server.exec(["run", "RUN_RS"], { timeoutMs: 60_000 });
    expect(code).toBe(0);
    expect(output).toContain("RUN_SAW_SECOND");
    // The resumed child really ran its second prompt, and the run it started ended as it answered, not cut off.
    expect(model.requests.some((r) => r.label === "rs-child-2")).toBe(true);
    const task = (await readTaskFile(env.server)).tasks.find((t) => t.description === "Run RS");
    expect(task).toMatchObject({ status: "completed", run: 2, notifiedRun: 2 });
    expect(task?.error).toBeUndefined();
  });

  test("a launch cut off by a crash (child made, task not yet saved): the child is adopted as interrupted and its parent told", async () => {
    const { model } = env;
    model.script({ name: "a-hello", match: (r) => lastUserText(r) === "HELLO_A", reply: { text: "hi A" } });
    const parent = await newSession(env.server.client, "adopt A");
    await promptText(env.server.client, parent, "HELLO_A");
    // What a process killed between creating the child and saving the task leaves behind.
    const deadPid = spawnSync("true").pid!;
    const offshoot = {
      v: 1,
      taskId: "bg_adopt001",
      parentSessionID: parent,
      description: "Cut off A",
      forked: true,
      agent: "general",
      status: "queued",
      ownerPid: deadPid,
      startedAt: Date.now(),
    };
    const created = await env.server.client.session.create({
      body: { parentID: parent, title: "Background (forked): Cut off A", metadata: { offshoot } } as never,
    });
    const child = created.data!.id;
    expect((await readTaskFile(env.server).catch(() => ({ tasks: [] as { id: string }[] }))).tasks.some((t) => t.id === "bg_adopt001")).toBe(false);

    await restart("SIGKILL");
    const stored = await until("the child adopted", async () => {
      const t = await storedTask(env.server, "bg_adopt001");
      return t?.notifiedRun === 1 && t;
    });
    expect(stored.sessionID).toBe(child);
    expect(stored.status).toBe("interrupted");
    expect(stored.error).toContain("while the task was being launched");
    const msgs = await getMessages(env.server.client, parent);
    expect(notifications(msgs, "bg_adopt001")).toHaveLength(1);
    expect(wakePrompts(msgs)).toHaveLength(0);
    checkDeliveriesLater(env, "A: one notice", parent, { notifications: 1, wakes: 0 });
  });

  test("two OpenCode processes on one project: each keeps its own tasks, the file holds both, nothing crosses over", async () => {
    const { model } = env;
    // The server's task: its child answers only when released.
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    scriptLaunch(model, { name: "s", cue: "SERVE_S", task: { description: "Serve S", prompt: "CHILD_S: wait", agent: "general" }, launched: "Launched S." });
    model.script({ name: "s-child", match: (r) => lastUserText(r).includes("CHILD_S"), reply: async () => (await gate, { text: "done S" }) });
    model.script({ name: "s-wake", match: (r) => isWake(r) && lastUserText(r).includes("Serve S"), reply: { text: "noted S" } });
    const parent = await newSession(env.server.client, "serve S");
    await promptText(env.server.client, parent, "SERVE_S");
    // (a request is labelled once its held reply is known: look for the request itself)
    await until("the server's child at the model", () => model.requests.some((r) => lastUserText(r.body).includes("CHILD_S")));
    const serveTask = taskIdIn(toolOutputs(await getMessages(env.server.client, parent), "background_task")[0]!);

    // A second process (`opencode run`) on the same project starts, runs a task of its own, and exits.
    model.script({
      name: "o-launch",
      match: (r) => lastUserText(r) === "RUN_O" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "background_task", arguments: { description: "Run O", prompt: "CHILD_O: work", agent: "general" } }] },
    });
    model.script({ name: "o-child", match: (r) => lastUserText(r).includes("CHILD_O"), reply: { text: "done O" } });
    model.script({ name: "o-after", match: (r) => lastUserText(r) === "RUN_O" && isToolFollowUp(r), reply: { text: "RUN_O_DONE" } });
    const run = await env.server.exec(["run", "RUN_O"], { timeoutMs: 60_000 });
    expect(run.code).toBe(0);
    expect(run.output).toContain("RUN_O_DONE");

    // The server's task was left alone by the other process's start-up, and both are in the file.
    let file = await readTaskFile(env.server);
    expect(file.tasks.find((t) => t.id === serveTask)?.status).toBe("running");
    expect(file.tasks.find((t) => t.description === "Run O")?.status).toBe("completed");

    release();
    await requestOf(model, "s-wake");
    file = await readTaskFile(env.server);
    expect(file.tasks.find((t) => t.id === serveTask)?.status).toBe("completed");
    expect(file.tasks.find((t) => t.description === "Run O")?.status).toBe("completed");
    const msgs = await getMessages(env.server.client, parent);
    expect(notifications(msgs, serveTask)).toHaveLength(1);
    expect(notifications(msgs)).toHaveLength(1);
    checkDeliveriesLater(env, "S: one notice, one wake", parent, { notifications: 1, wakes: 1 });
  });
});

registerLateChecks(env);

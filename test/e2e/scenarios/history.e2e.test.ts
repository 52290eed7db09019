/**
 * Months of use on the real server: a project whose store holds 20,000 ended tasks (half settled
 * more than 30 days ago) starts, drops what retention says (default options: 30 days, 2,000 tasks),
 * still launches, lists what it kept, and says of a dropped task that it is past the history limit;
 * the version 2 task file of an older plugin is moved in once, with its undelivered notice sent once.
 *
 * The store is prepared between a SIGKILL and the next start, which reads it (no save on the
 * way out). Timing is not asserted here: `npm run bench:store` measures it.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { historyLine } from "../../../src/store/history.js";
import { storeDir } from "../../../src/store-paths.js";
import type { BackgroundTask } from "../../../src/task-record.js";
import { getMessages, isToolFollowUp, lastUserText } from "../harness/index.js";
import {
  checkDeliveriesLater,
  isWake,
  newSession,
  notifications,
  promptList,
  promptText,
  readTaskFile,
  registerLateChecks,
  scriptLaunch,
  taskFilePath,
  taskIdIn,
  toolOutputs,
  until,
  useOpencode,
  wakePrompts,
} from "./helpers.js";

const env = useOpencode();
const DAY = 24 * 3600 * 1000;
const DEAD_PID = 2 ** 22 + 4242;

function ended(i: number, parent: string, completedAt: number, overrides: Partial<BackgroundTask> = {}): BackgroundTask {
  return {
    id: `bg_h${String(i).padStart(7, "0")}`,
    sessionID: `ses_histchild${String(i).padStart(8, "0")}`,
    parentSessionID: parent,
    callID: `call_hist_${i}`,
    description: `History task ${i}`,
    agent: "general",
    isForked: false,
    ownerPid: DEAD_PID,
    status: "completed",
    run: 1,
    notifiedRun: 1,
    reportedRun: 1,
    createdAt: completedAt - 60_000,
    startedAt: completedAt - 60_000,
    completedAt,
    toolCalls: 3,
    ...overrides,
  };
}

/**
 * A crash, then a start on the store as `prepare` leaves it: the files are written once the old
 * process is gone (written while it ran, its own start-up could read them, and the SIGKILL then cut
 * its rewrite short: seen in CI as 22,517 tombstones of 18,000 drops).
 */
async function restartOnPreparedStore(prepare?: () => void) {
  env.ev.close();
  await env.server.restart({ signal: "SIGKILL", afterKill: prepare });
  await env.resubscribe();
}

/** The parent calls a tool in a new turn (user text `cue`); returns the tool's output. */
async function callTool(parent: string, cue: string, tool: string, args: Record<string, unknown>): Promise<string> {
  env.model.script({
    name: `${cue}-call`,
    match: (r) => lastUserText(r) === cue && !isToolFollowUp(r),
    reply: { toolCalls: [{ name: tool, arguments: args }] },
  });
  env.model.script({ name: `${cue}-done`, match: (r) => lastUserText(r) === cue && isToolFollowUp(r), reply: { text: `done ${cue}` } });
  await promptText(env.server.client, parent, cue);
  return toolOutputs(await getMessages(env.server.client, parent), tool).at(-1)!;
}

describe("history over months", () => {
  test("20,000 ended tasks, half older than 30 days: the start drops what retention says, launches, lists what it kept, names a dropped task's child", async () => {
    const parent = await newSession(env.server.client, "history parent");
    const now = Date.now();
    // i < 10,000: settled in the last week (newest first); the rest: more than 30 days ago.
    // One task in 100 is this parent's; the others belong to 99 other (made-up) parents.
    const settledAt = (i: number) => (i < 10_000 ? now - 60_000 - i * 60_000 : now - 31 * DAY - i * 1000);
    const parentOf = (i: number) => (i % 100 === 0 ? parent : `ses_histparent${String(i % 100).padStart(6, "0")}`);
    const dir = storeDir(await taskFilePath(env.server));
    const lines: string[] = [];
    for (let i = 19_999; i >= 0; i--) lines.push(historyLine(ended(i, parentOf(i), settledAt(i)), settledAt(i)));
    await restartOnPreparedStore(() => fs.writeFileSync(path.join(dir, "history.jsonl"), `${lines.join("\n")}\n`, { mode: 0o600 }));

    // It launches.
    scriptLaunch(env.model, {
      name: "hl",
      cue: "HISTORY_LAUNCH",
      task: { description: "After the history", prompt: "CHILD_HL: quick", agent: "general" },
      launched: "Launched HL.",
    });
    env.model.script({ name: "hl-child", match: (r) => lastUserText(r).includes("CHILD_HL"), reply: { text: "done HL" } });
    env.model.script({ name: "hl-wake", match: (r) => isWake(r) && lastUserText(r).includes("After the history"), reply: { text: "noted HL" } });
    const launcher = await newSession(env.server.client, "history launcher");
    await promptText(env.server.client, launcher, "HISTORY_LAUNCH");
    const [launched] = toolOutputs(await getMessages(env.server.client, launcher), "background_task");
    expect(launched).toContain("started");
    const newID = taskIdIn(launched!);

    // Retention: the 2,000 newest kept, nothing settled more than 30 days ago; 18,000 tombstones.
    const stored = await until("the new task saved", async () => {
      const f = await readTaskFile(env.server);
      return f.tasks.some((t) => t.id === newID) && f;
    });
    const kept = stored.tasks.filter((t) => String(t.description).startsWith("History task "));
    expect(kept).toHaveLength(2_000);
    expect(kept.every((t) => Number(t.id.slice(4)) < 2_000)).toBe(true);
    const tombstones = fs.readFileSync(path.join(dir, "dropped.jsonl"), "utf8").split("\n").filter(Boolean);
    expect(tombstones).toHaveLength(18_000);

    // The parent's kept tasks are listed (20 of its 200), a dropped one is named with its child.
    const list = await promptList(env, parent, "HISTORY_LIST");
    for (let i = 0; i < 2_000; i += 100) expect(list).toContain(`bg_h${String(i).padStart(7, "0")}`);
    expect(list).not.toContain("bg_h0002000");
    const byMax = await callTool(parent, "HISTORY_OUT_MAX", "background_output", { task_id: "bg_h0005000" });
    expect(byMax).toContain("task bg_h0005000 is past the history limit");
    expect(byMax).toContain("ses_histchild00005000");
    const byAge = await callTool(parent, "HISTORY_OUT_AGE", "background_task", {
      resume: "bg_h0015000",
      description: "Again",
      prompt: "again",
      agent: "general",
    });
    expect(byAge).toContain("task bg_h0015000 is past the history limit");
    expect(byAge).toContain("ses_histchild00015000");
  });

  test("the version 2 task file of an older plugin is moved in once: nothing lost, its undelivered notice sent once, no wake", async () => {
    const parent = await newSession(env.server.client, "migrated parent");
    const now = Date.now();
    const told = ended(900_001, parent, now - 5 * 60_000, { description: "Told before the upgrade" });
    const owed = ended(900_002, parent, now - 60_000, { description: "Owed a notice", notifiedRun: 0, reportedRun: 0 });
    const legacy = await taskFilePath(env.server);
    await restartOnPreparedStore(() => fs.writeFileSync(legacy, JSON.stringify({ version: 2, tasks: [told, owed] }, null, 2), { mode: 0o600 }));

    await until("the owed notice delivered", async () => notifications(await getMessages(env.server.client, parent), owed.id).length === 1);
    const file = await until("the delivery recorded", async () => {
      const f = await readTaskFile(env.server);
      return f.tasks.find((t) => t.id === owed.id)?.notifiedRun === 1 && f;
    });
    expect(file.tasks.find((t) => t.id === told.id)).toMatchObject({ status: "completed", notifiedRun: 1, reportedRun: 1, description: told.description });
    expect(fs.existsSync(legacy)).toBe(false);
    expect(JSON.parse(fs.readFileSync(`${legacy}.migrated`, "utf8")).tasks).toHaveLength(2);
    const list = await promptList(env, parent, "MIGRATED_LIST");
    expect(list).toContain(told.id);
    expect(list).toContain(owed.id);
    const msgs = await getMessages(env.server.client, parent);
    expect(notifications(msgs)).toHaveLength(1);
    expect(wakePrompts(msgs)).toHaveLength(0);
    checkDeliveriesLater(env, "migrated: one notice, no wake", parent, { notifications: 1, wakes: 0 });
  });

  test("a SIGKILL in the middle of the saves of twelve tasks ending: after the restart every task is there and each parent notice is in once", async () => {
    const count = 12;
    const tasks = Array.from({ length: count }, (_, i) => ({ description: `Storm ${i}`, prompt: `CHILD_STORM${i}: quick`, agent: "general" }));
    env.model.script({
      name: "storm-launch",
      match: (r) => lastUserText(r) === "STORM" && !isToolFollowUp(r),
      reply: { toolCalls: tasks.map((t) => ({ name: "background_task", arguments: t })) },
    });
    env.model.script({ name: "storm-launched", match: (r) => lastUserText(r) === "STORM" && isToolFollowUp(r), reply: { text: "launched storm" } });
    // the children answer one after another, from 1 s after the launch on
    tasks.forEach((_, i) =>
      env.model.script({
        name: `storm-child-${i}`,
        match: (r) => lastUserText(r).includes(`CHILD_STORM${i}:`),
        reply: { text: `done ${i}`, delayMs: 1_000 + i * 150 },
      }),
    );
    env.model.script({ name: "storm-wake", match: (r) => isWake(r) && lastUserText(r).includes("Storm "), reply: { text: "noted storm" } });
    const parent = await newSession(env.server.client, "storm");
    await promptText(env.server.client, parent, "STORM");
    const ids = toolOutputs(await getMessages(env.server.client, parent), "background_task").map(taskIdIn);
    expect(ids).toHaveLength(count);

    // Killed while tasks settle: some lines of theirs are in the history, others are still to come.
    const history = path.join(storeDir(await taskFilePath(env.server)), "history.jsonl");
    const linesOf = () =>
      fs.existsSync(history)
        ? fs
            .readFileSync(history, "utf8")
            .split("\n")
            .filter((l) => ids.some((id) => l.includes(`"${id}"`))).length
        : 0;
    await until("a few of the tasks settled", () => linesOf() >= 3, 20_000);
    await restartOnPreparedStore();

    const file = await until(
      "every task settled again after the restart",
      async () => {
        const f = await readTaskFile(env.server);
        const mine = f.tasks.filter((t) => ids.includes(t.id));
        return mine.length === count && mine.every((t) => t.notifiedRun === t.run) && mine;
      },
      30_000,
    );
    for (const t of file) expect(["completed", "interrupted"]).toContain(t.status);
    const msgs = await getMessages(env.server.client, parent);
    for (const id of ids) expect(notifications(msgs, id), `notices of ${id}`).toHaveLength(1);
    env.later("storm: each notice once", async () => {
      const later = await getMessages(env.server.client, parent);
      for (const id of ids) expect(notifications(later, id)).toHaveLength(1);
    });
  });
});

registerLateChecks(env);

/**
 * Scenario g: eight forked tasks launched in ONE assistant reply (eight background_task calls run
 * in parallel by OpenCode). Every child gets its context and answers; the parent gets eight distinct
 * notifications, each once, and one wake-up.
 */
import path from "node:path";
import { describe, expect, test } from "vitest";
import { getMessages, hasToolResult, isToolFollowUp, lastUserText, textOf, toolParts } from "../harness/index.js";
import {
  NOTIFICATION_PREFIX,
  PREAMBLE_START,
  TASK_ID_RE_G,
  checkDeliveriesLater,
  launchAll,
  promptList,
  requestOf,
  children,
  isWake,
  lastAssistant,
  newSession,
  notifications,
  promptText,
  readTaskFile,
  registerLateChecks,
  taskIdIn,
  toolOutputs,
  turnEndsAfter,
  until,
  useOpencode,
  userMessages,
  userTextsJoined,
  wakePrompts,
} from "./helpers.js";

const N = 8;
const NOTES = Array.from({ length: 120 }, (_, i) => `note ${i}: background work item ${i * 7}`).join("\n") + "\n";

// These scenarios are about notices and wakes, not the queue (queue.e2e): every task runs at once.
const env = useOpencode({ files: { "notes.txt": NOTES }, pluginOptions: { concurrency: 64 } });

describe("eight forks in one turn", () => {
  test("g. eight forked tasks from one reply: all complete with context; 8 distinct notifications, each once; one wake", async () => {
    const { model, server } = env;
    const cue = "EIGHT_G";
    const mine = (r: Parameters<typeof lastUserText>[0]) => lastUserText(r) === cue;
    model.script({
      name: "g-read",
      match: (r) => mine(r) && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "read", arguments: { filePath: path.join(server.directory, "notes.txt") } }] },
    });
    model.script({
      name: "g-fork8",
      match: (r) => mine(r) && hasToolResult(r, "read", { sinceLastUser: true }) && !hasToolResult(r, "background_task", { sinceLastUser: true }),
      reply: {
        toolCalls: Array.from({ length: N }, (_, i) => ({
          name: "background_task",
          arguments: { description: `Eight G #${i + 1}`, prompt: `CHILD_TASK_G_${i + 1}: handle item ${i + 1}`, agent: "general", fork: true },
        })),
      },
    });
    model.script({
      name: "g-launched",
      match: (r) => mine(r) && hasToolResult(r, "background_task", { sinceLastUser: true }),
      reply: { text: "Launched eight." },
    });
    // Children 1-7 answer at once: they end while the parent's turn still runs, so their notifications
    // wait for its idle. Child 8 answers only once the parent has started receiving those
    // notifications: it ends while they are being delivered (a task ending mid-delivery).
    let releaseLast!: () => void;
    const lastGate = new Promise<void>((r) => (releaseLast = r));
    model.script({
      name: "g-child",
      match: (r) => /^CHILD_TASK_G_\d+:/.test(lastUserText(r)),
      reply: async (r) => {
        const n = Number(/^CHILD_TASK_G_(\d+):/.exec(lastUserText(r))![1]);
        if (n === N) await lastGate;
        return { text: `G_ANSWER_${n}` };
      },
    });
    model.script({ name: "g-wake", match: (r) => isWake(r) && lastUserText(r).includes('"Eight G #'), reply: { text: "PARENT_DONE_G" } });

    const parent = await newSession(server.client, "eight G");
    const firstNote = env.ev.waitFor(
      (e) =>
        e.type === "message.part.updated" &&
        e.properties.part?.sessionID === parent &&
        e.properties.part?.type === "text" &&
        String(e.properties.part?.text ?? "").startsWith(NOTIFICATION_PREFIX),
      30_000,
      { since: env.ev.mark() },
    );
    void firstNote.then(releaseLast, releaseLast);
    await promptText(server.client, parent, cue);
    const wakeReq = await turnEndsAfter(env, parent, "g-wake", 30_000);

    // Every notification is there (waited for: one delivered late would still count as delivered).
    const parentMsgs = await until(
      "eight notifications",
      async () => {
        const msgs = await getMessages(server.client, parent);
        return notifications(msgs).length >= N ? msgs : undefined;
      },
      15_000,
    );
    const [readOut] = toolOutputs(parentMsgs, "read");
    // The eight calls were made by one assistant message.
    const bgMessages = parentMsgs.filter((m) => m.parts.some((p) => p.type === "tool" && p.tool === "background_task"));
    expect(bgMessages).toHaveLength(1);
    const launches = toolOutputs(parentMsgs, "background_task");
    expect(launches).toHaveLength(N);
    for (const out of launches) expect(out).toMatch(/^Background task bg_[0-9a-z]{8} started \(forked\)/);
    const ids = launches.map(taskIdIn);
    expect(new Set(ids).size).toBe(N);

    // Every child: a real child session that got the context and answered.
    const kids = await children(server.client, parent);
    expect(kids).toHaveLength(N);
    const answerOfTask = new Map<string, string>();
    const stored = (await readTaskFile(server)).tasks.filter((t) => t.parentSessionID === parent);
    expect(stored).toHaveLength(N);
    for (const kid of kids) {
      expect(kid.parentID).toBe(parent);
      const n = /^Background \(forked\): Eight G #(\d+)$/.exec(kid.title)?.[1];
      expect(n, kid.title).toBeDefined();
      const msgs = await getMessages(server.client, kid.id);
      const users = userMessages(msgs);
      expect(users).toHaveLength(2);
      const inherited = textOf(users[0]!);
      expect(inherited.startsWith(PREAMBLE_START)).toBe(true);
      expect(inherited).toContain("<inherited_context>");
      expect(inherited).toContain(readOut!);
      expect(textOf(users[1]!)).toBe(`CHILD_TASK_G_${n}: handle item ${n}`);
      expect(textOf(lastAssistant(msgs)!)).toBe(`G_ANSWER_${n}`);
      const task = stored.find((t) => t.sessionID === kid.id)!;
      expect(task).toMatchObject({ status: "completed", isForked: true, run: 1, notifiedRun: 1 });
      answerOfTask.set(task.id, `G_ANSWER_${n}`);
    }
    expect([...answerOfTask.keys()].sort()).toEqual([...ids].sort());

    // The model received the context in each of the eight child requests, once per child.
    const childReqs = model.requests.filter((r) => r.label === "g-child");
    expect(childReqs).toHaveLength(N);
    expect(new Set(childReqs.map((r) => lastUserText(r.body))).size).toBe(N);
    for (const r of childReqs) {
      const sent = userTextsJoined(r.body);
      expect(sent).toContain("<inherited_context>");
      expect(sent).toContain(readOut!);
    }

    // Eight distinct notifications, each exactly once, each with its own child's answer; one wake.
    expect(notifications(parentMsgs)).toHaveLength(N);
    for (const id of ids) {
      const notes = notifications(parentMsgs, id);
      expect(notes, id).toHaveLength(1);
      expect(textOf(notes[0]!)).toContain(answerOfTask.get(id)!);
    }
    const noteIDs = new Set(notifications(parentMsgs).map((m) => m.info.id));
    expect(parentMsgs.filter((m) => m.info.role === "assistant" && noteIDs.has(m.info.parentID))).toHaveLength(0);
    const wakes = wakePrompts(parentMsgs);
    expect(wakes).toHaveLength(1);
    expect(new Set(textOf(wakes[0]!).match(TASK_ID_RE_G))).toEqual(new Set(ids));
    expect(model.requests.filter((r) => r.label === "g-wake")).toHaveLength(1);

    // Latency (printed, not asserted): each background_task part running → its child's prompt at the model.
    const latencies = toolParts(parentMsgs, "background_task").map((p) => {
      const req = childReqs.find((r) => lastUserText(r.body) === p.state.input.prompt)!;
      return req.at - (p.state.time.start as number);
    });
    const toolSpans = toolParts(parentMsgs, "background_task").map((p) => (p.state.time.end as number) - (p.state.time.start as number));
    console.log(
      `[latency] 8 parallel forks: background_task running → child's prompt at the model min ${Math.min(...latencies)} / max ${Math.max(...latencies)} ms;` +
        ` tool part running → completed max ${Math.max(...toolSpans)} ms`,
    );

    checkDeliveriesLater(env, "g: eight notifications, one wake", parent, { notifications: N, wakes: 1 });

    // No notification came inside the parent's running turn (they wait for its idle).
    const turnEnd = parentMsgs.findIndex((m) => m.info.role === "assistant" && textOf(m) === "Launched eight.");
    for (const note of notifications(parentMsgs)) expect(parentMsgs.indexOf(note)).toBeGreaterThan(turnEnd);
    // The wake-up comes after all eight notifications: the woken parent's model saw every one of them.
    const seenByWake = userTextsJoined(wakeReq.body);
    const missing = ids.filter((id) => !seenByWake.includes(`${NOTIFICATION_PREFIX}${id} completed]`));
    expect(missing, "tasks whose notification the wake-up overtook").toEqual([]);
    const wakeIndex = parentMsgs.indexOf(wakes[0]!);
    for (const note of notifications(parentMsgs)) expect(parentMsgs.indexOf(note)).toBeLessThan(wakeIndex);
  });

  describe("thirty-two tasks in one turn", () => {
    test("thirty-two launches in one reply: each notified once, one wake, and the list, the notices and the file agree", async () => {
      const tasks = Array.from({ length: 32 }, (_, i) => ({ description: `Many M${i}`, prompt: `CHILD_M${i}`, agent: "general" }));
      env.model.script({ name: "m-child", match: (r) => lastUserText(r).startsWith("CHILD_M"), reply: { text: "done M" } });
      const { parent, ids } = await launchAll(env, "MANY_M", tasks);
      expect(new Set(ids).size).toBe(32);
      await requestOf(env.model, "MANY_M-wake", 60_000);
      const msgs = await getMessages(env.server.client, parent);
      for (const id of ids) expect(notifications(msgs, id)).toHaveLength(1);
      expect(wakePrompts(msgs)).toHaveLength(1);
      // The wake is recorded (reportedRun) right after it is sent.
      const file = await until("the wake recorded", async () => {
        const f = await readTaskFile(env.server);
        return ids.every((id) => f.tasks.find((x) => x.id === id)?.reportedRun === 1) && f;
      });
      for (const id of ids) {
        const t = file.tasks.find((x) => x.id === id)!;
        expect([t.status, t.notifiedRun, t.reportedRun]).toEqual(["completed", 1, 1]);
      }
      const listed = await promptList(env, parent, "LIST_M");
      expect(listed).toContain("32 tasks: 32 completed");
      checkDeliveriesLater(env, "M: 32 notices, one wake", parent, { notifications: 32, wakes: 1 });
    });
  });

  registerLateChecks(env);
});

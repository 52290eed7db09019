/**
 * A user's first message after a restart, on the real server: the notices of the tasks a crash
 * interrupted are waiting, and the user types while the plugin's start-up is still under way, after
 * it has asked the server which sessions are busy (the parent was idle then). The user's turn must see
 * no notice after the user's words, in any of its model requests; the notices go out once, after the
 * turn, and nobody is woken.
 *
 * To hold the start-up at that point, the task file is locked by a live writer (this test process)
 * while OpenCode starts: the plugin has read the busy sessions and ended the stopped tasks (their
 * children's metadata say so) and waits to save them before their notices go out. The user's turn
 * calls background_list, which answers once the start-up is over: its follow-up request is built
 * after the plugin has had its chance to deliver.
 */
import fs from "node:fs";
import { hostname } from "node:os";
import path from "node:path";
import { storeDir } from "../../../src/store-paths.js";
import { describe, expect, test } from "vitest";
import { type ChatRequest, getMessages, isToolFollowUp, lastUserText, messageText, textOf, userTexts } from "../harness/index.js";
import {
  NOTIFICATION_PREFIX,
  WAKE_PREFIX,
  checkDeliveriesLater,
  children,
  newSession,
  notifications,
  promptText,
  registerLateChecks,
  taskFilePath,
  taskIdIn,
  toolOutputs,
  until,
  useOpencode,
  wakePrompts,
} from "./helpers.js";

const env = useOpencode();

/** Whether the request holds a tool result after the user's message `cue` (the turn's second step). */
function afterToolCall(r: ChatRequest, cue: string): boolean {
  const at = r.messages.map((m) => m.role === "user" && messageText(m) === cue).lastIndexOf(true);
  return at >= 0 && r.messages.slice(at + 1).some((m) => m.role === "tool");
}

describe("restart with notices waiting", () => {
  test("a user's message sent during start-up: no notice after the user's words in that turn; every notice once, after it; no wake", async () => {
    const { model } = env;
    const count = 5; // (the default concurrency: all of them run)
    const tasks = Array.from({ length: count }, (_, i) => ({ description: `Stuck T${i}`, prompt: `CHILD_T${i}: long job`, agent: "general" }));
    model.script({
      name: "t-launch",
      match: (r) => lastUserText(r) === "LAUNCH_T" && !isToolFollowUp(r),
      reply: { toolCalls: tasks.map((t) => ({ name: "background_task", arguments: t })) },
    });
    model.script({ name: "t-launched", match: (r) => lastUserText(r) === "LAUNCH_T" && isToolFollowUp(r), reply: { text: "Launched T." } });
    model.script({ name: "t-child", match: (r) => lastUserText(r).includes("CHILD_T"), reply: { text: "never", delayMs: 120_000 } });
    // The user's turn, matched by the user's words wherever they are (a notice after them is seen, not missed).
    model.script({
      name: "t-turn",
      match: (r) => userTexts(r).includes("FIRST_T"),
      reply: (r) => (afterToolCall(r, "FIRST_T") ? { text: "Answered the user." } : { toolCalls: [{ name: "background_list", arguments: {} }] }),
    });
    const parent = await newSession(env.server.client, "restart T");
    await promptText(env.server.client, parent, "LAUNCH_T");
    await until(`${count} children at the model`, () => model.requests.filter((r) => r.label === "t-child").length === count);
    const ids = toolOutputs(await getMessages(env.server.client, parent), "background_task").map(taskIdIn);
    expect(ids).toHaveLength(count);
    const kids = (await children(env.server.client, parent)).map((c) => c.id);
    expect(kids).toHaveLength(count);

    // A live writer holds the store's lock (open.json's; kept fresh, so it is never taken as a hung one).
    const lock = `${path.join(storeDir(await taskFilePath(env.server)), "open.json")}.lock`;
    fs.writeFileSync(lock, JSON.stringify({ pid: process.pid, hostname: hostname(), createdAt: Date.now() }));
    const fresh = setInterval(() => fs.existsSync(lock) && fs.utimesSync(lock, new Date(), new Date()), 1_000);
    try {
      env.ev.close();
      await env.server.restart({ signal: "SIGKILL" });
      await env.resubscribe(); // (the first request: OpenCode loads the plugin, whose start-up begins)
      // A task's new state is published once its save returns (saved before told), and every save
      // attempt waits for the held lock (3 s, four attempts) before it gives up: the start-up's
      // endings show after that, not at once.
      await until(
        "the stopped tasks ended by the start-up (their children's metadata)",
        async () => {
          const states = await Promise.all(
            kids.map(async (id) => (await env.server.client.session.get({ path: { id } })).data as { metadata?: { offshoot?: { status?: string } } }),
          );
          return states.every((s) => s?.metadata?.offshoot?.status === "interrupted");
        },
        60_000,
      );
      const sent = await env.server.client.session.promptAsync({ path: { id: parent }, body: { parts: [{ type: "text", text: "FIRST_T" }] } });
      expect(sent.error).toBeUndefined();
      await until("the user's turn at the model", () => model.requests.some((r) => r.label === "t-turn"), 20_000);
    } finally {
      clearInterval(fresh);
      fs.rmSync(lock, { force: true });
    }

    await until("the user's turn answered", () => model.requests.some((r) => r.label === "t-turn" && afterToolCall(r.body, "FIRST_T")), 30_000);
    for (const r of model.requests.filter((q) => q.label === "t-turn")) {
      const texts = userTexts(r.body);
      expect(texts.slice(texts.lastIndexOf("FIRST_T") + 1)).toEqual([]); // nothing after the user's words
    }

    await until("every notice delivered", async () => notifications(await getMessages(env.server.client, parent)).length >= count, 20_000);
    const msgs = await getMessages(env.server.client, parent);
    for (const id of ids) expect(notifications(msgs, id)).toHaveLength(1);
    expect(notifications(msgs)).toHaveLength(count);
    expect(wakePrompts(msgs)).toHaveLength(0);
    // In the parent: the user's message, the turn's answer, then the notices.
    const userAt = msgs.findIndex((m) => m.info.role === "user" && textOf(m) === "FIRST_T");
    const answerAt = msgs.findIndex((m, i) => i > userAt && m.info.role === "assistant" && textOf(m).includes("Answered the user."));
    const noticeAts = msgs.flatMap((m, i) => (m.info.role === "user" && textOf(m).startsWith(NOTIFICATION_PREFIX) ? [i] : []));
    expect(userAt).toBeGreaterThan(-1);
    expect(answerAt).toBeGreaterThan(userAt);
    expect(noticeAts.every((i) => i > answerAt)).toBe(true);
    checkDeliveriesLater(env, "T: one notice each, no wake", parent, { notifications: count, wakes: 0 });
  }, 150_000);
});

describe("a notice that sorts after the user's words", () => {
  test("the model sees it before them: the user's message stays the last thing before the answer", async () => {
    const { model } = env;
    model.script({
      name: "o-launch",
      match: (r) => lastUserText(r) === "LAUNCH_O" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "background_task", arguments: { description: "Order O", prompt: "CHILD_O: job", agent: "general" } }] },
    });
    model.script({ name: "o-launched", match: (r) => lastUserText(r) === "LAUNCH_O" && isToolFollowUp(r), reply: { text: "Launched O." } });
    model.script({ name: "o-child", match: (r) => lastUserText(r).includes("CHILD_O"), reply: { text: "child O done", delayMs: 1_500 } });
    model.script({ name: "o-wake", match: (r) => userTexts(r).includes("USER_O"), reply: { text: "Read it." } });
    const parent = await newSession(env.server.client, "order O");
    await promptText(env.server.client, parent, "LAUNCH_O");
    // The user's words are stored while the task runs (nothing answers them yet); the task then ends
    // while the parent is idle, so its notice is stored after them, then the wake starts a turn.
    const stored = await env.server.client.session.prompt({ path: { id: parent }, body: { noReply: true, parts: [{ type: "text", text: "USER_O" }] } });
    expect(stored.error).toBeUndefined();
    await until("the wake's turn at the model", () => model.requests.some((r) => r.label === "o-wake"), 30_000);

    const msgs = await getMessages(env.server.client, parent);
    const userAt = msgs.findIndex((m) => m.info.role === "user" && textOf(m) === "USER_O");
    const noticeAt = msgs.findIndex((m) => m.info.role === "user" && textOf(m).startsWith(NOTIFICATION_PREFIX));
    expect(noticeAt).toBeGreaterThan(userAt); // stored after the user's words
    const texts = userTexts(model.requests.find((r) => r.label === "o-wake")!.body);
    const seenNotice = texts.findIndex((t) => t.startsWith(NOTIFICATION_PREFIX));
    expect(seenNotice).toBeGreaterThan(-1);
    expect(seenNotice).toBeLessThan(texts.indexOf("USER_O")); // but shown to the model before them
    // and so is the wake that started the turn: the user's words are what the model answers
    const seenWake = texts.findIndex((t) => t.startsWith(WAKE_PREFIX));
    expect(seenWake).toBeGreaterThan(seenNotice);
    expect(texts.at(-1)).toBe("USER_O");
    checkDeliveriesLater(env, "O: one notice, one wake", parent, { notifications: 1, wakes: 1 });
  });
});

registerLateChecks(env);

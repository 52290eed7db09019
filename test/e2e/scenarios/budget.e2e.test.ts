/**
 * The budget of a parent session's background work on the real server (manager/budget.ts), with the
 * scripted model reporting each step's usage: five tasks against the budget and the warning at 80%;
 * at 100% a refused launch and the running children paused after their step; the agent's own
 * attempt to raise it refused; a person's raise and "Continue" through the TUI's request channel
 * (the child's metadata, as /tasks writes it; the TUI itself: test/tui/budget.test.ts), the task
 * going on in place; and a SIGKILL while tasks are paused.
 */
import { describe, expect, test } from "vitest";
import { getMessages, isToolFollowUp, lastUserText, textOf } from "../harness/index.js";
import { REQUEST_KEY } from "../../../src/task-state.js";
import { formatTokens } from "../../../src/format.js";
import {
  children,
  isWake,
  launchAll,
  newSession,
  notifications,
  promptList,
  promptText,
  registerLateChecks,
  storedTask,
  toolOutputs,
  until,
  useOpencode,
  userMessages,
} from "./helpers.js";

const BUDGET = 10_000;
const env = useOpencode({ pluginOptions: { sessionBudgetTokens: BUDGET, sessionBudgetCost: 0 }, files: { "notes.txt": "a line\n" } });

const CONTINUE = "Continue the task where you stopped";
const budgetNotices = async (parent: string) =>
  userMessages(await getMessages(env.server.client, parent))
    .map(textOf)
    .filter((t) => t.startsWith("[background budget reached]"));

/** A child that reads one more line per step (a new offset each time) and reports `tokens` uncached input tokens; on "Continue…" it answers. */
function scriptLooper(cue: string, tokens: number) {
  let step = 0;
  env.model.script({
    name: `${cue}-child`,
    match: (r) => lastUserText(r).includes(cue),
    reply: () => ({
      toolCalls: [{ name: "read", arguments: { filePath: `${env.server.directory}/notes.txt`, offset: ++step } }],
      usage: { prompt_tokens: tokens, completion_tokens: 0 },
      delayMs: 200,
    }),
  });
}

/** The parent runs one turn whose tool calls are `calls`; returns background_task's outputs of that turn. */
async function parentTurn(parent: string, cue: string, calls: { name: string; arguments: object }[]) {
  env.model.script({ name: `${cue}-calls`, match: (r) => lastUserText(r) === cue && !isToolFollowUp(r), reply: { toolCalls: calls } });
  env.model.script({ name: `${cue}-done`, match: (r) => lastUserText(r) === cue && isToolFollowUp(r), reply: { text: `done ${cue}` } });
  const before = toolOutputs(await getMessages(env.server.client, parent), "background_task").length;
  await promptText(env.server.client, parent, cue);
  return toolOutputs(await getMessages(env.server.client, parent), "background_task").slice(before);
}

/** What /tasks does: a request in the child's metadata (keeping what is there); resolves with the server's answer. */
async function tuiRequest(childID: string, kind: string, id: string) {
  const current = await env.server.client.session.get({ path: { id: childID } });
  const metadata = { ...((current.data as { metadata?: Record<string, unknown> }).metadata ?? {}), [REQUEST_KEY]: { kind, id } };
  await env.server.client.session.update({ path: { id: childID }, body: { metadata } as never });
  return until(`the answer to ${id}`, async () => {
    const s = await env.server.client.session.get({ path: { id: childID } });
    const answered = (s.data as { metadata?: { offshoot?: { answered?: { id: string; error?: string } } } }).metadata?.offshoot?.answered;
    return answered?.id === id && answered;
  });
}

describe("a session's background budget", () => {
  test("five tasks warn at 80%; at 100% launches are refused, running children pause after their step, the parent is told once; a person raises it and continues a task in place", async () => {
    // five tasks of 1.6k tokens each: 8.0k of 10k, the warning
    for (let i = 1; i <= 5; i++)
      env.model.script({
        name: `five-${i}`,
        match: (r) => lastUserText(r).includes(`CHILD_FIVE_${i}`),
        reply: { text: `five ${i}`, usage: { prompt_tokens: 1600, completion_tokens: 0 } },
      });
    const { parent, ids } = await launchAll(
      env,
      "FIVE",
      [1, 2, 3, 4, 5].map((i) => ({ description: `Five ${i}`, prompt: `CHILD_FIVE_${i}`, agent: "general" })),
    );
    for (const id of ids) await until(`${id} completed`, async () => (await storedTask(env.server, id))?.status === "completed");
    await until("every notice", async () => notifications(await getMessages(env.server.client, parent)).length === 5);
    const notes = notifications(await getMessages(env.server.client, parent)).map(textOf);
    expect(notes.some((n) => n.includes("budget: 8.0k of 10k tokens charged in full (80%) of this session's background budget spent"))).toBe(true);
    const listed = await promptList(env, parent, "LIST_FIVE");
    expect(listed).toContain("budget: 8.0k of 10k tokens charged in full (80%) of this session's background budget spent");

    // two children that keep working, 700 tokens a step: the budget is reached within three steps
    scriptLooper("CHILD_LOOP_X", 700);
    scriptLooper("CHILD_LOOP_Y", 700);
    const launched = await parentTurn(parent, "LOOP", [
      { name: "background_task", arguments: { description: "Loop X", prompt: "CHILD_LOOP_X", agent: "general" } },
      { name: "background_task", arguments: { description: "Loop Y", prompt: "CHILD_LOOP_Y", agent: "general" } },
    ]);
    const [x, y] = launched.map((o) => /bg_[0-9a-z]{8}/.exec(o)![0]);
    for (const id of [x!, y!]) await until(`${id} paused`, async () => (await storedTask(env.server, id))?.status === "paused", 30_000);
    const paused = (await storedTask(env.server, x!))!;
    // The figures are what the provider charged: every request of X and Y the model answered (700
    // each, Y's step still in flight when X's crossed the budget among them) is counted, and no
    // request went out after a pause was decided (it waits at the gate until the abort is done:
    // step-gate.ts). The next check runs after the server went quiet, so a late request would show.
    const charged = (label: string) => env.model.requests.filter((r) => r.label === label).length * 700;
    const counted = async (id: string) => ((await storedTask(env.server, id))!.usage as { input?: number } | undefined)?.input;
    const childrenOf = await Promise.all([x!, y!].map(async (id) => (await storedTask(env.server, id))!.sessionID));
    await until("X's and Y's children idle", async () => {
      const status = (await env.server.client.session.status()).data as Record<string, unknown> | undefined;
      return childrenOf.every((c) => !status?.[c]) || undefined;
    });
    expect(await counted(x!)).toBe(charged("CHILD_LOOP_X-child"));
    expect(await counted(y!)).toBe(charged("CHILD_LOOP_Y-child"));
    const spent = 5 * 1600 + charged("CHILD_LOOP_X-child") + charged("CHILD_LOOP_Y-child");
    expect(paused.error).toMatch(
      /^paused after its step: this session's background budget is reached \(\d+(\.\d)?k of 10k tokens charged in full \(1\d\d%\)\)/,
    );
    // nothing of a pause is an end: no notice of X or Y; the parent is told once, when idle. The next
    // turn waits for that notice: a noReply prompt that lands just after a new turn's own message
    // becomes that turn's last user text (the server's order, not ours), and the turn's scripted
    // calls would never be made.
    expect(notifications(await getMessages(env.server.client, parent), x)).toEqual([]);
    await until("the budget notice", async () => (await budgetNotices(parent)).length === 1);
    expect((await budgetNotices(parent))[0]).toMatch(/Paused after their current step \(nothing lost; each goes on in place\): bg_/);

    // the agent: no new launch, and no raising its own ceiling; both replies say who can
    const refusals = await parentTurn(parent, "MORE", [
      { name: "background_task", arguments: { description: "One more", prompt: "never", agent: "general" } },
      { name: "background_task", arguments: { description: "Raise", prompt: "never", agent: "general", sessionBudgetTokens: 1_000_000_000 } },
    ]);
    expect(refusals[0]).toContain(`${formatTokens(spent)} of 10k tokens charged in full (${Math.round(spent / 100)}%)`);
    expect(refusals[0]).toMatch(
      /^Error: this session's background budget is reached: .* of 10k tokens charged in full \(1\d\d%\)\. Nothing was started\. Only a person can raise it: in the TUI, \/tasks/,
    );
    expect(refusals[1]).toMatch(
      /^Error: the budget of this session's background work cannot be raised by an agent\. Nothing was started\. Only a person can raise it/,
    );
    expect((await children(env.server.client, parent)).length).toBe(7);
    expect(await budgetNotices(parent)).toHaveLength(1);

    // a person raises it (/tasks), then continues X: the same child, its history kept, on its model
    const child = paused.sessionID;
    const beforeIds = (await getMessages(env.server.client, child)).map((m) => m.info.id);
    expect(await tuiRequest(child, "raise-budget", "req_raise")).toEqual({
      id: "req_raise",
      message: "the session's background budget is now 20k tokens charged in full",
    });
    env.model.script({
      name: "x-continued",
      match: (r) => lastUserText(r).startsWith(CONTINUE) && JSON.stringify(r.messages).includes("CHILD_LOOP_X"),
      reply: { text: "X_DONE" },
    });
    env.model.script({ name: "x-wake", match: (r) => isWake(r) && lastUserText(r).includes("Loop X"), reply: { text: "noted X" } });
    expect(await tuiRequest(child, "continue", "req_continue")).toEqual({ id: "req_continue", message: `task ${paused.id} continues in place` });
    await until("X completed", async () => (await storedTask(env.server, x!))?.status === "completed", 20_000);
    const done = (await storedTask(env.server, x!))!;
    expect(done).toMatchObject({ sessionID: child, run: 1 });
    const msgs = await getMessages(env.server.client, child);
    // its history kept: every earlier message is still there, then the continue prompt and the answer
    expect(msgs.slice(0, beforeIds.length).map((m) => m.info.id)).toEqual(beforeIds);
    expect(msgs.slice(beforeIds.length).map(textOf).join("\n")).toContain(CONTINUE);
    expect(JSON.parse(env.model.requests.find((r) => r.label === "x-continued")!.raw).model).toBe("mock-model");
    await until("X's one notice", async () => notifications(await getMessages(env.server.client, parent), x).length === 1);
    expect(textOf(notifications(await getMessages(env.server.client, parent), x)[0]!)).toContain("status: completed");
    expect(await budgetNotices(parent)).toHaveLength(1);
  });

  test("a SIGKILL while a task is paused: after the restart it is still paused, the budget still holds, nothing is told twice", async () => {
    scriptLooper("CHILD_KILL_K", 4_000);
    const parent = await newSession(env.server.client, "KILL");
    const [out] = await parentTurn(parent, "KILL_GO", [
      { name: "background_task", arguments: { description: "Loop K", prompt: "CHILD_KILL_K", agent: "general" } },
    ]);
    const k = /bg_[0-9a-z]{8}/.exec(out!)![0];
    await until("K paused", async () => (await storedTask(env.server, k))?.status === "paused", 30_000);
    await until("the budget notice", async () => (await budgetNotices(parent)).length === 1);

    env.ev.close();
    await env.server.restart({ signal: "SIGKILL" });
    await env.resubscribe();

    expect((await storedTask(env.server, k))?.status).toBe("paused");
    const [refused] = await parentTurn(parent, "KILL_MORE", [
      { name: "background_task", arguments: { description: "After kill", prompt: "never", agent: "general" } },
    ]);
    expect(refused).toMatch(/^Error: this session's background budget is reached: 12k of 10k tokens charged in full \(120%\)\. Nothing was started\./);
    expect((await storedTask(env.server, k))?.status).toBe("paused");
    expect(await budgetNotices(parent)).toHaveLength(1);
    expect(notifications(await getMessages(env.server.client, parent), k)).toEqual([]);
    env.later("K: told once, never again", async () => {
      expect(await budgetNotices(parent)).toHaveLength(1);
      expect(notifications(await getMessages(env.server.client, parent), k)).toEqual([]);
    });
  });
});

registerLateChecks(env);

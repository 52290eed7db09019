import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import server from "../../../src/index.js";
import { isNoticeMessage, noticesBeforeUserWords } from "../../../src/manager/parent/turn-order.js";
import { buildTaskNotification, buildWakePrompt } from "../../../src/manager/parent/notices.txt.js";
import { budgetNotice } from "../../../src/manager/spend/budget.txt.js";
import type { BackgroundTask } from "../../../src/task-record.js";

// The shapes OpenCode really sends (recorded from the real server by scripts/record-fixtures.ts).
const recorded = JSON.parse(readFileSync(new URL("../../fixtures/recorded/session.messages.full.json", import.meta.url), "utf8")).data as any[];
const userTemplate = recorded.find((m) => m.info.role === "user");
const assistantTemplate = recorded.find((m) => m.info.role === "assistant");

function message(template: any, id: string, text: string) {
  const m = structuredClone(template);
  m.info.id = id;
  m.parts = [{ ...structuredClone(template.parts.find((p: any) => p.type === "text") ?? { type: "text" }), id: `${id}_p`, messageID: id, type: "text", text }];
  return m;
}
const user = (id: string, text = `the user's words ${id}`) => message(userTemplate, id, text);
const assistant = (id: string) => message(assistantTemplate, id, `answer ${id}`);
const task = (id: string) =>
  ({ id, description: `job ${id}`, status: "completed", agent: "general", startedAt: 1, endedAt: 2, toolCalls: 0, run: 1 }) as unknown as BackgroundTask;
// The very text the plugin stores as a notice.
const notice = (id: string) => message(userTemplate, `n_${id}`, buildTaskNotification(task(id), "done", 3));
const ids = (messages: any[]) => messages.map((m) => m.info.id);

describe("notices never sit after the user's words in what the model sees", () => {
  it("a notice that sorted after the user's message is moved before it; the turn's later steps keep that order", () => {
    const first = [user("u1"), assistant("a1"), user("u2"), notice("bg_aaaa"), notice("bg_bbbb")];
    expect(noticesBeforeUserWords(first)).toBe(2);
    expect(ids(first)).toEqual(["u1", "a1", "n_bg_aaaa", "n_bg_bbbb", "u2"]);
    expect(first.at(-1).parts[0].text).toBe("the user's words u2");

    // the next request of the same turn: the same history plus the answer, the same order
    const next = [user("u1"), assistant("a1"), user("u2"), notice("bg_aaaa"), notice("bg_bbbb"), assistant("a2")];
    noticesBeforeUserWords(next);
    expect(ids(next)).toEqual(["u1", "a1", "n_bg_aaaa", "n_bg_bbbb", "u2", "a2"]);
  });

  it("leaves alone what was already in order: notices delivered while idle, then the wake or the user's next message", () => {
    const history = [user("u1"), assistant("a1"), notice("bg_aaaa"), notice("bg_bbbb"), user("wake"), assistant("a2")];
    const before = ids(history);
    expect(noticesBeforeUserWords(history)).toBe(0);
    expect(ids(history)).toEqual(before);
  });

  it("the wake and the budget's notice are the plugin's too: a person's words sent as the parent was woken are what the model answers", () => {
    const wake = message(userTemplate, "w1", buildWakePrompt([task("bg_ffff")], []));
    const budget = message(userTemplate, "b1", budgetNotice({ tokens: 10_500, cost: 0 }, { tokens: 10_000, cost: 0 }, ["bg_gggg"]));
    const history = [user("u1"), assistant("a1"), user("u2"), wake, budget];
    expect(noticesBeforeUserWords(history)).toBe(2);
    expect(ids(history)).toEqual(["u1", "a1", "w1", "b1", "u2"]);
    expect(isNoticeMessage(user("x", "Background tasks you started have ended, I think?"))).toBe(false);
  });

  it("changes nothing in a recorded conversation without notices", () => {
    const copy = structuredClone(recorded);
    expect(noticesBeforeUserWords(copy)).toBe(0);
    expect(copy).toEqual(recorded);
  });

  it("a user's message that only quotes a notice, or has more parts, is the user's", () => {
    const quoted = user("q", `see this: ${notice("bg_cccc").parts[0].text}`);
    const twoParts = notice("bg_dddd");
    twoParts.parts.push({ ...twoParts.parts[0], id: "extra", text: "and a file" });
    expect(isNoticeMessage(notice("bg_cccc"))).toBe(true);
    expect(isNoticeMessage(quoted)).toBe(false);
    expect(isNoticeMessage(twoParts)).toBe(false);
    expect(isNoticeMessage(assistant("a"))).toBe(false);
  });

  it("the plugin's transform hook applies it to every session's request, after a native child's prefix", async () => {
    // the plugin's start-up runs on a timer: keep whatever it writes in a temp data directory
    const dataHome = process.env.XDG_DATA_HOME;
    process.env.XDG_DATA_HOME = mkdtempSync(join(tmpdir(), "offshoot-turn-order-"));
    const hooks = await server.server(
      { client: { app: { log: async () => ({}) } }, project: { id: "p_turn_order" }, directory: "/nowhere", worktree: "/nowhere" } as any,
      {},
    );
    const output = { messages: [user("u1"), assistant("a1"), user("u2"), notice("bg_eeee")] };
    await hooks["experimental.chat.messages.transform"]!({} as any, output as any);
    expect(ids(output.messages)).toEqual(["u1", "a1", "n_bg_eeee", "u2"]);
    await hooks.dispose?.();
    if (dataHome === undefined) delete process.env.XDG_DATA_HOME;
    else process.env.XDG_DATA_HOME = dataHome;
  });
});

import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { RequestHolds, finishedSteps, gateStep, sessionOf } from "../../../src/manager/spend/step-gate.js";
import type { TaskEntry } from "../../../src/manager/task/registry.js";
import type { SessionMessage } from "../../../src/fork/types.js";
import { createHarness } from "./setup.js";

const recorded = (name: string) => JSON.parse(readFileSync(new URL(`../../fixtures/recorded/${name}`, import.meta.url), "utf8")).data as SessionMessage[];

describe("what the gate reads of the messages the loop hands", () => {
  it("the finished steps after the last user message, oldest first, and their session (a recorded session)", () => {
    const messages = recorded("session.messages.tools.json");
    const lastUser = messages.map((m) => m.info.role).lastIndexOf("user");
    const after = messages.slice(lastUser + 1).filter((m) => m.info.role === "assistant" && (m.info as { time: { completed?: number } }).time.completed);
    expect(after.length).toBeGreaterThan(0);
    expect(finishedSteps(messages).map((s) => s.id)).toEqual(after.map((m) => m.info.id));
    expect(sessionOf(messages)).toBe(messages[0]!.info.sessionID);
    // a step still streaming is not finished; a new user message starts a new run: nothing before it
    const streaming = { ...messages.at(-1)!, info: { ...messages.at(-1)!.info, id: "msg_streaming", time: { created: 1 } } } as SessionMessage;
    expect(finishedSteps([...messages, streaming]).map((s) => s.id)).toEqual(after.map((m) => m.info.id));
    expect(finishedSteps([...messages, messages[lastUser]!])).toEqual([]);
    expect(sessionOf([])).toBeUndefined();
  });
});

describe("the gate never throws out of the hook", () => {
  it("messages it cannot read, or a count that fails, let the request go and say why", async () => {
    const messages = recorded("session.messages.tools.json");
    const warnings: string[] = [];
    const running = { task: { status: "running" }, runtime: {} } as unknown as TaskEntry;
    const failing = {
      ofChild: () => running,
      stepFinished: () => {
        throw new Error("a malformed step");
      },
      counted: () => false,
      holds: new RequestHolds(),
    };
    await expect(gateStep(failing, messages, (w) => warnings.push(w))).resolves.toBeUndefined();
    expect(warnings).toEqual([`counting the steps of session ${sessionOf(messages)} before its request failed: a malformed step`]);
    const broken = [{ info: null, parts: null }, { info: { role: "assistant", sessionID: "ses_x", time: null } }] as unknown as SessionMessage[];
    await expect(gateStep({ ...failing, stepFinished: () => {} }, broken, (w) => warnings.push(w))).resolves.toBeUndefined();
    expect(warnings).toHaveLength(1);
  });
});

describe("a hold", () => {
  it("lasts while its work runs, a newer one replaces it, and it is gone once settled", async () => {
    const holds = new RequestHolds();
    let release!: () => void;
    const work = new Promise<void>((r) => (release = r));
    expect(await holds.until("ses_a", Promise.resolve(7))).toBe(7);
    const order: string[] = [];
    void holds.until("ses_a", work).then(() => order.push("work"));
    void holds.of("ses_a").then(() => order.push("held request"));
    await holds.of("ses_b"); // another session waits for nothing
    await Promise.resolve();
    expect(order).toEqual([]);
    release();
    await holds.of("ses_a");
    expect(order).toEqual(["work", "held request"]);
    void holds.until("ses_c", Promise.reject(new Error("abort failed")));
    await expect(holds.of("ses_c")).resolves.toBeUndefined(); // a failed abort releases the request: it never hangs
  });
});

describe("the gate before a child's request (fake server)", () => {
  const step = (sessionID: string, id: string, input: number) =>
    ({
      info: {
        id,
        sessionID,
        role: "assistant",
        time: { created: 1, completed: 2 },
        finish: "tool-calls",
        tokens: { input, output: 0, reasoning: 0, cache: { read: 0, write: 0 } },
        cost: 0,
      },
      parts: [],
    }) as unknown as SessionMessage;
  const user = (sessionID: string) => ({ info: { id: "msg_u", sessionID, role: "user", time: { created: 0 } }, parts: [] }) as unknown as SessionMessage;

  it("a step over the cap seen first by the gate: the request waits until the child was aborted, and the task counts exactly the steps answered", async () => {
    const h = await createHarness({ options: { maxTaskTokens: 1000 } });
    try {
      const parent = h.fake.addParent();
      const task = await h.launch(parent, "spender");
      const child = task.sessionID;
      // within the cap: the request goes at once, the step counted once (its event later adds nothing)
      await h.manager.beforeModelRequest([user(child), step(child, "msg_1", 600)]);
      expect(h.fake.callsOf("session.abort")).toEqual([]);
      expect(h.manager.get(task.id)?.usage?.input).toBe(600);
      h.fake.emit({ type: "message.updated", properties: { sessionID: child, info: step(child, "msg_1", 600).info } });
      await h.fake.settle();
      expect(h.manager.get(task.id)?.usage?.input).toBe(600);

      // over it: the request is held while the abort is in flight, and released once it is done
      const release = h.fake.hold("session.abort");
      let sent = false;
      const request = h.manager.beforeModelRequest([user(child), step(child, "msg_1", 600), step(child, "msg_2", 500)]).then(() => (sent = true));
      await h.fake.called("session.abort");
      await new Promise((r) => setImmediate(r)); // (the abort call has been made; the request still waits)
      expect(sent).toBe(false);
      release();
      await request;
      await h.fake.settle();
      expect(h.manager.get(task.id)).toMatchObject({ status: "error", usage: { input: 1100 } });
      expect(h.manager.get(task.id)?.error).toContain("stopped: used 1100 tokens charged in full");
      expect(h.fake.callsOf("session.abort")).toHaveLength(1);
    } finally {
      await h.cleanup();
    }
  });

  it("a session that is no task's child (the user's own) passes at once, and nothing is counted", async () => {
    const h = await createHarness({ options: { maxTaskTokens: 1000 } });
    try {
      const parent = h.fake.addParent();
      await h.manager.beforeModelRequest([user(parent), step(parent, "msg_p", 50_000)]);
      expect(h.fake.callsOf("session.abort")).toEqual([]);
      expect(h.manager.tasksOf(parent)).toEqual([]);
    } finally {
      await h.cleanup();
    }
  });
});

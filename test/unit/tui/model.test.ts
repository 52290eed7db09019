import { describe, expect, test } from "vitest";
import { TaskStore, type Notice } from "../../../src/tui/model.js";
import { parseOffshootMeta } from "../../../src/tui/meta.js";
import { childInfo } from "./fake-api.js";

function store(now = 10_000) {
  const s = new TaskStore(() => now);
  const notices: Notice[] = [];
  s.onNotice((n) => notices.push(n));
  return { s, notices };
}

const toolPart = (sessionID: string, tool: string, status: string, extra: Record<string, unknown> = {}) => ({
  id: `prt_${Math.random()}`,
  sessionID,
  messageID: "msg_1",
  type: "tool",
  callID: "c",
  tool,
  state: { status, input: { command: "npm test" }, time: { start: 5_000 }, ...extra },
});

describe("metadata contract", () => {
  test("reads a well-formed offshoot record and rejects anything else", () => {
    expect(parseOffshootMeta(childInfo("ses_a").metadata)?.status).toBe("running");
    expect(parseOffshootMeta(undefined)).toBeUndefined();
    expect(parseOffshootMeta({ offshoot: { v: 2, taskId: "x", parentSessionID: "p", status: "running" } })).toBeUndefined();
    expect(parseOffshootMeta({ offshoot: { v: 1, taskId: "x", parentSessionID: "p" } })).toBeUndefined();
    // A status from a newer server half is kept (shown as it is), not dropped.
    expect(parseOffshootMeta({ offshoot: { v: 1, taskId: "x", parentSessionID: "p", status: "paused" } })?.status).toBe("paused");
    expect(parseOffshootMeta({ offshoot: "nope" })).toBeUndefined();
  });
});

describe("TaskStore", () => {
  test("sessions without offshoot metadata are not tasks", () => {
    const { s } = store();
    expect(s.upsertSession({ id: "ses_x", parentID: "ses_parent", title: "subagent" })).toBe(false);
    expect(s.tasksOf("ses_parent")).toEqual([]);
  });

  test("lists a parent's tasks: waiting for a permission first, then running oldest first, then finished newest first", () => {
    const { s } = store();
    s.upsertSession(childInfo("ses_old", { startedAt: 1_000, description: "old" }));
    s.upsertSession(childInfo("ses_new", { startedAt: 3_000, description: "new" }));
    s.upsertSession(childInfo("ses_wait", { startedAt: 4_000, description: "wait", permission: { id: "per_1", permission: "bash", patterns: ["ls"] } }));
    s.upsertSession(childInfo("ses_done1", { status: "completed", startedAt: 100, completedAt: 2_000, description: "done1" }));
    s.upsertSession(childInfo("ses_done2", { status: "error", startedAt: 100, completedAt: 5_000, description: "done2" }));
    s.upsertSession(childInfo("ses_other", { parent: "ses_elsewhere" }));
    expect(s.tasksOf("ses_parent").map((t) => t.meta.description)).toEqual(["wait", "old", "new", "done2", "done1"]);
    expect(s.tasksOf("ses_elsewhere")).toHaveLength(1);
  });

  test("the last tool is the newest call of the child; other sessions' parts are ignored", () => {
    const { s } = store();
    s.upsertSession(childInfo("ses_a"));
    s.partUpdated(toolPart("ses_a", "bash", "running"));
    expect(s.task("ses_a")?.lastTool).toEqual({ tool: "bash", detail: "npm test", state: "running" });
    s.partUpdated(toolPart("ses_a", "read", "completed", { title: "src/a.ts", time: { start: 6_000 } }));
    expect(s.task("ses_a")?.lastTool).toEqual({ tool: "read", detail: "src/a.ts", state: "completed" });
    // The older bash call finishing late does not replace it.
    s.partUpdated(toolPart("ses_a", "bash", "completed", { time: { start: 5_000 } }));
    expect(s.task("ses_a")?.lastTool?.tool).toBe("read");
    // What the model said the call is for reads better than the raw command.
    s.partUpdated(toolPart("ses_a", "bash", "running", { input: { command: "sleep 30 && make", description: "Build the docs" }, time: { start: 7_000 } }));
    expect(s.task("ses_a")?.lastTool).toEqual({ tool: "bash", detail: "Build the docs", state: "running" });
    s.partUpdated(toolPart("ses_unknown", "edit", "running"));
    s.partUpdated({ type: "text", sessionID: "ses_a", text: "hi" });
    expect(s.task("ses_a")?.lastTool?.detail).toBe("Build the docs");
  });

  test("the same call read while pending, then updated live with an earlier start, still updates", () => {
    const { s } = store(50_000);
    s.upsertSession(childInfo("ses_a"));
    s.partUpdated({ id: "prt_1", type: "tool", sessionID: "ses_a", tool: "bash", state: { status: "pending", input: {} } });
    s.partUpdated(
      { id: "prt_1", type: "tool", sessionID: "ses_a", tool: "bash", state: { status: "running", input: { command: "make" }, time: { start: 49_000 } } },
      50_100,
    );
    expect(s.task("ses_a")?.lastTool).toEqual({ tool: "bash", detail: "make", state: "running" });
  });

  test("usage sums the child's assistant messages; a message updated again is not counted twice", () => {
    const { s } = store();
    s.upsertSession(childInfo("ses_a"));
    expect(s.task("ses_a")?.usage).toBeUndefined();
    const msg = (id: string, input: number, output: number, cost: number) => ({
      id,
      sessionID: "ses_a",
      role: "assistant",
      tokens: { input, output, reasoning: 0, cache: { read: 0, write: 0 } },
      cost,
    });
    s.messageUpdated(msg("m1", 100, 20, 0.01));
    s.messageUpdated(msg("m1", 100, 50, 0.02));
    s.messageUpdated(msg("m2", 300, 10, 0.03));
    s.messageUpdated({ id: "u1", sessionID: "ses_a", role: "user" });
    const u = s.task("ses_a")!.usage!;
    expect(u.tokens).toBe(460);
    expect(u.cost).toBeCloseTo(0.05);
  });

  test("a permission wait is shown from the event until it is answered; stale metadata does not bring it back", () => {
    const { s, notices } = store();
    s.upsertSession(childInfo("ses_a", { description: "Lint" }));
    s.permissionAsked({ id: "per_1", sessionID: "ses_a", permission: "bash", patterns: ["rm -rf build"], metadata: {}, always: [] });
    expect(s.task("ses_a")?.permission).toEqual({ id: "per_1", permission: "bash", patterns: ["rm -rf build"] });
    expect(notices.map((n) => n.kind)).toEqual(["permission"]);
    // The server half mirrors it into the metadata: no second notice.
    s.upsertSession(childInfo("ses_a", { description: "Lint", permission: { id: "per_1", permission: "bash", patterns: ["rm -rf build"] } }));
    expect(notices).toHaveLength(1);
    s.permissionReplied({ sessionID: "ses_a", requestID: "per_1", reply: "once" });
    expect(s.task("ses_a")?.permission).toBeUndefined();
    // A metadata update still carrying the answered request (written before the reply) is ignored.
    s.upsertSession(childInfo("ses_a", { description: "Lint", permission: { id: "per_1", permission: "bash", patterns: [] } }));
    expect(s.task("ses_a")?.permission).toBeUndefined();
  });

  test("a permission asked before the session is known shows once the task appears", () => {
    const { s } = store();
    s.permissionAsked({ id: "per_9", sessionID: "ses_a", permission: "edit", patterns: ["a.ts"] });
    s.upsertSession(childInfo("ses_a"));
    expect(s.task("ses_a")?.permission?.id).toBe("per_9");
  });

  test("announces a task's end once, on the live transition only", () => {
    const { s, notices } = store();
    s.upsertSession(childInfo("ses_done", { status: "completed" }), { quiet: true });
    s.upsertSession(childInfo("ses_a", { description: "Fix" }));
    s.upsertSession(childInfo("ses_a", { description: "Fix", status: "completed", completedAt: 9_000 }));
    s.upsertSession(childInfo("ses_a", { description: "Fix", status: "completed", completedAt: 9_000 }));
    expect(notices.map((n) => `${n.kind}:${n.task.meta.description}:${n.task.meta.status}`)).toEqual(["ended:Fix:completed"]);
    expect(s.task("ses_a")?.permission).toBeUndefined();
  });

  test("a resumed task runs again; a deleted child disappears", () => {
    const { s } = store();
    s.upsertSession(childInfo("ses_a", { status: "completed" }));
    s.upsertSession(childInfo("ses_a", { status: "resumed" }));
    expect(s.tasksOf("ses_parent")[0]?.meta.status).toBe("resumed");
    s.removeSession("ses_a");
    expect(s.tasksOf("ses_parent")).toEqual([]);
    expect(s.task("ses_a")).toBeUndefined();
  });

  test("every change reaches subscribers; malformed input changes nothing and never throws", () => {
    const { s } = store();
    let n = 0;
    s.subscribe(() => n++);
    s.subscribe(() => {
      throw new Error("listener bug");
    });
    s.upsertSession(childInfo("ses_a"));
    expect(n).toBe(1);
    for (const bad of [null, undefined, 5, "x", {}, { type: "tool" }, { role: "assistant" }]) {
      s.partUpdated(bad);
      s.messageUpdated(bad);
      s.permissionAsked(bad);
      s.permissionReplied(bad);
      s.upsertSession(bad as never);
      s.removeSession(bad);
    }
    expect(n).toBe(1);
  });
});

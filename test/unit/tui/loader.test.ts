import { describe, expect, test } from "vitest";
import { TaskStore } from "../../../src/tui/model.js";
import { Loader } from "../../../src/tui/loader.js";
import { childInfo, fakeApi } from "./fake-api.js";

describe("Loader (a TUI started after the tasks)", () => {
  test("reads a session's tasks, their activity and pending permissions once", async () => {
    const f = fakeApi();
    const store = new TaskStore();
    f.replies["session.get"] = { id: "ses_parent", title: "Parent" };
    f.replies["session.children"] = [childInfo("ses_a", { description: "A" }), { id: "ses_plain", parentID: "ses_parent", title: "a subagent" }];
    f.replies["permission.list"] = [{ id: "per_1", sessionID: "ses_a", permission: "bash", patterns: ["make"] }];
    f.replies["session.messages"] = [
      {
        info: { id: "m1", sessionID: "ses_a", role: "assistant", tokens: { input: 1000, output: 200, reasoning: 0 }, cost: 0 },
        parts: [{ type: "tool", sessionID: "ses_a", tool: "grep", state: { status: "completed", input: { pattern: "TODO" }, time: { start: 1 } } }],
      },
    ];
    const loader = new Loader(f.api, store);
    await loader.ensure("ses_parent");
    await loader.ensure("ses_parent");
    const t = store.task("ses_a")!;
    expect(store.tasksOf("ses_parent").map((x) => x.sessionID)).toEqual(["ses_a"]);
    expect(t.lastTool).toEqual({ tool: "grep", detail: "TODO", state: "completed" });
    expect(t.usage).toEqual({ tokens: 1200, cacheRead: 0, cost: 0 });
    expect(t.permission?.id).toBe("per_1");
    expect(f.calls.filter((c) => c.method === "session.children")).toHaveLength(1);
  });

  test("from inside a child, it finds the parent and the siblings", async () => {
    const f = fakeApi();
    const store = new TaskStore();
    f.replies["session.get"] = (a: { sessionID: string }) => (a.sessionID === "ses_a" ? childInfo("ses_a") : { id: a.sessionID });
    f.replies["session.children"] = (a: { sessionID: string }) => (a.sessionID === "ses_parent" ? [childInfo("ses_a"), childInfo("ses_b")] : []);
    await new Loader(f.api, store).ensure("ses_a");
    expect(
      store
        .tasksOf("ses_parent")
        .map((t) => t.sessionID)
        .sort(),
    ).toEqual(["ses_a", "ses_b"]);
  });

  test("a failing server leaves nothing shown and never throws", async () => {
    const f = fakeApi();
    for (const m of ["session.get", "session.children", "permission.list", "session.messages"]) f.replies[m] = new Error("down");
    const store = new TaskStore();
    await expect(new Loader(f.api, store).ensure("ses_parent")).resolves.toBeUndefined();
    expect(store.tasksOf("ses_parent")).toEqual([]);
  });
});

import { describe, expect, test } from "vitest";
import { TaskStore } from "../../../src/tui/model.js";
import { subscribeEvents } from "../../../src/tui/events.js";
import { attachAttention } from "../../../src/tui/attention.js";
import { keyText, registerCommands } from "../../../src/tui/commands.js";
import { childInfo, fakeApi, settle } from "./fake-api.js";

function live() {
  const f = fakeApi();
  const store = new TaskStore();
  subscribeEvents(f.api, store);
  attachAttention(f.api, store);
  return { f, store };
}

describe("live events", () => {
  test("a child created and updated by the server half appears and follows its status", () => {
    const { f, store } = live();
    f.emit("session.created", { sessionID: "ses_a", info: childInfo("ses_a", { description: "Fix" }) });
    expect(store.tasksOf("ses_parent").map((t) => t.meta.status)).toEqual(["running"]);
    f.emit("message.part.updated", {
      sessionID: "ses_a",
      part: { type: "tool", sessionID: "ses_a", tool: "bash", state: { status: "running", input: { command: "make" } } },
      time: 5,
    });
    expect(store.task("ses_a")?.lastTool?.tool).toBe("bash");
    f.emit("session.updated", { sessionID: "ses_a", info: childInfo("ses_a", { description: "Fix", status: "cancelled" }) });
    expect(store.task("ses_a")?.meta.status).toBe("cancelled");
    f.emit("session.deleted", { sessionID: "ses_a", info: { id: "ses_a" } });
    expect(store.task("ses_a")).toBeUndefined();
  });

  test("notifies when a task ends, naming it", async () => {
    const { f } = live();
    f.emit("session.created", { info: childInfo("ses_a", { description: "Fix tests" }) });
    f.emit("session.updated", { info: childInfo("ses_a", { description: "Fix tests", status: "completed" }) });
    await settle();
    expect(f.notifications).toEqual([expect.objectContaining({ title: "Background task", message: "✓ Fix tests: completed" })]);
  });

  test("a permission wait of a task: a toast that names the task, and a notification", async () => {
    const { f } = live();
    f.emit("session.created", { info: childInfo("ses_a", { description: "Lint" }) });
    f.emit("permission.asked", { id: "per_1", sessionID: "ses_a", permission: "bash", patterns: ["rm -rf build"], metadata: {}, always: [] });
    await settle();
    expect(f.toasts).toEqual([expect.objectContaining({ variant: "warning", message: '"Lint" asks for bash: rm -rf build. Answer it from /tasks.' })]);
    expect(f.notifications.map((n) => n.message)).toEqual(['"Lint" asks for bash: rm -rf build']);
    f.emit("permission.replied", { sessionID: "ses_a", requestID: "per_1", reply: "once" });
    f.emit("permission.asked", { id: "per_2", sessionID: "ses_other", permission: "bash", patterns: ["ls"] });
    await settle();
    expect(f.toasts).toHaveLength(1);
  });

  test("/tasks is a palette entry, a slash command and a key binding", () => {
    const f = fakeApi();
    let opened = 0;
    registerCommands(f.api, { openList: () => opened++ });
    const layer = f.layers[0] as { commands: Array<{ name: string; slashName: string; run(): void }>; bindings: Array<{ key: string; cmd: string }> };
    expect(layer.commands[0]).toMatchObject({ slashName: "tasks", namespace: "palette", title: "Background tasks" });
    expect(layer.bindings).toEqual([expect.objectContaining({ key: "<leader>o", cmd: layer.commands[0]!.name })]);
    layer.commands[0]!.run();
    expect(opened).toBe(1);
  });

  test("the key is written as the host writes it, else spelled out from the binding", () => {
    const f = fakeApi();
    const api = { ...f.api, keys: { formatBindings: () => "ctrl+x o", formatSequence: () => "" } } as typeof f.api;
    expect(keyText(api)).toBe("ctrl+x o");
    const broken = {
      ...f.api,
      keys: {
        formatBindings: () => {
          throw new Error("no");
        },
        formatSequence: () => "",
      },
    } as unknown as typeof f.api;
    expect(keyText(broken, "<leader>k")).toBe("ctrl+x k");
    expect(keyText(broken, "none")).toBe("ctrl+p");
  });

  test("keybind none: no key binding, the command stays", () => {
    const f = fakeApi();
    registerCommands(f.api, { openList: () => {} }, "none");
    const layer = f.layers[0] as { commands: unknown[]; bindings: unknown[] };
    expect(layer.commands).toHaveLength(1);
    expect(layer.bindings).toEqual([]);
  });
});

/**
 * Guard rails on the real server, with the plugin's options set in opencode.json: a deadline, the repeat and empty-answer breakers, usage per task,
 * a child waiting for a permission, and bad options.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { loadedLine } from "../../../src/index.txt.js";
import { DIST_PLUGIN, getMessages, isToolFollowUp, lastUserText, startOpencode } from "../harness/index.js";
import { children, launchAll, promptList, notifications, registerLateChecks, requestOf, storedTask, until, useOpencode } from "./helpers.js";

const OPTIONS = { taskTimeoutSeconds: 6, maxToolCalls: 50, repeatLimit: 4 };

const env = useOpencode({
  pluginOptions: OPTIONS,
  files: { "notes.txt": "a line\n" },
  config: { agent: { explore: { permission: { bash: "ask" } } } },
});

describe("guard rails", () => {
  test("a child still running at the deadline is stopped: its request cut off, error with the reason, one notice", async () => {
    env.model.script({ name: "t-child", match: (r) => lastUserText(r).includes("CHILD_T"), reply: { text: "never T", delayMs: 60_000 } });
    const { parent, ids } = await launchAll(env, "TIMEOUT_T", [{ description: "Slow T", prompt: "CHILD_T", agent: "general" }]);
    const req = await requestOf(env.model, "t-child");
    const stored = await until(
      "stopped",
      async () => {
        const t = await storedTask(env.server, ids[0]!);
        return t?.status === "error" && t;
      },
      20_000,
    );
    expect(stored.error).toBe(`stopped: still running after 6s (taskTimeoutSeconds: 6)`);
    await until("its request aborted", () => req.aborted, 5_000);
    await until("one notice", async () => notifications(await getMessages(env.server.client, parent), ids[0]).length === 1);
    const listed = await promptList(env, parent, "LIST_T");
    expect(listed).toContain("stopped: still running after 6s");
  });

  test("the repeat breaker: the same call again and again is stopped after repeatLimit times", async () => {
    env.model.script({
      name: "r-child",
      match: (r) => lastUserText(r).includes("CHILD_R"),
      reply: () => ({ toolCalls: [{ name: "read", arguments: { filePath: `${env.server.directory}/notes.txt` } }] }),
    });
    const { ids } = await launchAll(env, "REPEAT_R", [{ description: "Loop R", prompt: "CHILD_R", agent: "general" }]);
    const stored = await until(
      "stopped",
      async () => {
        const t = await storedTask(env.server, ids[0]!);
        return t?.status === "error" && t;
      },
      20_000,
    );
    expect(stored.error).toBe("stopped: called read with the same input 4 times in a row (repeatLimit: 4)");
    const count = env.model.requests.filter((r) => r.label === "r-child").length;
    expect(count).toBeGreaterThanOrEqual(4);
    env.later("R: the child asks no more", async () => {
      expect(env.model.requests.filter((r) => r.label === "r-child").length).toBeLessThanOrEqual(count + 1);
    });
  });

  test("a model that answers with empty streams: the child is stopped instead of looping forever", async () => {
    env.model.script({ name: "e-child", match: (r) => lastUserText(r).includes("CHILD_E"), reply: { emptyStream: true } });
    const { ids } = await launchAll(env, "EMPTY_E", [{ description: "Empty E", prompt: "CHILD_E", agent: "general" }]);
    const stored = await until(
      "stopped",
      async () => {
        const t = await storedTask(env.server, ids[0]!);
        return t?.status !== "running" && t;
      },
      20_000,
    );
    expect(stored.status).toBe("error");
    expect(stored.error).toBe("stopped: the model gave 4 empty answers in a row (repeatLimit: 4)");
    const count = env.model.requests.filter((r) => r.label === "e-child").length;
    env.later("E: the loop stays stopped", async () => {
      expect(env.model.requests.filter((r) => r.label === "e-child").length).toBeLessThanOrEqual(count + 1);
    });
  });

  test("usage: the task's tokens and cost are the sum over its child's assistant messages, shown in the notice and the list", async () => {
    env.model.script({
      name: "u-child",
      match: (r) => lastUserText(r).includes("CHILD_U") && !isToolFollowUp(r),
      reply: {
        toolCalls: [{ name: "read", arguments: { filePath: `${env.server.directory}/notes.txt` } }],
        usage: { prompt_tokens: 1200, completion_tokens: 30 },
      },
    });
    env.model.script({
      name: "u-child-done",
      match: (r) => lastUserText(r).includes("CHILD_U") && isToolFollowUp(r),
      reply: { text: "done U", usage: { prompt_tokens: 1500, completion_tokens: 70 } },
    });
    const { parent, ids } = await launchAll(env, "USAGE_U", [{ description: "Usage U", prompt: "CHILD_U", agent: "general" }]);
    const stored = await until("completed", async () => {
      const t = await storedTask(env.server, ids[0]!);
      return t?.status === "completed" && t;
    });
    const [kid] = (await children(env.server.client, parent)).filter((k) => k.title.includes("Usage U"));
    const assistants = (await getMessages(env.server.client, kid!.id)).filter((m) => m.info.role === "assistant");
    const sum = (f: (t: any) => number) => assistants.reduce((n, m) => n + f((m.info as any).tokens), 0);
    const usage = stored.usage as { input: number; output: number; cacheRead: number };
    expect(usage.input + usage.cacheRead).toBe(sum((t) => t.input + t.cache.read));
    expect(usage.output).toBe(sum((t) => t.output));
    expect(usage.output).toBe(100);
    const [note] = await until("the notice", async () => {
      const n = notifications(await getMessages(env.server.client, parent), ids[0]);
      return n.length === 1 && n;
    });
    expect(JSON.stringify(note)).toContain("usage: 2.8k charged in full (2.7k in, 100 out)");
    // The wake's turn first, so the list gets a turn of its own (it may be over already: the status says).
    await requestOf(env.model, "USAGE_U-wake");
    await until("the parent idle after its wake", async () => {
      const status = ((await env.server.client.session.status()).data ?? {}) as Record<string, { type: string }>;
      return (status[parent]?.type ?? "idle") === "idle";
    });
    expect(await promptList(env, parent, "LIST_U")).toMatch(/2\.8k charged in full \(2\.7k in, 100 out\)/);
  });

  test("a child waiting for a permission: the list says so, and the deadline does not count the wait", async () => {
    env.model.script({
      name: "p-child",
      match: (r) => lastUserText(r).includes("CHILD_P") && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "bash", arguments: { command: "echo hi", description: "say hi" } }] },
    });
    env.model.script({ name: "p-child-done", match: (r) => lastUserText(r).includes("CHILD_P") && isToolFollowUp(r), reply: { text: "done P" } });
    const { parent, ids } = await launchAll(env, "PERMISSION_P", [{ description: "Ask P", prompt: "CHILD_P", agent: "explore" }]);
    await until("the child asked", () => env.model.requests.some((r) => r.label === "p-child"));
    const listed = await until(
      "the list shows the wait",
      async () => {
        const out = await promptList(env, parent, `LIST_P${Date.now()}`);
        return out.includes("waiting for permission: bash") && out;
      },
      10_000,
    );
    expect(listed).toMatch(/running, waiting/);
    // Longer than taskTimeoutSeconds (6 s), all of it waiting for the user: the task is not stopped.
    await new Promise((r) => setTimeout(r, 8_000));
    expect((await storedTask(env.server, ids[0]!))?.status).toBe("running");
    const child = (await storedTask(env.server, ids[0]!))!.sessionID;
    const pending = (await (await fetch(`${env.server.url}/permission?directory=${encodeURIComponent(env.server.directory)}`)).json()) as {
      id: string;
      sessionID: string;
    }[];
    const request = pending.find((p) => p.sessionID === child)!;
    const replied = await env.server.client.postSessionIdPermissionsPermissionId({ path: { id: child, permissionID: request.id }, body: { response: "once" } });
    expect(replied.error).toBeUndefined();
    const stored = await until(
      "completed",
      async () => {
        const t = await storedTask(env.server, ids[0]!);
        return t?.status === "completed" && t;
      },
      20_000,
    );
    expect(stored.error).toBeUndefined();
  });

  test("bad options: a clear log line and the defaults, never a failed plugin; the log says it loaded, in the file the README names", async () => {
    const server = await startOpencode({
      // (HOME is the server's temp root, the project its folder "project")
      plugins: [[DIST_PLUGIN, { concurrency: "five", taskTimeoutSeconds: -1, bogus: true, sandboxWritable: ["relative/x", "~/project", "~/.npm"] }]],
      model: env.model,
      logLevel: "DEBUG",
    });
    try {
      expect(server.pluginErrors()).toEqual([]);
      const ids = await server.client.tool.ids();
      expect(ids.data).toContain("background_task");
      // The server's log prints a message with its quotes escaped.
      const log = () => server.logs().replaceAll('\\"', '"');
      await until(
        "the warnings in the log",
        () =>
          /option "concurrency" must be a whole number from 1 to 1000; got the string "five"\. Using the default, 5\./.test(log()) &&
          /option "taskTimeoutSeconds" must be/.test(log()) &&
          /unknown option "bogus" ignored/.test(log()) &&
          log().includes('option "sandboxWritable": "relative/x" left out: it is not an absolute path (write /abs/path or ~/path).') &&
          log().includes('option "sandboxWritable": "~/project" left out: it is your checkout, which a sandboxed child must not write.'),
      );
      expect(log()).not.toContain('"~/.npm" left out');
      // how a person tells it loaded: the line in OpenCode's own log file ($XDG_DATA_HOME/opencode/log/)
      const loaded = loadedLine(server.directory, ["background_task", "background_output", "background_cancel", "background_list", "background_take"]);
      const file = path.join(server.dataDir, "opencode", "log", "opencode.log");
      await until("the loaded line in OpenCode's log file", () => fs.readFileSync(file, "utf8").includes(loaded));
    } finally {
      await server.stop();
    }
  });
});

registerLateChecks(env);

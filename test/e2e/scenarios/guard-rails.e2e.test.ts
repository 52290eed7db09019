/**
 * Guard rails on the real server, with the plugin's options set in opencode.json:
 * a queue per provider/model, a deadline, the repeat and empty-answer breakers, usage per task,
 * a child waiting for a permission, and bad options.
 */
import { describe, expect, test } from "vitest";
import { DIST_PLUGIN, getMessages, isToolFollowUp, lastUserText, startOpencode } from "../harness/index.js";
import {
  children,
  isWake,
  newSession,
  notifications,
  promptText,
  readTaskFile,
  registerLateChecks,
  requestOf,
  storedTask,
  taskIdIn,
  toolOutputs,
  until,
  useOpencode,
} from "./helpers.js";

const OPTIONS = { concurrency: 2, taskTimeoutSeconds: 6, maxToolCalls: 50, repeatLimit: 4 };

const env = useOpencode({
  pluginOptions: OPTIONS,
  files: { "notes.txt": "a line\n" },
  config: { agent: { explore: { permission: { bash: "ask" } } } },
});

/** Scripts a parent turn that launches `tasks` at once; returns the parent id and the launch outputs. */
async function launchAll(cue: string, tasks: { description: string; prompt: string; agent: string }[]) {
  env.model.script({
    name: `${cue}-launch`,
    match: (r) => lastUserText(r) === cue && !isToolFollowUp(r),
    reply: { toolCalls: tasks.map((t) => ({ name: "background_task", arguments: t })) },
  });
  env.model.script({ name: `${cue}-launched`, match: (r) => lastUserText(r) === cue && isToolFollowUp(r), reply: { text: `launched ${cue}` } });
  env.model.script({ name: `${cue}-wake`, match: (r) => isWake(r) && tasks.some((t) => lastUserText(r).includes(t.description)), reply: { text: `noted ${cue}` } });
  const parent = await newSession(env.server.client, cue);
  await promptText(env.server.client, parent, cue);
  const outputs = toolOutputs(await getMessages(env.server.client, parent), "background_task");
  return { parent, outputs, ids: outputs.map(taskIdIn) };
}

describe("guard rails", () => {
  test("concurrency 2: five tasks, at most two children at the model at once, three queued with the reason, all five complete", async () => {
    let most = 0;
    env.model.script({
      name: "q-child",
      match: (r) => lastUserText(r).startsWith("CHILD_Q"),
      reply: () => {
        most = Math.max(most, env.model.requests.filter((x) => x.label === "q-child" && !x.done).length);
        return { text: "done Q", delayMs: 700 };
      },
    });
    const tasks = Array.from({ length: 5 }, (_, i) => ({ description: `Queue Q${i}`, prompt: `CHILD_Q${i}`, agent: "general" }));
    const { parent, outputs, ids } = await launchAll("QUEUE_Q", tasks);
    expect(outputs.filter((o) => o.includes("queued"))).toHaveLength(3);
    expect(outputs.find((o) => o.includes("queued"))).toContain("(concurrency 2)");
    await until("all five completed", async () => {
      const file = await readTaskFile(env.server);
      return ids.every((id) => file.tasks.find((t) => t.id === id)?.status === "completed");
    }, 30_000);
    expect(most).toBeLessThanOrEqual(2);
    expect(env.model.requests.filter((r) => r.label === "q-child")).toHaveLength(5);
    await until("five notices", async () => notifications(await getMessages(env.server.client, parent)).length === 5);
    // No queued prompt is left in the file once a task has started.
    const file = await readTaskFile(env.server);
    expect(file.tasks.filter((t) => ids.includes(t.id) && t.queuedPrompt !== undefined)).toEqual([]);
  });

  test("a queued task is listed, can be cancelled (its child never gets the prompt), and stays queued across a restart", async () => {
    env.model.script({ name: "w-child", match: (r) => lastUserText(r).startsWith("CHILD_W"), reply: { text: "slow W", delayMs: 60_000 } });
    env.model.script({ name: "w-late", match: (r) => lastUserText(r).startsWith("LATE_W"), reply: { text: "late W done" } });
    const tasks = [
      { description: "Busy W0", prompt: "CHILD_W0", agent: "general" },
      { description: "Busy W1", prompt: "CHILD_W1", agent: "general" },
      { description: "Queued W2", prompt: "CHILD_W2", agent: "general" },
      { description: "Queued W3", prompt: "LATE_W3", agent: "general" },
    ];
    const { parent, ids } = await launchAll("WAIT_W", tasks);
    await until("two children at the model", () => env.model.requests.filter((r) => r.label === "w-child").length === 2);
    const listed = await promptList(parent, "LIST_W");
    expect(listed).toMatch(new RegExp(`${ids[2]}\\s+queued`));
    expect(listed).toContain("queued: 2 tasks on mock/mock-model are running (concurrency 2)");

    env.model.script({ name: "w-cancel", match: (r) => lastUserText(r) === "CANCEL_W" && !isToolFollowUp(r), reply: { toolCalls: [{ name: "background_cancel", arguments: { task_id: ids[2] } }] } });
    env.model.script({ name: "w-cancelled", match: (r) => lastUserText(r) === "CANCEL_W" && isToolFollowUp(r), reply: { text: "cancelled W2" } });
    await promptText(env.server.client, parent, "CANCEL_W");
    expect((await storedTask(env.server, ids[2]!))?.status).toBe("cancelled");

    // A crash: the running two are interrupted, the queued one is still queued and then starts.
    env.ev.close();
    await env.server.restart({ signal: "SIGKILL" });
    await env.resubscribe();
    await requestOf(env.model, "w-late");
    const file = await readTaskFile(env.server);
    const status = (id: string) => file.tasks.find((t) => t.id === id)?.status;
    expect([status(ids[0]!), status(ids[1]!)]).toEqual(["interrupted", "interrupted"]);
    expect(env.model.requests.some((r) => lastUserText(r.body).startsWith("CHILD_W2"))).toBe(false);
    await until("W3 completed", async () => (await storedTask(env.server, ids[3]!))?.status === "completed", 45_000).catch(async (e) => { console.log("W3", JSON.stringify(await storedTask(env.server, ids[3]!))); throw e; });
  });

  test("a child still running at the deadline is stopped: its request cut off, error with the reason, one notice", async () => {
    env.model.script({ name: "t-child", match: (r) => lastUserText(r).includes("CHILD_T"), reply: { text: "never T", delayMs: 60_000 } });
    const { parent, ids } = await launchAll("TIMEOUT_T", [{ description: "Slow T", prompt: "CHILD_T", agent: "general" }]);
    const req = await requestOf(env.model, "t-child");
    const stored = await until("stopped", async () => {
      const t = await storedTask(env.server, ids[0]!);
      return t?.status === "error" && t;
    }, 20_000);
    expect(stored.error).toBe(`stopped: still running after 6s (taskTimeoutSeconds: 6)`);
    await until("its request aborted", () => req.aborted, 5_000);
    await until("one notice", async () => notifications(await getMessages(env.server.client, parent), ids[0]).length === 1);
    const listed = await promptList(parent, "LIST_T");
    expect(listed).toContain("stopped: still running after 6s");
  });

  test("the repeat breaker: the same call again and again is stopped after repeatLimit times", async () => {
    env.model.script({
      name: "r-child",
      match: (r) => lastUserText(r).includes("CHILD_R"),
      reply: () => ({ toolCalls: [{ name: "read", arguments: { filePath: `${env.server.directory}/notes.txt` } }] }),
    });
    const { ids } = await launchAll("REPEAT_R", [{ description: "Loop R", prompt: "CHILD_R", agent: "general" }]);
    const stored = await until("stopped", async () => {
      const t = await storedTask(env.server, ids[0]!);
      return t?.status === "error" && t;
    }, 20_000);
    expect(stored.error).toBe("stopped: called read with the same input 4 times in a row (repeatLimit: 4)");
    const count = env.model.requests.filter((r) => r.label === "r-child").length;
    expect(count).toBeGreaterThanOrEqual(4);
    env.later("R: the child asks no more", async () => {
      expect(env.model.requests.filter((r) => r.label === "r-child").length).toBeLessThanOrEqual(count + 1);
    });
  });

  test("a model that answers with empty streams: the child is stopped instead of looping forever", async () => {
    env.model.script({ name: "e-child", match: (r) => lastUserText(r).includes("CHILD_E"), reply: { emptyStream: true } });
    const { ids } = await launchAll("EMPTY_E", [{ description: "Empty E", prompt: "CHILD_E", agent: "general" }]);
    const stored = await until("stopped", async () => {
      const t = await storedTask(env.server, ids[0]!);
      return t?.status !== "running" && t;
    }, 20_000);
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
      reply: { toolCalls: [{ name: "read", arguments: { filePath: `${env.server.directory}/notes.txt` } }], usage: { prompt_tokens: 1200, completion_tokens: 30 } },
    });
    env.model.script({ name: "u-child-done", match: (r) => lastUserText(r).includes("CHILD_U") && isToolFollowUp(r), reply: { text: "done U", usage: { prompt_tokens: 1500, completion_tokens: 70 } } });
    const { parent, ids } = await launchAll("USAGE_U", [{ description: "Usage U", prompt: "CHILD_U", agent: "general" }]);
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
    expect(JSON.stringify(note)).toContain("usage: 2.7k in · 100 out");
    expect(await promptList(parent, "LIST_U")).toMatch(/2\.7k in · 100 out/);
  });

  test("a child waiting for a permission: the list says so, and the deadline's reason names it", async () => {
    env.model.script({
      name: "p-child",
      match: (r) => lastUserText(r).includes("CHILD_P") && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "bash", arguments: { command: "echo hi", description: "say hi" } }] },
    });
    const { parent, ids } = await launchAll("PERMISSION_P", [{ description: "Ask P", prompt: "CHILD_P", agent: "explore" }]);
    await until("the child asked", () => env.model.requests.some((r) => r.label === "p-child"));
    const listed = await until("the list shows the wait", async () => {
      const out = await promptList(parent, `LIST_P${Date.now()}`);
      return out.includes("waiting for permission: bash") && out;
    }, 10_000);
    expect(listed).toMatch(/running, waiting/);
    const stored = await until("stopped", async () => {
      const t = await storedTask(env.server, ids[0]!);
      return t?.status === "error" && t;
    }, 20_000);
    expect(stored.error).toMatch(/^stopped: still waiting for permission \(bash .*\) after 6s/);
  });

  test("bad options: a clear log line and the defaults, never a failed plugin", async () => {
    const server = await startOpencode({
      plugins: [[DIST_PLUGIN, { concurrency: "five", taskTimeoutSeconds: -1, bogus: true }]],
      model: env.model,
      logLevel: "DEBUG",
    });
    try {
      expect(server.pluginErrors()).toEqual([]);
      const ids = await server.client.tool.ids();
      expect(ids.data).toContain("background_task");
      // The server's log prints a message with its quotes escaped.
      const log = () => server.logs().replaceAll('\\"', '"');
      await until("the warnings in the log", () =>
        /option "concurrency" must be a whole number from 1 to 1000; got the string "five"\. Using the default, 5\./.test(log()) &&
        /option "taskTimeoutSeconds" must be/.test(log()) &&
        /unknown option "bogus" ignored/.test(log()),
      );
    } finally {
      await server.stop();
    }
  });
});

/** The parent runs background_list in a new turn; returns its output. */
async function promptList(parent: string, cue: string): Promise<string> {
  env.model.script({ name: `${cue}-list`, match: (r) => lastUserText(r) === cue && !isToolFollowUp(r), reply: { toolCalls: [{ name: "background_list", arguments: {} }] } });
  env.model.script({ name: `${cue}-listed`, match: (r) => lastUserText(r) === cue && isToolFollowUp(r), reply: { text: "listed" } });
  await promptText(env.server.client, parent, cue);
  return toolOutputs(await getMessages(env.server.client, parent), "background_list").at(-1)!;
}

registerLateChecks(env);

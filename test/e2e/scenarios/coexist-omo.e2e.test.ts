/**
 * Beside oh-my-opencode 4.19.4 (the most installed OpenCode plugin, as released on the registry),
 * listed after ours: it registers its own background_output and background_cancel (and `bg_…` ids
 * like ours), and OpenCode offers one tool of a name, the later plugin's. Ours step aside to
 * offshoot_* names, all five, and everything works under them: launch, read, cancel, list, take,
 * a native and a text fork with their receipts, one notice and one wake, a child's question.
 * (The other order, oh-my-opencode listed first: coexist-omo-first.e2e.test.ts.)
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { type ChatRequest, getMessages, installOtherPlugins, isToolFollowUp, lastUserText, toolResult } from "../harness/index.js";
import {
  type Env,
  PREAMBLE_START,
  checkDeliveriesLater,
  isWake,
  notifications,
  registerLateChecks,
  requestOf,
  storedTask,
  taskIdIn,
  until,
  useOpencode,
  wakePrompts,
} from "./helpers.js";
import { expectOffered, namesInTexts, promptTool, untilNamesSettled } from "./coexist-helpers.js";

const env = useOpencode({
  around: async () => ({ after: [(await installOtherPlugins()).omo] }),
  files: { "src/shared.ts": "export const shared = 1;\n" },
  modelOptions: { prefixCache: true },
  startTimeoutMs: 120_000,
});

describe("beside oh-my-opencode (listed after ours)", () => {
  test("ours step aside to offshoot_* (all five), no name is offered twice, and the log says why, naming the plugin", async () => {
    const ids = await untilNamesSettled(env);
    expectOffered(ids);
    expect(env.server.logs()).toContain(
      "offshoot: another plugin (oh-my-opencode) registers background_output, background_cancel, and OpenCode offers only one tool of a name (the later plugin's), so this plugin's tools step aside to names of their own: offshoot_task, offshoot_output, offshoot_cancel, offshoot_list, offshoot_take.",
    );
  });

  test("launch, read and list under our names; the model sees each name once and our texts name ours; one notice, one wake", async () => {
    const { model, server } = env;
    await untilNamesSettled(env);
    model.script({ name: "a-child", match: (r) => lastUserText(r).includes("CHILD_A"), reply: { text: "A_RESULT" } });
    model.script({ name: "a-wake", match: (r) => isWake(r) && lastUserText(r).includes('"Task A"'), reply: { text: "Noted A." } });
    const parent = await newParent(env, "coexist A");
    const launched = await promptTool(env, parent, "LAUNCH_A", "offshoot_task", { description: "Task A", prompt: "CHILD_A", agent: "general" });
    const id = taskIdIn(launched);
    expect(launched).toContain(`offshoot_output({ task_id: "${id}" })`);
    expect(namesInTexts(launched)).toEqual([]);

    // what the model was offered: each name once, ours under our names, oh-my-opencode's as they are
    const offered = (await requestOf(model, "LAUNCH_A-call")).body.tools!.map((t) => t.function);
    const names = offered.map((t) => t.name);
    expect(new Set(names).size).toBe(names.length);
    for (const name of ["offshoot_task", "offshoot_output", "offshoot_cancel", "offshoot_list", "offshoot_take", "background_output", "background_cancel"])
      expect(names).toContain(name);
    for (const name of ["background_task", "background_list", "background_take"]) expect(names).not.toContain(name);
    // every text of ours (description, each argument's description) names ours
    const ours = offered.filter((t) => t.name.startsWith("offshoot_"));
    expect(ours).toHaveLength(5);
    for (const t of ours) expect(namesInTexts(JSON.stringify(t)), t.name).toEqual([]);
    expect(JSON.stringify(ours.find((t) => t.name === "offshoot_task"))).toContain("offshoot_output");

    // the notice and the wake, once each, naming ours
    const msgs = await until("the notice and the wake", async () => {
      const m = await getMessages(server.client, parent);
      return notifications(m, id).length === 1 && wakePrompts(m).length === 1 && JSON.stringify(m.at(-1)?.parts ?? []).includes("Noted A.") ? m : undefined;
    });
    for (const m of [...notifications(msgs, id), ...wakePrompts(msgs)]) expect(namesInTexts(JSON.stringify(m.parts))).toEqual([]);
    checkDeliveriesLater(env, "A: one notice, one wake", parent, { notifications: 1, wakes: 1 });

    const read = await promptTool(env, parent, "READ_A", "offshoot_output", { task_id: id });
    expect(read).toContain("A_RESULT");
    const listed = await promptTool(env, parent, "LIST_A", "offshoot_list", {});
    expect(listed).toMatch(new RegExp(`^${id} +completed .*"Task A" \\(general\\)$`, "m"));
    expect(namesInTexts(read + listed)).toEqual([]);
  });

  test("an id that is none of ours (oh-my-opencode's are bg_… too): our reply says whose it could be", async () => {
    await untilNamesSettled(env);
    const parent = await newParent(env, "coexist unknown");
    const out = await promptTool(env, parent, "UNKNOWN_ID", "offshoot_output", { task_id: "bg_0a1b2c3d" });
    expect(out).toContain('Error: no task "bg_0a1b2c3d"');
    expect(out).toContain('"bg_0a1b2c3d" is none of this plugin\'s tasks (opencode-offshoot; offshoot_list lists them)');
    expect(out).toContain(
      "another plugin (oh-my-opencode) also runs background tasks with ids like it: read one of those with that plugin's own background_output or background_cancel, not with this plugin's offshoot_output.",
    );
  });

  test("cancel under our name: the child is stopped, the task cancelled, one notice", async () => {
    const { model, server } = env;
    await untilNamesSettled(env);
    model.script({ name: "c-child", match: (r) => lastUserText(r).includes("CHILD_C"), reply: { text: "too late", delayMs: 60_000 } });
    const parent = await newParent(env, "coexist C");
    const id = taskIdIn(await promptTool(env, parent, "LAUNCH_C", "offshoot_task", { description: "Task C", prompt: "CHILD_C", agent: "general" }));
    await requestOf(model, "c-child");
    const out = await promptTool(env, parent, "CANCEL_C", "offshoot_cancel", { task_id: id });
    expect(out).toBe(`Cancelled ${id} "Task C" (was running).`);
    expect((await storedTask(server, id))?.status).toBe("cancelled");
    await until("the cancel notice", async () => notifications(await getMessages(server.client, parent), id).length === 1 || undefined);
    checkDeliveriesLater(env, "C: one notice, no wake", parent, { notifications: 1, wakes: 0 });
  });

  test("a native fork's first request starts with its parent's, byte for byte; a text fork names our tool in its preamble; both receipts", async () => {
    const { model, server } = env;
    await untilNamesSettled(env);
    model.script({ name: "n-child", match: (r) => lastUserText(r).includes("CHILD_N"), reply: { text: "N_RESULT" } });
    model.script({ name: "t-child", match: (r) => lastUserText(r).includes("CHILD_T"), reply: { text: "T_RESULT" } });
    model.script({ name: "nt-wake", match: (r) => isWake(r) && lastUserText(r).includes("Fork"), reply: { text: "Noted forks." } });
    const parent = await newParent(env, "coexist forks");
    const native = await promptTool(env, parent, "FORK_N", "offshoot_task", { description: "Fork N", prompt: "CHILD_N", fork: true });
    expect(native).toContain("Fork: native: shares your prompt cache.");
    const parentReq = (await requestOf(model, "FORK_N-call")).body;
    const childReq = (await requestOf(model, "n-child")).body;
    expect(JSON.stringify(childReq.tools)).toBe(JSON.stringify(parentReq.tools));
    expect(childReq.messages[0]).toEqual(parentReq.messages[0]); // the system prompt
    expect(JSON.stringify(childReq.messages.slice(0, parentReq.messages.length))).toBe(JSON.stringify(parentReq.messages));
    // its directive names the tool that started it as the model saw it
    expect(lastUserText(childReq)).toContain("up to its offshoot_task call that started you");

    const text = await promptTool(env, parent, "FORK_T", "offshoot_task", { description: "Fork T", prompt: "CHILD_T", agent: "general", fork: true });
    expect(text).toMatch(/\(not native: agent general is not yours \(.+\)\)/);
    const textChild = (await requestOf(model, "t-child")).body;
    const inherited = JSON.stringify(textChild.messages);
    expect(inherited).toContain(PREAMBLE_START);
    expect(inherited).toContain("You are the forked child of a offshoot_task call");

    const ids = [taskIdIn(native), taskIdIn(text)];
    await until("both forks ended", async () => {
      const all = await Promise.all(ids.map((i) => storedTask(server, i)));
      return all.every((t) => t?.status === "completed") || undefined;
    });
    const listed = await promptTool(env, parent, "LIST_FORKS", "offshoot_list", {});
    expect(listed).toContain("native fork: read your context from the cache");
    expect(listed).toContain("text fork: only the system prompt and tools could come from your cache");
  });

  test("a child's question: listed with the answer call under our name, answered through offshoot_output", async () => {
    const { model, server } = env;
    await untilNamesSettled(env);
    const ASK = {
      questions: [
        {
          question: "Which database?",
          header: "Database",
          options: [
            { label: "PostgreSQL", description: "a server" },
            { label: "SQLite", description: "a file" },
          ],
        },
      ],
    };
    model.script({
      name: "q-ask",
      match: (r) => lastUserText(r).includes("CHILD_Q") && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "question", arguments: ASK }] },
    });
    model.script({
      name: "q-done",
      match: (r) => lastUserText(r).includes("CHILD_Q") && isToolFollowUp(r),
      reply: (r: ChatRequest) => ({ text: `DONE_Q: ${toolResult(r, "question")?.content ?? "none"}` }),
    });
    const parent = await newParent(env, "coexist Q");
    const id = taskIdIn(await promptTool(env, parent, "LAUNCH_Q", "offshoot_task", { description: "Task Q", prompt: "CHILD_Q", agent: "build" }));
    await requestOf(model, "q-ask");
    const listed = await until("the question listed", async () => {
      const out = await promptTool(env, parent, `LIST_Q_${Date.now()}`, "offshoot_list", {});
      return out.includes("waiting for the user's answer") ? out : undefined;
    });
    expect(listed).toContain(`offshoot_output({ task_id: "${id}", answer: "<answer>" })`);
    const answered = await promptTool(env, parent, "ANSWER_Q", "offshoot_output", { task_id: id, answer: "PostgreSQL", block: true, timeout: 60 });
    expect(answered).toContain("DONE_Q");
    expect(answered).toContain("PostgreSQL");
    expect((await storedTask(server, id))?.status).toBe("completed");
  });

  test("take under our name: a worktree task's change lands in the checkout", async () => {
    const { model, server } = env;
    await untilNamesSettled(env);
    model.script({
      name: "w-child",
      match: (r) => lastUserText(r).includes("CHILD_W") && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "bash", arguments: { command: "printf 'export const w = 2;\\n' >> src/shared.ts", description: "edit" } }] },
    });
    model.script({ name: "w-done", match: (r) => lastUserText(r).includes("CHILD_W") && isToolFollowUp(r), reply: { text: "W done" } });
    model.script({ name: "w-wake", match: (r) => isWake(r) && lastUserText(r).includes('"Task W"'), reply: { text: "Noted W." } });
    const parent = await newParent(env, "coexist W");
    const id = taskIdIn(
      await promptTool(env, parent, "LAUNCH_W", "offshoot_task", { description: "Task W", prompt: "CHILD_W", agent: "general", isolation: "worktree" }),
    );
    await until("W ended", async () => ((await storedTask(server, id))?.status === "completed" ? true : undefined));
    await until("W's notice", async () => notifications(await getMessages(server.client, parent), id).length === 1 || undefined);
    const taken = await promptTool(env, parent, "TAKE_W", "offshoot_take", { task_id: id });
    expect(namesInTexts(taken)).toEqual([]);
    expect(fs.readFileSync(path.join(server.directory, "src/shared.ts"), "utf8")).toBe("export const shared = 1;\nexport const w = 2;\n");
    expect(execFileSync("git", ["status", "--porcelain"], { cwd: server.directory, encoding: "utf8" })).toContain("src/shared.ts");
  });
});

async function newParent(e: Env, title: string): Promise<string> {
  const r = await e.server.client.session.create({ body: { title } });
  if (r.error || !r.data) throw new Error(`session.create failed: ${JSON.stringify(r.error)}`);
  return r.data.id;
}

registerLateChecks(env);

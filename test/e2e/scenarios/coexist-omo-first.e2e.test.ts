/**
 * Beside oh-my-opencode 4.19.4 listed BEFORE ours (coexist-omo.e2e.test.ts has it after ours and goes
 * through every tool): ours step aside the same way, whatever the order, and a launch, its read, its
 * notice and its wake work under our names.
 */
import { describe, expect, test } from "vitest";
import { getMessages, installOtherPlugins, lastUserText } from "../harness/index.js";
import { checkDeliveriesLater, isWake, notifications, registerLateChecks, taskIdIn, until, useOpencode, wakePrompts } from "./helpers.js";
import { expectOffered, namesInTexts, promptTool, untilNamesSettled } from "./coexist-helpers.js";

const env = useOpencode({ around: async () => ({ before: [(await installOtherPlugins()).omo] }), startTimeoutMs: 120_000 });

describe("beside oh-my-opencode (listed before ours)", () => {
  test("ours step aside to offshoot_*; a launch is read, noticed and woken for once, under our names", async () => {
    const { model, server } = env;
    expectOffered(await untilNamesSettled(env));
    expect(server.logs()).toContain("offshoot: another plugin (oh-my-opencode) registers background_output, background_cancel");
    model.script({ name: "b-child", match: (r) => lastUserText(r).includes("CHILD_B"), reply: { text: "B_RESULT" } });
    model.script({ name: "b-wake", match: (r) => isWake(r) && lastUserText(r).includes('"Task B"'), reply: { text: "Noted B." } });
    const parent = (await server.client.session.create({ body: { title: "omo first" } })).data!.id;
    const launched = await promptTool(env, parent, "LAUNCH_B", "offshoot_task", { description: "Task B", prompt: "CHILD_B", agent: "general" });
    const id = taskIdIn(launched);
    expect(launched).toContain(`offshoot_output({ task_id: "${id}" })`);
    await until("the notice and the wake", async () => {
      const m = await getMessages(server.client, parent);
      return notifications(m, id).length === 1 && wakePrompts(m).length === 1 && JSON.stringify(m.at(-1)?.parts ?? []).includes("Noted B.") ? true : undefined;
    });
    checkDeliveriesLater(env, "B: one notice, one wake", parent, { notifications: 1, wakes: 1 });
    const read = await promptTool(env, parent, "READ_B", "offshoot_output", { task_id: id });
    expect(read).toContain("B_RESULT");
    expect(namesInTexts(launched + read)).toEqual([]);
  });
});

registerLateChecks(env);

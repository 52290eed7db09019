/**
 * A plugin this one does not know changes the system prompt by session, listed after ours
 * (test/e2e/fixtures/per-session-note): a native fork is launched (nothing says it cannot hold), and
 * its receipt then names the cause from the child's first request as sent: the part (the system
 * prompt), the first differing character, and that a plugin listed after ours made it, by name.
 */
import path from "node:path";
import { describe, expect, test } from "vitest";
import { type ChatRequest, lastUserText } from "../harness/index.js";
import { isWake, registerLateChecks, requestOf, storedTask, taskIdIn, until, useOpencode } from "./helpers.js";
import { promptTool } from "./coexist-helpers.js";

const NOTE_PLUGIN = path.resolve(import.meta.dirname, "../fixtures/per-session-note/index.js");
const env = useOpencode({ around: async () => ({ after: [NOTE_PLUGIN] }), modelOptions: { prefixCache: true } });

describe("a native fork whose system prompt another plugin changes by session", () => {
  test("the receipt names the system prompt, the first differing character and the plugin listed after ours", async () => {
    const { model, server } = env;
    model.script({ name: "r-child", match: (r) => lastUserText(r).includes("CHILD_R"), reply: { text: "R_RESULT" } });
    model.script({ name: "r-wake", match: (r) => isWake(r), reply: { text: "Noted R." } });
    const parent = (await server.client.session.create({ body: { title: "receipt" } })).data!.id;
    const launched = await promptTool(env, parent, "FORK_R", "background_task", { description: "Fork R", prompt: "CHILD_R", fork: true });
    expect(launched).toContain("Fork: native: shares your prompt cache.");
    // the system prompt as sent: OpenCode's system messages, joined as it joins its parts
    const systemOf = (r: ChatRequest) =>
      r.messages
        .filter((m) => m.role === "system")
        .map((m) => m.content as string)
        .join("\n");
    const parentSystem = systemOf((await requestOf(model, "FORK_R-call")).body);
    const childSystem = systemOf((await requestOf(model, "r-child")).body);
    expect(childSystem).not.toBe(parentSystem);
    let at = 0;
    while (parentSystem[at] === childSystem[at]) at++;

    const id = taskIdIn(launched);
    await until("R's receipt", async () => ((await storedTask(server, id)) as { receipt?: unknown } | undefined)?.receipt ?? undefined);
    const listed = await promptTool(env, parent, "LIST_R", "background_list", {});
    expect(listed).toContain(`⚠ native fork, but the system prompt differed from your request's at character ${at} of ${parentSystem.length}`);
    expect(listed).toContain("changed after this plugin by a plugin listed after it (per-session-note)");
  });
});

registerLateChecks(env);

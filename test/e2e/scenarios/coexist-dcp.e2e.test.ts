/**
 * Beside @tarquinen/opencode-dcp 3.1.14 (dynamic context pruning, as released on the registry), listed
 * after ours and before ours: it keeps one process-wide state that flips with the session it last
 * saw and rewrites each model request by it (its system prompt, `<dcp-…>` tags in the messages), so a
 * native child's requests cannot start byte-identical to its parent's. A `fork: true` launch is then a
 * text fork whose receipt says why, and its inherited context (read from the stored conversation)
 * holds none of DCP's tags and the user's words whole.
 */
import { describe, expect, test } from "vitest";
import { getMessages, installOtherPlugins, lastUserText, textOf } from "../harness/index.js";
import { isWake, registerLateChecks, requestOf, storedTask, taskIdIn, until, useOpencode } from "./helpers.js";
import { promptTool } from "./coexist-helpers.js";

const USER_WORDS = 'Keep the deploy key at vault path secret/deploy; never print it. <b>Bold</b> & "quoted" words stay whole.';

for (const order of ["after", "before"] as const) {
  describe(`beside DCP (listed ${order} ours)`, () => {
    const env = useOpencode({
      around: async () => {
        const { dcp } = await installOtherPlugins();
        return order === "after" ? { after: [dcp] } : { before: [dcp] };
      },
      startTimeoutMs: 120_000,
    });

    test("a fork is launched as a text fork whose receipt names DCP and why; its inherited context holds no <dcp-…> tag and the user's words whole", async () => {
      const { model, server } = env;
      model.script({ name: "d-note", match: (r) => lastUserText(r).includes("secret/deploy"), reply: { text: "Noted the key's place." } });
      model.script({ name: "d-child", match: (r) => lastUserText(r).includes("CHILD_D"), reply: { text: "D_RESULT" } });
      model.script({ name: "d-wake", match: (r) => isWake(r), reply: { text: "Noted D." } });
      const parent = (await server.client.session.create({ body: { title: `dcp ${order}` } })).data!.id;
      await server.client.session.prompt({ path: { id: parent }, body: { parts: [{ type: "text", text: USER_WORDS }] } });

      const launched = await promptTool(env, parent, "FORK_D", "background_task", { description: "Fork D", prompt: "CHILD_D", fork: true });
      expect(launched).toContain("Fork: context copy:");
      expect(launched).toContain("(not native: the plugin @tarquinen/opencode-dcp is loaded: it rewrites each model request by session");
      // DCP is at work: the parent's request as the model sees it carries its tags
      const parentReq = (await requestOf(model, "FORK_D-call")).body;
      expect(JSON.stringify(parentReq.messages)).toContain("<dcp-");

      const id = taskIdIn(launched);
      const child = (await storedTask(server, id))!.sessionID;
      // the inherited context as stored in the child, and as its first request carries it
      const stored = (await getMessages(server.client, child)).filter((m) => m.info.role === "user").map(textOf);
      const context = stored.find((text) => text.includes("<inherited_context>"))!;
      expect(context).toBeDefined();
      expect(context).not.toContain("<dcp-");
      expect(context).toContain(USER_WORDS);
      const childReq = (await requestOf(model, "d-child")).body;
      const sent = JSON.stringify(childReq.messages);
      const block = sent.slice(sent.indexOf("<inherited_context>"), sent.indexOf("</inherited_context>"));
      expect(block.length).toBeGreaterThan(0);
      expect(block).not.toContain("<dcp-");
      expect(block).toContain(JSON.stringify(USER_WORDS).slice(1, -1));

      await until("D ended", async () => ((await storedTask(server, id))?.status === "completed" ? true : undefined));
      const listed = await promptTool(env, parent, "LIST_D", "background_list", {});
      expect(listed).toContain("not native: the plugin @tarquinen/opencode-dcp is loaded");
    });

    registerLateChecks(env);
  });
}

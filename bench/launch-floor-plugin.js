// A bench-only OpenCode plugin (bench/parallel.ts loads it beside offshoot): one tool that does the
// host's part of a background launch and nothing of the plugin's. With `run: true` it creates a
// child session and sends it a prompt through OpenCode's server, as a launch that runs at once must;
// every call then makes one small file durable (write, fsync, rename), as a launch's record must be
// before the tool answers. The same turn of 32 calls, with as many `run` calls as the launch turn
// had launches that ran, is the floor of that turn: what any plugin keeping the same promises waits
// for. Never part of the package (`files` ships dist/ only).
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { tool } from "@opencode-ai/plugin";

export default {
  id: "launch-floor",
  server: async ({ client }) => ({
    tool: {
      launch_floor: tool({
        description: "Benchmark probe: the host's part of a launch (a child session and its prompt, when run is true) and one durable small write.",
        args: {
          run: tool.schema.boolean().optional().describe("Create a child session and send it a prompt"),
          prompt: tool.schema.string().optional().describe("The child's prompt"),
        },
        async execute(args, ctx) {
          if (args.run) {
            const created = await client.session.create({ body: { parentID: ctx.sessionID, title: "launch floor" } });
            if (!created.data) throw new Error("creating the child session failed");
            const sent = await client.session.promptAsync({
              path: { id: created.data.id },
              body: { parts: [{ type: "text", text: args.prompt ?? "CHILD launch floor" }] },
            });
            if (sent.error) throw new Error("sending the prompt failed");
          }
          const file = path.join(os.tmpdir(), `launch-floor-${process.pid}-${ctx.callID}.json`);
          const handle = await fs.open(`${file}.tmp`, "w", 0o600);
          try {
            await handle.writeFile(JSON.stringify({ callID: ctx.callID, at: Date.now() }));
            await handle.sync();
          } finally {
            await handle.close();
          }
          await fs.rename(`${file}.tmp`, file);
          await fs.rm(file, { force: true });
          return args.run ? "child created and prompted; record durable" : "record durable";
        },
      }),
    },
  }),
};

// A bench-only OpenCode plugin (bench/memory.ts loads it, with and without offshoot): one tool the
// scripted model calls between rounds. It runs a full garbage collection inside OpenCode's own
// (Bun) process, reports that process's memory, and, when asked, writes a heap snapshot there.
// Never part of the package (`files` ships dist/ only).
import fs from "node:fs";
import { tool } from "@opencode-ai/plugin";

/** Bun's API, when OpenCode runs the plugin in Bun (it does); undefined elsewhere. */
const bun = globalThis.Bun;

export default {
  id: "heap-probe",
  server: async () => ({
    tool: {
      heap_probe: tool({
        description: "Benchmark probe: full GC, then the process's memory (and a heap snapshot when a path is given).",
        args: {
          snapshot: tool.schema.string().optional().describe("Write a heap snapshot (V8 format) to this absolute path"),
        },
        async execute(args) {
          bun?.gc(true);
          bun?.gc(true);
          let snapshotError;
          if (args.snapshot) {
            try {
              // Bun ≥ 1.1.33 writes V8's format (readable by Chrome's devtools and bench/memory.ts)
              const snapshot = bun.generateHeapSnapshot("v8");
              fs.writeFileSync(args.snapshot, typeof snapshot === "string" ? snapshot : JSON.stringify(snapshot));
            } catch (error) {
              snapshotError = String(error?.message ?? error);
            }
          }
          const usage = process.memoryUsage();
          return JSON.stringify({ rss: usage.rss, heapUsed: usage.heapUsed, heapTotal: usage.heapTotal, external: usage.external, snapshotError });
        },
      }),
    },
  }),
};

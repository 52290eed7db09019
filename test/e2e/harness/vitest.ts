/**
 * Vitest glue: print the OpenCode server log (and what the scripted model was asked)
 * when a test fails.
 */
import { beforeEach } from "vitest";
import type { OpencodeServer } from "./opencode.js";
import type { ScriptedModel } from "./scripted-model.js";

export interface FailureContext {
  server?: OpencodeServer;
  model?: ScriptedModel;
}

/** Format the tail of the server log and a summary of the model requests. */
export function describeFailure(ctx: FailureContext, maxLogChars = Number(process.env.OFFSHOOT_E2E_LOG_CHARS) || 20_000): string {
  const out: string[] = [];
  if (ctx.server) {
    const log = ctx.server.logs();
    const tail = log.length > maxLogChars ? `[... ${log.length - maxLogChars} chars cut ...]\n` + log.slice(-maxLogChars) : log;
    out.push(`----- opencode server log (${ctx.server.url}, project ${ctx.server.directory}) -----`, tail);
  }
  if (ctx.model) {
    out.push(`----- scripted model: ${ctx.model.requests.length} request(s) -----`);
    for (const r of ctx.model.requests) {
      const last = r.body.messages[r.body.messages.length - 1];
      const lastText = typeof last?.content === "string" ? last.content : JSON.stringify(last?.content ?? "");
      out.push(
        `#${r.index} ${r.kind} -> ${r.label}${r.aborted ? " (aborted)" : ""}; ${r.body.messages.length} msgs; last ${last?.role}: ${lastText.slice(0, 160).replace(/\n/g, "\\n")}`,
      );
    }
  }
  return out.join("\n");
}

/**
 * Call at the top level of a test file (or inside a describe). `get` is called when a test
 * fails, so it can return objects created later in `beforeAll`.
 */
export function printServerLogOnFailure(get: () => FailureContext): void {
  beforeEach((testCtx) => {
    testCtx.onTestFailed(() => {
      const text = describeFailure(get());
      if (text) process.stderr.write(`\n===== ${testCtx.task.name}: failed =====\n${text}\n`);
    });
  });
}

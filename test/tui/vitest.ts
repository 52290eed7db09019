/** Vitest glue for the TUI scenarios (kept apart so scripts can import the harness without vitest). */
import { beforeEach } from "vitest";
import type { TuiSession } from "./harness.js";

/** On a failed test, print the tail of the TUI's own log (plugin load errors land there). */
export function printTuiLogOnFailure(get: () => TuiSession | undefined, maxChars = 8_000): void {
  beforeEach((ctx) => {
    ctx.onTestFailed(() => {
      const log = get()?.log() ?? "";
      if (log) process.stderr.write(`\n----- TUI log (tail) -----\n${log.slice(-maxChars)}\n`);
    });
  });
}

// `opencode run "…"` exits as soon as its session goes idle, and OpenCode aborts every running
// session on the way out: a background task started there would be cut off and its result lost.
// Such a process is recognised from its command line (the plugin runs inside it).

/** Global options of the opencode CLI that take a value (so the value is not the command). */
const OPTIONS_WITH_VALUE = new Set(["--log-level"]);

/** Whether this process is a one-shot `opencode run` (not `serve`, not the TUI). */
export function isOneShotRun(argv: readonly string[] = process.argv): boolean {
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg.startsWith("/$bunfs/") || (i === 1 && /\.(c|m)?[jt]s$/.test(arg))) continue; // the bundled script
    if (OPTIONS_WITH_VALUE.has(arg)) {
      i++;
      continue;
    }
    if (arg.startsWith("-")) continue;
    return arg === "run";
  }
  return false;
}

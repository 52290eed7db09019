import { defineConfig } from "tsup";

// Three entries: the plugin (also exported as "./server"), the pure fork pipeline ("./fork") and
// the TUI half ("./tui", listed in tui.json). The TUI imports the host's Solid/OpenTUI runtime,
// which OpenCode maps to its own copies: those must stay external (optional peers).
// @opencode-ai/plugin is a runtime dependency (OpenCode installs `dependencies` of npm plugins);
// everything else the plugin imports at run time is our own code.
export default defineConfig({
  entry: { index: "src/index.ts", "fork/index": "src/fork/index.ts", tui: "src/tui/index.ts" },
  format: ["esm"],
  target: "node20",
  platform: "node",
  dts: true,
  clean: true,
  sourcemap: true,
  splitting: true,
  external: ["@opencode-ai/plugin", "solid-js", "solid-js/store", "@opentui/solid", "@opentui/core", "@opentui/keymap"],
});

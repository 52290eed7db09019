import { defineConfig } from "tsup";

// Two entries: the plugin (also exported as "./server") and the pure fork pipeline ("./fork").
// @opencode-ai/plugin is a runtime dependency (OpenCode installs `dependencies` of npm plugins);
// everything else the plugin imports at run time is our own code.
export default defineConfig({
  entry: { index: "src/index.ts", "fork/index": "src/fork/index.ts" },
  format: ["esm"],
  target: "node20",
  platform: "node",
  dts: true,
  clean: true,
  sourcemap: true,
  splitting: true,
  external: ["@opencode-ai/plugin"],
});

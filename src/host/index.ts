/**
 * The host seam: this folder is the only place that talks to OpenCode. It holds the V1 client's
 * calls (client.ts, session.ts, app.ts, tui.ts, question.ts), what the tool context carries
 * (tool-context.ts), the host's types (types.ts), the plugin's tool helper (tool.ts) and the TUI
 * half's calls through the TUI plugin api (tui-client.ts). It imports nothing else of ours: only
 * node, OpenCode's SDK and plugin packages, and zod. A port to OpenCode V2 is a new adapter folder
 * beside this one, with the same functions, not a rewrite of the code that calls them.
 *
 * The rest of the code imports the file it needs (the TUI bundle takes only tui-client.ts, never
 * this barrel, so no server code reaches it).
 */
export * from "./app.js";
export * from "./client.js";
export * from "./question.js";
export * from "./session.js";
export * from "./tool.js";
export * from "./tool-context.js";
export * from "./tui.js";
export * from "./types.js";

// The plugin package's tool helper (`tool`, with zod as `tool.schema`), for our tools and options.

export { tool } from "@opencode-ai/plugin";
export type { ToolContext, ToolDefinition } from "@opencode-ai/plugin";

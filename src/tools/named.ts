// The five tools as OpenCode is handed them: under the names this process offers (tool-names.ts),
// with every text of theirs (description, each argument's description, each reply) naming the tools
// as the model sees them. The texts are written with the design's names; they are renamed here, where
// they leave. A renamed argument schema is made once per name set and shared, so the project's and a
// worktree child's instance offer the same objects (a native fork's tools are the parent's, byte for byte).

import type { z } from "zod";
import type { ToolDefinition } from "../host/tool.js";
import { TOOL_KEYS, type ToolKey, type ToolNames, toolNames, withToolNames } from "../tool-names.js";

type Shape = Record<string, z.ZodType>;
type Result = Awaited<ReturnType<ToolDefinition["execute"]>>;

const shapes = new Map<string, Shape>();

/** A tool's argument schemas with their descriptions renamed (the same objects where nothing changes), shared per name set. */
function renamedShape(key: ToolKey, shape: Shape, names: ToolNames): Shape {
  const id = `${key}:${names[key]}:${names.task}`;
  let out = shapes.get(id);
  if (!out) {
    out = Object.fromEntries(
      Object.entries(shape).map(([arg, schema]) => {
        const text = schema.description;
        const renamed = text === undefined ? text : withToolNames(text, names);
        return [arg, renamed === text ? schema : schema.describe(renamed!)];
      }),
    );
    shapes.set(id, out);
  }
  return out;
}

/** A reply with the tools named as they are offered. */
function renamedResult(result: Result, names: ToolNames): Result {
  return typeof result === "string" ? withToolNames(result, names) : { ...result, output: withToolNames(result.output, names) };
}

/** One tool as offered: its texts renamed. */
export function namedTool(key: ToolKey, def: ToolDefinition, names: ToolNames = toolNames()): ToolDefinition {
  return {
    ...def,
    description: withToolNames(def.description, names),
    args: renamedShape(key, def.args as Shape, names),
    execute: async (args, ctx) => renamedResult(await def.execute(args, ctx), names),
  } as ToolDefinition;
}

/** The five tools, keyed by the names they are offered under. */
export function namedTools(defs: Readonly<Record<ToolKey, ToolDefinition>>, names: ToolNames = toolNames()): Record<string, ToolDefinition> {
  return Object.fromEntries(TOOL_KEYS.map((key) => [names[key], namedTool(key, defs[key], names)]));
}

// The five tools' arguments: one zod shape per tool, used as the tool's `args` (OpenCode turns it
// into the JSON schema the model sees, with the .describe() texts) and to parse the raw arguments
// inside `execute`: OpenCode 1.18.33 passes the model's JSON through unvalidated.

import { tool } from "../host/tool.js";
import type { z } from "zod"; // types only: the schemas come from tool.schema (zod v4, OpenCode's own)
import { ARGS as TASK_ARGS } from "./background-task.txt.js";
import { ARGS as OUTPUT_ARGS } from "./background-output.txt.js";
import { ARGS as CANCEL_ARGS } from "./background-cancel.txt.js";
import { ARGS as LIST_ARGS } from "./background-list.txt.js";
import { ARGS as TAKE_ARGS } from "./background-take.txt.js";
import { oneLine } from "../text.js";
import { TASK_STATUSES } from "../task-record.js";

const schema = tool.schema;
type Shape = Record<string, z.ZodType>;
type Issue = z.core.$ZodIssue;

export const BACKGROUND_TASK_ARGS = {
  description: schema.string().optional().describe(TASK_ARGS.description),
  prompt: schema.string().describe(TASK_ARGS.prompt),
  agent: schema.string().optional().describe(TASK_ARGS.agent),
  fork: schema.boolean().optional().describe(TASK_ARGS.fork),
  model: schema.string().optional().describe(TASK_ARGS.model),
  resume: schema.string().optional().describe(TASK_ARGS.resume),
  isolation: schema.enum(["shared", "worktree"]).optional().describe(TASK_ARGS.isolation),
  network: schema.array(schema.string().max(300)).max(100).optional().describe(TASK_ARGS.network),
  remote: schema.string().max(40).optional().describe(TASK_ARGS.remote),
};

export const BACKGROUND_OUTPUT_ARGS = {
  task_id: schema.string().describe(OUTPUT_ARGS.task_id),
  block: schema.boolean().optional().describe(OUTPUT_ARGS.block),
  timeout: schema.number().min(0).optional().describe(OUTPUT_ARGS.timeout),
  answer: schema
    .union([schema.string(), schema.array(schema.string())])
    .optional()
    .describe(OUTPUT_ARGS.answer),
};

export const BACKGROUND_CANCEL_ARGS = {
  task_id: schema.string().optional().describe(CANCEL_ARGS.task_id),
  all: schema.boolean().optional().describe(CANCEL_ARGS.all),
  discard: schema.boolean().optional().describe(CANCEL_ARGS.discard),
};

export const BACKGROUND_TAKE_ARGS = {
  task_id: schema.string().describe(TAKE_ARGS.task_id),
  keep: schema.boolean().optional().describe(TAKE_ARGS.keep),
};

export const BACKGROUND_LIST_ARGS = {
  status: schema.enum(TASK_STATUSES).optional().describe(LIST_ARGS.status),
};

/** A task id (or prefix, or child session id) from an argument: one clean line, short. */
export function taskIdArg(value: string): string {
  return oneLine(value, 64).text;
}

/** How the "call again" hint shows a good value of each string or number argument. */
const EXAMPLES: Record<string, string> = {
  description: '"<3-8 words>"',
  prompt: '"<instructions>"',
  agent: '"general"',
  model: '"<provider>/<model>"',
  resume: '"bg_…"',
  task_id: '"bg_…"',
  timeout: "60",
  answer: '"<the user\'s answer>"',
  remote: '"<remote name>"',
};

const objects = new WeakMap<Shape, z.ZodObject>();
function objectOf(shape: Shape): z.ZodObject {
  let object = objects.get(shape);
  if (!object) objects.set(shape, (object = schema.object(shape)));
  return object;
}

function preview(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (typeof value === "string") return `the string ${JSON.stringify(oneLine(value, 40).text)}`;
  if (typeof value === "number") return Number.isNaN(value) ? "NaN" : `the number ${value}`;
  if (typeof value === "boolean") return `the boolean ${value}`;
  let json: string;
  try {
    json = JSON.stringify(value) ?? String(value);
  } catch {
    json = String(value);
  }
  const shown = oneLine(json, 40).text;
  if (Array.isArray(value)) return `an array (${shown})`;
  if (typeof value === "object") return `an object (${shown})`;
  return `a ${typeof value}`;
}

function want(issue: Issue): string {
  if (issue.code === "invalid_type") {
    if (issue.expected === "boolean") return "true or false";
    if (issue.expected === "number") return "a number";
    if (issue.expected === "string") return "a string";
    return `a ${issue.expected}`;
  }
  if (issue.code === "too_small" && issue.origin === "number") return `a number of at least ${String(issue.minimum)}`;
  if (issue.code === "too_big" && issue.origin === "number") return `a number of at most ${String(issue.maximum)}`;
  if (issue.code === "invalid_union") return "a string or a list of strings";
  if (issue.code === "invalid_value") return `one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
  return `valid (${issue.message})`;
}

function hint(name: string, issue: Issue): string {
  if (issue.code === "invalid_type" && issue.expected === "boolean") return `${name}: true or ${name}: false`;
  if (issue.code === "invalid_value") return `${name}: ${JSON.stringify(issue.values[0])}`;
  return `${name}: ${EXAMPLES[name] ?? (issue.code === "invalid_type" && issue.expected === "string" ? '"…"' : "…")}`;
}

/**
 * Parses a tool's raw arguments against its shape. Unknown keys are ignored; `null` for an optional
 * argument counts as not given. On failure, `error` has one sentence per bad argument (its name,
 * what it must be, what came) and says to call the tool again.
 */
/** A tool's arguments after parsing: the type its zod shape describes. */
export type ParsedArgs<S extends Shape> = z.infer<z.ZodObject<S>>;

export function parseToolArgs<S extends Shape>(
  toolName: string,
  shape: S,
  raw: unknown,
): { ok: true; value: z.infer<z.ZodObject<S>> } | { ok: false; error: string } {
  let input = raw;
  if (raw !== null && typeof raw === "object" && !Array.isArray(raw)) {
    const copy: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(raw)) {
      if (value === null && Object.hasOwn(shape, key) && shape[key]!.safeParse(undefined).success) continue;
      copy[key] = value;
    }
    input = copy;
  }
  const result = objectOf(shape).safeParse(input, { reportInput: true });
  if (result.success) return { ok: true, value: result.data as z.infer<z.ZodObject<S>> };

  const issues = result.error.issues;
  const whole = issues.find((issue) => issue.path.length === 0);
  if (whole) {
    return {
      ok: false,
      error: `Error: ${toolName} takes its arguments as one JSON object of named fields, not ${preview(raw)}. Call ${toolName} again with named arguments.`,
    };
  }
  const seen = new Set<string>();
  const sentences: string[] = [];
  const hints: string[] = [];
  for (const issue of issues) {
    const name = String(issue.path[0]);
    if (seen.has(name)) continue;
    seen.add(name);
    const given = input !== null && typeof input === "object" && Object.hasOwn(input, name);
    const value = "input" in issue ? issue.input : given ? (input as Record<string, unknown>)[name] : undefined;
    sentences.push(
      given
        ? `${toolName} argument "${name}" must be ${want(issue)}, not ${preview(value)}.`
        : `${toolName} argument "${name}" is missing; it must be ${want(issue)}.`,
    );
    hints.push(hint(name, issue));
  }
  const again = `Call ${toolName} again with ${hints.join(", ")}.`;
  return { ok: false, error: `Error: ${[...sentences, again].join(sentences.length === 1 ? " " : "\n")}` };
}

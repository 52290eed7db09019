import { describe, expect, it } from "vitest";
import { tool } from "@opencode-ai/plugin";
import { ARGS as TASK_ARGS } from "../../../src/tools/background-task.txt.js";
import { ARGS as OUTPUT_ARGS } from "../../../src/tools/background-output.txt.js";
import { BACKGROUND_CANCEL_ARGS, BACKGROUND_LIST_ARGS, BACKGROUND_OUTPUT_ARGS, BACKGROUND_TASK_ARGS, parseToolArgs } from "../../../src/tools/args.js";

const errorOf = (result: ReturnType<typeof parseToolArgs>) => (result.ok ? undefined : result.error);

describe("parseToolArgs: refusals name the argument, what it must be and what came", () => {
  it('fork: "false" is refused with the one-sentence error and how to call again', () => {
    const result = parseToolArgs("background_task", BACKGROUND_TASK_ARGS, { description: "d", prompt: "p", agent: "general", fork: "false" });
    expect(errorOf(result)).toBe(
      'Error: background_task argument "fork" must be true or false, not the string "false". Call background_task again with fork: true or fork: false.',
    );
  });

  it("a numeric task_id, a string timeout, a string block: one sentence each", () => {
    const error = errorOf(parseToolArgs("background_output", BACKGROUND_OUTPUT_ARGS, { task_id: 5, block: "true", timeout: "abc" }))!;
    expect(error.split("\n")).toEqual([
      'Error: background_output argument "task_id" must be a string, not the number 5.',
      'background_output argument "block" must be true or false, not the string "true".',
      'background_output argument "timeout" must be a number, not the string "abc".',
      'Call background_output again with task_id: "bg_…", block: true or block: false, timeout: 60.',
    ]);
  });

  it('all: "false" for background_cancel, a negative timeout, an unknown status', () => {
    expect(errorOf(parseToolArgs("background_cancel", BACKGROUND_CANCEL_ARGS, { all: "false" }))).toBe(
      'Error: background_cancel argument "all" must be true or false, not the string "false". Call background_cancel again with all: true or all: false.',
    );
    expect(errorOf(parseToolArgs("background_output", BACKGROUND_OUTPUT_ARGS, { task_id: "bg_1", timeout: -5 }))).toBe(
      'Error: background_output argument "timeout" must be a number of at least 0, not the number -5. Call background_output again with timeout: 60.',
    );
    expect(errorOf(parseToolArgs("background_list", BACKGROUND_LIST_ARGS, { status: "done" }))).toBe(
      'Error: background_list argument "status" must be one of "queued", "running", "resumed", "paused", "completed", "error", "cancelled", "interrupted", not the string "done". Call background_list again with status: "queued".',
    );
  });

  it("says when a required argument is missing, and previews objects, arrays, numbers and long strings briefly", () => {
    expect(errorOf(parseToolArgs("background_output", BACKGROUND_OUTPUT_ARGS, {}))).toBe(
      'Error: background_output argument "task_id" is missing; it must be a string. Call background_output again with task_id: "bg_…".',
    );
    const error = errorOf(
      parseToolArgs("background_task", BACKGROUND_TASK_ARGS, {
        description: { a: 1 },
        prompt: ["x", "y"],
        agent: `${"x".repeat(200_000)}\n\u001b[31m`,
        fork: 1,
        resume: 7,
      }),
    )!;
    const lines = error.split("\n");
    expect(lines[0]).toBe('Error: background_task argument "description" must be a string, not an object ({"a":1}).');
    expect(lines[1]).toBe('background_task argument "prompt" must be a string, not an array (["x","y"]).');
    expect(lines[2]).toBe('background_task argument "fork" must be true or false, not the number 1.');
    expect(lines[3]).toBe('background_task argument "resume" must be a string, not the number 7.');
    // the 200 KB agent was a valid string: not named; and the error stays short
    expect(error).not.toContain("agent");
    expect(error.length).toBeLessThan(600);
  });

  it("arguments that are not an object at all are refused in one sentence", () => {
    expect(errorOf(parseToolArgs("background_list", BACKGROUND_LIST_ARGS, "status=running"))).toBe(
      'Error: background_list takes its arguments as one JSON object of named fields, not the string "status=running". Call background_list again with named arguments.',
    );
  });

  it("a long string value is previewed on one line, cut, without control characters", () => {
    const error = errorOf(parseToolArgs("background_list", BACKGROUND_LIST_ARGS, { status: `running\n\u001b[2J${"z".repeat(5000)}` }))!;
    expect(error).toContain('not the string "running zzzzzzzz');
    expect(error).toContain('…"');
    expect(error).not.toMatch(/[\u0000-\u001f]/);
    expect(error.length).toBeLessThan(300);
  });
});

describe("parseToolArgs: accepted arguments", () => {
  it("passes good values through and ignores unknown keys", () => {
    const result = parseToolArgs("background_output", BACKGROUND_OUTPUT_ARGS, { task_id: "bg_1", block: false, timeout: 0, extra: "x" });
    expect(result).toEqual({ ok: true, value: { task_id: "bg_1", block: false, timeout: 0 } });
    expect(parseToolArgs("background_list", BACKGROUND_LIST_ARGS, {})).toEqual({ ok: true, value: {} });
  });

  it("null for an optional argument counts as not given; for a required one it is refused", () => {
    expect(parseToolArgs("background_cancel", BACKGROUND_CANCEL_ARGS, { task_id: null, all: true })).toEqual({ ok: true, value: { all: true } });
    expect(errorOf(parseToolArgs("background_output", BACKGROUND_OUTPUT_ARGS, { task_id: null }))).toBe(
      'Error: background_output argument "task_id" must be a string, not null. Call background_output again with task_id: "bg_…".',
    );
  });
});

describe("the same shapes are what the model sees", () => {
  it("keeps the .describe() texts, the types and the required fields in the JSON schema", () => {
    const json = tool.schema.toJSONSchema(tool.schema.object(BACKGROUND_TASK_ARGS)) as any;
    // description and agent are optional: agent left out with fork (a native fork) or resume, description with
    // resume; background_task requires them otherwise
    expect(json.required).toEqual(["prompt"]);
    expect(json.properties.fork).toEqual({ type: "boolean", description: TASK_ARGS.fork });
    expect(json.properties.description.description).toBe(TASK_ARGS.description);
    const output = tool.schema.toJSONSchema(tool.schema.object(BACKGROUND_OUTPUT_ARGS)) as any;
    expect(output.properties.timeout).toEqual({ type: "number", minimum: 0, description: OUTPUT_ARGS.timeout });
    expect(output.required).toEqual(["task_id"]);
  });
});

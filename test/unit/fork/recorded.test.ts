// The pipeline on the fixtures `npm run record-fixtures` rewrites from the real server. The assertions
// are derived from the recorded data, so they hold after every re-recording.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { ToolPart } from "@opencode-ai/sdk/v2";
import { describe, expect, it } from "vitest";
import { buildForkContext } from "../../../src/fork/index.js";
import type { SessionMessage } from "../../../src/fork/types.js";

const load = (name: string) => JSON.parse(readFileSync(join(import.meta.dirname, "../../fixtures/recorded", name), "utf8")).data as SessionMessage[];
const toolParts = (messages: SessionMessage[]) => messages.flatMap((m) => m.parts).filter((p): p is ToolPart => p.type === "tool");
const textOf = (m: SessionMessage) => m.parts.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("\n");

describe("recorded tool session", () => {
  const messages = load("session.messages.tools.json");
  const { text, stats } = buildForkContext(messages);
  const tools = toolParts(messages);
  const key = (p: ToolPart) => `${p.tool} ${JSON.stringify(p.state.input)}`;
  const newestOfEachCall = new Map(tools.map((p) => [key(p), p]));

  it("holds the newest result of every call whole: the >10 KB read, the bash output ending in Error, the failed call's error", () => {
    const results = [...newestOfEachCall.values()].map((p) =>
      p.state.status === "completed" ? p.state.output : p.state.status === "error" ? p.state.error : "",
    );
    expect(results.some((r) => r.length > 10_000)).toBe(true);
    expect(results.some((r) => /\nError: [^\n]*\s*$/.test(r) || r.trimEnd().split("\n").at(-1)!.includes("Error"))).toBe(true);
    expect(tools.some((p) => p.state.status === "error")).toBe(true);
    for (const result of results) expect(text.includes(result)).toBe(true);
  });

  it("replaces the older copy of a repeated identical call by a pointer", () => {
    const repeats = tools.length - newestOfEachCall.size;
    expect(repeats).toBeGreaterThan(0);
    expect(stats.supersededResults).toBe(repeats);
  });

  it("never prints tool metadata (OpenCode repeats outputs there)", () => {
    const metadataOnly = tools.flatMap((p) => ("metadata" in p.state ? Object.keys(p.state.metadata ?? {}) : []));
    expect(metadataOnly.length).toBeGreaterThan(0);
    expect(text.length).toBeLessThan(JSON.stringify(messages).length / 1.5);
  });
});

describe("recorded compacted session", () => {
  const messages = load("session.messages.compacted.json");
  const { text, stats, preamble } = buildForkContext(messages);
  const boundary = messages.findIndex((m) => m.parts.some((p) => p.type === "compaction"));
  const summary = messages.find((m) => m.info.role === "assistant" && m.info.summary === true)!;

  it("starts from the compaction: the summary and what follows are there, what the model no longer sees is not", () => {
    expect(boundary).toBeGreaterThan(0);
    expect(stats.compactionDetected).toBe(true);
    expect(stats.compactionSliceIndex).toBe(boundary);
    expect(preamble).toContain("Compaction summary included");
    expect(text.includes(textOf(summary))).toBe(true);
    for (const m of messages.slice(messages.indexOf(summary) + 1)) if (textOf(m)) expect(text.includes(textOf(m))).toBe(true);
    const before = messages
      .slice(0, boundary)
      .map(textOf)
      .filter((t) => t && !messages.slice(boundary).some((m) => textOf(m).includes(t)));
    expect(before.length).toBeGreaterThan(0);
    for (const t of before) expect(text.includes(t)).toBe(false);
  });
});

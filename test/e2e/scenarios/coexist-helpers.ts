/** What the coexistence suites share: the names offered, one tool call per turn, our old names in a text. */
import { expect } from "vitest";
import { getMessages, isToolFollowUp, lastUserText } from "../harness/index.js";
import { type Env, toolOutputs, until } from "./helpers.js";

export const OURS = ["offshoot_task", "offshoot_output", "offshoot_cancel", "offshoot_list", "offshoot_take"];

/** The instance's tool ids (GET /experimental/tool/ids). */
export async function toolIds(e: Env): Promise<string[]> {
  const res = await fetch(`${e.server.url}/experimental/tool/ids?directory=${encodeURIComponent(e.server.directory)}`);
  return (await res.json()) as string[];
}

/** The ids once the instance offers ours under their own names (after the one restart that makes it). */
export function untilNamesSettled(e: Env): Promise<string[]> {
  return until("our tools offered as offshoot_*", async () => {
    const ids = await toolIds(e);
    return ids.includes("offshoot_task") ? ids : undefined;
  });
}

/** Ours all five under our names; none of ours, nor of the design's names, is offered twice (the other plugin's own clashes with OpenCode's tools, `task` or `grep`, are not ours to settle). */
export function expectOffered(ids: readonly string[]): void {
  const watched = [...OURS, ...OURS.map((name) => name.replace("offshoot_", "background_"))];
  expect(ids.filter((id) => watched.includes(id) && ids.indexOf(id) !== ids.lastIndexOf(id))).toEqual([]);
  for (const name of OURS) expect(ids).toContain(name);
}

/** The design's names of ours a text still names (none, where ours are offered as offshoot_*): whole words, not another plugin's. */
export function namesInTexts(text: string): string[] {
  return [...text.matchAll(/\bbackground_(task|output|cancel|list|take)\b/g)].map((m) => m[0]);
}

/** The user's last words as the model got them, without DCP's message tags (it appends `<dcp-message-id>m0003</dcp-message-id>`). */
export function cueOf(r: Parameters<typeof lastUserText>[0]): string {
  return lastUserText(r)
    .replace(/<dcp-message-id>[^<]*<\/dcp-message-id>/g, "")
    .trim();
}

/** One parent turn (user text `cue`) that calls `tool` with `args`; returns the tool's output. */
export async function promptTool(e: Env, parent: string, cue: string, tool: string, args: Record<string, unknown>): Promise<string> {
  e.model.script({ name: `${cue}-call`, match: (r) => cueOf(r) === cue && !isToolFollowUp(r), reply: { toolCalls: [{ name: tool, arguments: args }] } });
  e.model.script({ name: `${cue}-called`, match: (r) => cueOf(r) === cue && isToolFollowUp(r), reply: { text: `called ${cue}` } });
  const r = await e.server.client.session.prompt({ path: { id: parent }, body: { parts: [{ type: "text", text: cue }] } });
  if (r.error) throw new Error(`prompt failed: ${JSON.stringify(r.error)}`);
  return toolOutputs(await getMessages(e.server.client, parent), tool).at(-1)!;
}

// Which files the parent read and modified. Computed over the WHOLE history (also before a
// compaction): even when old results are summarised or cut, the child can re-read these files.

import type { Part, ToolPart } from "../host/types.js";
import type { SessionMessage } from "./types.js";

export interface FileActivity {
  filesRead: string[];
  filesModified: string[];
}

const READ_TOOLS = new Set(["read"]);
const MODIFY_TOOLS = new Set(["edit", "write", "multiedit"]);

// The apply_patch envelope names files on these header lines.
const PATCH_FILE_LINE_RE = /^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+)$/gm;

/** Paths named by `*** Add File:`, `*** Update File:`, `*** Delete File:`, `*** Move to:` lines. */
export function pathsFromPatchText(text: string): string[] {
  if (!text.includes("*** ")) return [];
  const paths: string[] = [];
  for (const match of text.matchAll(PATCH_FILE_LINE_RE)) {
    const path = match[1]?.trim();
    if (path) paths.push(path);
  }
  return paths;
}

function filePathOf(input: Record<string, unknown> | undefined): string | undefined {
  const path = input?.filePath;
  return typeof path === "string" && path.length > 0 ? path : undefined;
}

/** A call's place in the history as one number: message index, then part index. */
function position(message: number, part: number): number {
  return message * 4_294_967_296 + part; // parts of one message stay below 2^32
}

/**
 * Collects the files calls read and modified, in any order of visit, and lists them in first-seen
 * CHRONOLOGICAL order. Lets Stage 2 record files in its single backward pass over the window
 * instead of walking every part of a huge history once more. Events are kept in parallel arrays
 * (no object per call).
 */
export class FileActivityCollector {
  private readonly positions: number[] = [];
  private readonly paths: string[] = [];
  private readonly modified: boolean[] = [];

  private add(at: number, path: string, modified: boolean): void {
    this.positions.push(at);
    this.paths.push(path);
    this.modified.push(modified);
  }

  /** Records one call (only a completed call touched files we can trust). */
  addCall(part: ToolPart, messageIndex: number, partIndex: number): void {
    if (part.state?.status !== "completed") return;
    const name: unknown = part.tool;
    if (typeof name !== "string") return;
    const tool = name === "read" || name === "edit" || name === "write" ? name : name.toLowerCase();
    const raw: unknown = part.state.input;
    if (raw === null || typeof raw !== "object") return;
    const input = raw as Record<string, unknown>;
    const read = READ_TOOLS.has(tool);
    if (read || MODIFY_TOOLS.has(tool)) {
      const path = filePathOf(input);
      if (path) this.add(position(messageIndex, partIndex), path, !read);
    } else if (tool.includes("patch")) {
      for (const value of Object.values(input)) {
        if (typeof value === "string") for (const patched of pathsFromPatchText(value)) this.add(position(messageIndex, partIndex), patched, true);
      }
    }
  }

  /** Every call of one message, in order. */
  addMessage(message: SessionMessage, messageIndex: number): void {
    const parts: unknown = message.parts;
    if (!Array.isArray(parts)) return;
    for (let j = 0; j < parts.length; j++) {
      const part: unknown = parts[j];
      if (part !== null && typeof part === "object" && (part as Part).type === "tool") this.addCall(part as ToolPart, messageIndex, j);
    }
  }

  result(): FileActivity {
    const read = new Set<string>();
    const modified = new Set<string>();
    for (const k of chronological(this.positions)) (this.modified[k] ? modified : read).add(this.paths[k]!);
    return { filesRead: [...read], filesModified: [...modified] };
  }
}

/**
 * Indices of the events in chronological order. Stage 2 records the history before the window
 * forwards, then the window backwards (newest first), so the events are usually one rising run and
 * one falling run: put together in linear time. Anything else (a retained tail after the summary) is
 * sorted. Several paths of one patch share a position and keep their recorded order.
 */
function chronological(positions: readonly number[]): number[] {
  const n = positions.length;
  let rise = 1;
  while (rise < n && positions[rise]! >= positions[rise - 1]!) rise++;
  const order: number[] = [];
  for (let k = 0; k < Math.min(rise, n); k++) order.push(k);
  // the falling run, read backwards, equal positions kept in their recorded order
  let end = n;
  while (end > rise) {
    let start = end - 1;
    while (start > rise && positions[start - 1] === positions[end - 1]) start--;
    for (let k = start; k < end; k++) order.push(k);
    end = start;
  }
  let sorted = true;
  for (let k = 1; k < order.length && sorted; k++) if (positions[order[k]!]! < positions[order[k - 1]!]!) sorted = false;
  if (sorted) return order;
  const all = Array.from({ length: n }, (_, k) => k);
  return all.sort((a, b) => positions[a]! - positions[b]! || a - b);
}

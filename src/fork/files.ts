// Which files the parent read and modified. Computed over the WHOLE history (also before a
// compaction): even when old results are summarised or cut, the child can re-read these files.

import type { Part, ToolPart } from "@opencode-ai/sdk/v2";
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

interface FileEvent {
  /** original index of the message, then of the part: events are replayed in this order */
  message: number;
  part: number;
  path: string;
  modified: boolean;
}

/**
 * Collects the files calls read and modified, in any order of visit, and lists them in first-seen
 * CHRONOLOGICAL order. Lets Stage 2 record files in its single backward pass over the window
 * instead of walking every part of a huge history once more.
 */
export class FileActivityCollector {
  private readonly events: FileEvent[] = [];

  /** Records one call (only a completed call touched files we can trust). */
  addCall(part: ToolPart, messageIndex: number, partIndex: number): void {
    if (part.state?.status !== "completed") return;
    const tool = typeof part.tool === "string" ? part.tool.toLowerCase() : "";
    const raw: unknown = part.state.input;
    const input = raw !== null && typeof raw === "object" ? (raw as Record<string, unknown>) : undefined;
    const add = (path: string, modified: boolean) => this.events.push({ message: messageIndex, part: partIndex, path, modified });
    if (READ_TOOLS.has(tool) || MODIFY_TOOLS.has(tool)) {
      const path = filePathOf(input);
      if (path) add(path, MODIFY_TOOLS.has(tool));
    } else if (tool.includes("patch") && input) {
      for (const value of Object.values(input)) {
        if (typeof value === "string") for (const patched of pathsFromPatchText(value)) add(patched, true);
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
    // Stable sort by position; several paths of one patch keep their order.
    const ordered = [...this.events].sort((a, b) => a.message - b.message || a.part - b.part);
    const read = new Set<string>();
    const modified = new Set<string>();
    for (const event of ordered) (event.modified ? modified : read).add(event.path);
    return { filesRead: [...read], filesModified: [...modified] };
  }
}

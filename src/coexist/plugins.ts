// Which plugins are listed beside ours, and which of our design's names they take: pure rules over
// the instance's tool ids and its `plugin` list (read by the server half, coexist/tool-names.ts, and by
// the TUI half, tui/names.ts). A plugin is named by its package's name, read from the package.json
// above a path (the only I/O).

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { DEFAULT_TOOL_NAMES, TOOL_KEYS, type ToolNames, areDefault } from "../tool-names.js";

/** This package's name, as a plugin list names it. */
export const OUR_PACKAGE = "opencode-offshoot";

/** The design's names of ours that another plugin registers too: the names offered twice, or the design's names offered while ours are our own. */
export function takenNames(ids: readonly string[], offered: ToolNames): string[] {
  const count = new Map<string, number>();
  for (const id of ids) count.set(id, (count.get(id) ?? 0) + 1);
  const ownNow = !areDefault(offered);
  return TOOL_KEYS.map((key) => DEFAULT_TOOL_NAMES[key]).filter((name) => (count.get(name) ?? 0) > (ownNow ? 0 : 1));
}

/** The plugins listed beside ours, as a person knows them: a package's name (from its package.json up from a path), or the spec. */
export function otherPlugins(specs: readonly unknown[], ours: string): string[] {
  return othersOf(listedNames(specs), ours);
}

/** The plugins listed after ours (OpenCode runs their hooks after ours), by name. */
export function pluginsAfter(specs: readonly unknown[], ours: string): string[] {
  const names = listedNames(specs);
  const at = names.indexOf(ours);
  return at === -1 ? [] : othersOf(names.slice(at + 1), ours);
}

/** Each listed plugin's name, in the list's order (each spec read once). */
function listedNames(specs: readonly unknown[]): (string | undefined)[] {
  return specs.map((spec) => (Array.isArray(spec) ? spec[0] : spec)).map((text) => (typeof text === "string" ? pluginName(text) : undefined));
}

/** The names but ours, each once. */
function othersOf(names: readonly (string | undefined)[], ours: string): string[] {
  const out: string[] = [];
  for (const name of names) if (name && name !== ours && !out.includes(name)) out.push(name);
  return out;
}

export function pluginName(spec: string): string | undefined {
  if (!spec.startsWith("file://") && !spec.startsWith("/") && !spec.startsWith(".")) return spec.replace(/(.)@[^@/]*$/, "$1"); // name@version
  let dir: string;
  try {
    dir = dirname(spec.startsWith("file://") ? fileURLToPath(spec) : spec);
  } catch {
    return spec;
  }
  for (let i = 0; i < 6 && dir !== dirname(dir); i++, dir = dirname(dir)) {
    try {
      const name = (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name?: unknown }).name;
      if (typeof name === "string" && name) return name;
    } catch {
      // (no package.json at this level)
    }
  }
  return spec;
}

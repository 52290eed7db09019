// The names this plugin's five tools are offered under. The design's names (`background_task`,
// `background_output`, …) are the default; where another plugin registers one of them (oh-my-opencode
// registers its own background_output and background_cancel, and OpenCode then offers one tool of each
// name: the later plugin's), ours step aside to names of their own (`offshoot_task`, …), all five
// together (src/coexist/tool-names.ts decides, the option `toolNames` can fix it). Every text of
// ours is written with the default names and renamed where it leaves the plugin (a tool's
// description and reply, a notice, a prompt, the published state): `withToolNames`.
//
// The names are one per process (globalThis: every instance of this process offers the same tools,
// and a worktree child's tool list must be its parent's byte for byte).

/** The tools, by role. */
export const TOOL_KEYS = ["task", "output", "cancel", "list", "take"] as const;
export type ToolKey = (typeof TOOL_KEYS)[number];
export type ToolNames = Readonly<Record<ToolKey, string>>;

/** The design's names: offered where nothing else has them. */
export const DEFAULT_TOOL_NAMES: ToolNames = {
  task: "background_task",
  output: "background_output",
  cancel: "background_cancel",
  list: "background_list",
  take: "background_take",
};

/** The names of our own: where another plugin registers one of the design's. */
export const OWN_TOOL_NAMES: ToolNames = {
  task: "offshoot_task",
  output: "offshoot_output",
  cancel: "offshoot_cancel",
  list: "offshoot_list",
  take: "offshoot_take",
};

const KEY = Symbol.for("opencode-offshoot.tool-names");

/** The names this process offers its tools under. */
export function toolNames(): ToolNames {
  return (globalThis as unknown as Record<symbol, ToolNames | undefined>)[KEY] ?? DEFAULT_TOOL_NAMES;
}

/** Sets them (at an instance's start, before its tools are made). */
export function setToolNames(names: ToolNames): void {
  (globalThis as unknown as Record<symbol, ToolNames | undefined>)[KEY] = names;
}

/** Whether `names` are the default ones. */
export function areDefault(names: ToolNames): boolean {
  return TOOL_KEYS.every((key) => names[key] === DEFAULT_TOOL_NAMES[key]);
}

const PREFIX = "background_";
const SUFFIXES: ReadonlyMap<string, ToolKey> = new Map(TOOL_KEYS.map((key) => [DEFAULT_TOOL_NAMES[key].slice(PREFIX.length), key]));
const WORD = /[A-Za-z0-9_]/;

/** A name of ANOTHER plugin's tool in a text of ours: kept as it is by `withToolNames` (which drops the braces). */
export function otherToolName(name: string): string {
  return `{{${name}}}`;
}

/**
 * A text written with the default names, with `names` in their place (whole words only:
 * `background_tasks` stays; `otherToolName`'s `{{background_output}}` stays, without its braces).
 * One pass over the text: linear in its length.
 */
export function withToolNames(text: string, names: ToolNames = toolNames()): string {
  if (!text.includes(PREFIX)) return text;
  const rename = !areDefault(names);
  let out = "";
  let last = 0;
  for (let at = text.indexOf(PREFIX); at !== -1; at = text.indexOf(PREFIX, at + 1)) {
    if (at > 0 && WORD.test(text[at - 1]!) && !text.startsWith("{{", at - 2)) continue;
    let end = at + PREFIX.length;
    while (end < text.length && WORD.test(text[end]!)) end++;
    const key = SUFFIXES.get(text.slice(at + PREFIX.length, end));
    if (!key) continue;
    if (text.startsWith("{{", at - 2) && text.startsWith("}}", end)) {
      // another plugin's tool, named as it is
      out += text.slice(last, at - 2) + text.slice(at, end);
      last = end + 2;
    } else if (rename) {
      out += text.slice(last, at) + names[key];
      last = end;
    }
  }
  return out + text.slice(last);
}

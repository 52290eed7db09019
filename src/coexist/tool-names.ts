// Which names this plugin's tools are offered under, beside the plugins a user already runs
// (oh-my-opencode registers its own background_output and background_cancel; OpenCode offers one
// tool of a name, the later plugin's, so the model would reach theirs with our ids).
//
// How (option `toolNames`: "auto", the default; "background" or "offshoot" fix the names):
// - at an instance's start the names are this process's decision, else the project's last one (a
//   small file beside its task store), else the design's (`startNames`: no I/O but that file);
// - once the instance has loaded every plugin, its tool ids are read through the client
//   (`checkToolNames`): a name of ours offered twice is another plugin's too. Then ours step aside
//   to names of their own (tool-names.ts OWN_TOOL_NAMES), all five; and where none of the design's
//   names is taken any more (the other plugin removed), they come back. A change is recorded,
//   logged once (the TUI half says it too: tui/names.ts), and the instance is restarted once (OpenCode reads a tool list
//   once per instance), so it offers them; never twice in a process (no loop). Where a restart would
//   cut a turn short (a session at work, or `opencode run`), the decision waits for the next start.
// - which plugin it is: the instance's `plugin` list, but ours (the ids do not say who registered
//   a tool: every other plugin listed is named; the rules are coexist/plugins.ts).
// I/O: the client (host/app.ts) and the decision's file.

import { promises as fs, readFileSync } from "node:fs";
import { join } from "node:path";
import { writeFileAtomically } from "../atomic-file.js";
import { type Client, call, getBusySessions, log } from "../host/client.js";
import { listToolIds, readConfig } from "../host/app.js";
import { disposeInstance } from "../host/session.js";
import { DEFAULT_TOOL_NAMES, OWN_TOOL_NAMES, TOOL_KEYS, type ToolNames, setToolNames, toolNames } from "../tool-names.js";
import { NAMES_TEXT } from "./tool-names.txt.js";
import { otherPlugins, pluginsAfter, takenNames } from "./plugins.js";
import { setPluginsAfterOurs } from "../native/request-check.js";

export type ToolNamesOption = "auto" | "background" | "offshoot";

/** What a decision was, as the project's file keeps it. */
interface Decided {
  v: 1;
  names: "background" | "offshoot";
  /** the design's names another plugin registered, and the plugins listed beside ours then */
  taken: string[];
  plugins: string[];
}

const FILE = "tool-names.json";

/** What this process knows of the other plugins' background tools (the replies about an id not ours say it). */
interface Beside {
  taken: string[];
  plugins: string[];
}

const KEY = Symbol.for("opencode-offshoot.coexist");
interface Memory {
  restarted: Set<string>;
  /** what the project's file said (until an instance is read) */
  beside?: Beside;
  /** the instances (by directory) where another plugin registers a design name, as read at their start */
  collisions: Map<string, Beside>;
  /** the other plugins each instance (by directory) loads, as read at its start */
  plugins: Map<string, string[]>;
}
function memory(): Memory {
  const g = globalThis as unknown as Record<symbol, Memory | undefined>;
  return (g[KEY] ??= { restarted: new Set(), plugins: new Map(), collisions: new Map() });
}

/** The other plugins the instance of `directory` loads (undefined: not read yet, or not readable). */
export function pluginsBeside(directory: string): readonly string[] | undefined {
  return memory().plugins.get(directory);
}

/** The other plugins' tools of our design's names, as this process last saw them (none: none seen). */
export function besideUs(): Beside | undefined {
  const m = memory();
  return m.collisions.values().next().value ?? m.beside;
}

/** The names to offer at an instance's start (and sets them for the process): the option's, else the project's last decision, else the design's. */
export function startNames(option: ToolNamesOption, storeDir: string): ToolNames {
  const names = option === "background" ? DEFAULT_TOOL_NAMES : option === "offshoot" ? OWN_TOOL_NAMES : fromFile(storeDir);
  setToolNames(names);
  return names;
}

function fromFile(storeDir: string): ToolNames {
  try {
    const decided = JSON.parse(readFileSync(join(storeDir, FILE), "utf8")) as Partial<Decided>;
    if (decided.names === "offshoot") {
      memory().beside ??= { taken: decided.taken ?? [], plugins: decided.plugins ?? [] };
      return OWN_TOOL_NAMES;
    }
  } catch {
    // no decision yet (or not readable: the design's names, checked again below)
  }
  return toolNames();
}

/**
 * After the instance loaded its plugins: reads what it offers, and where ours must step aside (or
 * may come back), records it, logs it and restarts the instance once. Resolves
 * true when the instance is restarting (its manager is being disposed: start nothing). Never throws:
 * a failure is logged and the names stay.
 */
export async function checkToolNames(input: {
  client: Client;
  directory: string;
  storeDir: string;
  option: ToolNamesOption;
  ourName: string;
  oneShotRun: boolean;
}): Promise<boolean> {
  const { client, directory } = input;
  try {
    const offered = toolNames();
    const ids = ((await call("listing the instance's tools", listToolIds(client, directory))) ?? []) as string[];
    const taken = takenNames(ids, offered);
    const config = (await call("reading the instance's config", readConfig(client, directory))) as { plugin?: unknown[] } | undefined;
    const plugins = otherPlugins(config?.plugin ?? [], input.ourName);
    if (config) {
      memory().plugins.set(directory, plugins);
      setPluginsAfterOurs(pluginsAfter(config.plugin ?? [], input.ourName));
    }
    if (taken.length) memory().collisions.set(directory, { taken, plugins });
    else memory().collisions.delete(directory);
    if (input.option === "background") {
      if (taken.length) log(client, "warn", NAMES_TEXT.shadowed(taken, plugins));
      return false;
    }
    if (input.option === "offshoot") return false;
    // One set of names per process (every instance's texts name them): ours stay aside while any
    // instance of this process has another plugin with a design name, and come back once none has.
    const wanted = memory().collisions.size > 0 ? OWN_TOOL_NAMES : DEFAULT_TOOL_NAMES;
    if (TOOL_KEYS.every((key) => wanted[key] === offered[key])) return false;
    const ours = TOOL_KEYS.map((key) => wanted[key]);
    const decided: Decided = { v: 1, names: wanted === OWN_TOOL_NAMES ? "offshoot" : "background", taken, plugins };
    await fs.mkdir(input.storeDir, { recursive: true, mode: 0o700 });
    await writeFileAtomically(join(input.storeDir, FILE), `${JSON.stringify(decided)}\n`);
    // A restart now would cut a turn short (under `opencode run`, the one it runs; a session at work):
    // the names then change at the instance's next start, and this one keeps what it offers.
    const busy = input.oneShotRun || (await getBusySessions(client, [])).size > 0;
    // (once per directory and process: a restart that did not help is not tried again)
    // (the plugin that made it: this instance's, else another instance's of this process)
    const why = wanted === OWN_TOOL_NAMES ? (taken.length ? { taken, plugins } : besideUs()!) : undefined;
    if (busy || memory().restarted.has(directory)) {
      if (why) log(client, "warn", NAMES_TEXT.stepAsideLater(why.taken, why.plugins, ours));
      return false;
    }
    memory().restarted.add(directory);
    setToolNames(wanted);
    // (the TUI half shows it as a toast, tui/names.ts: it reads the instance after the restart, however late it attached)
    if (why) log(client, "warn", NAMES_TEXT.stepAside(why.taken, why.plugins, ours));
    else log(client, "info", NAMES_TEXT.comeBack(ours));
    log(client, "info", NAMES_TEXT.restarting(directory));
    await call("restarting the instance", disposeInstance(client, directory));
    return true;
  } catch (error) {
    log(client, "warn", `offshoot: checking the tool names beside other plugins failed: ${(error as Error).message}`);
    return false;
  }
}

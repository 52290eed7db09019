// What the plugin says about its tools' names beside another plugin's (tool-names.ts): the log line
// and the toast when ours step aside or come back, and the warning when the option keeps the design's
// names although another plugin registers one of them. Pure texts.

import { otherToolName } from "../tool-names.js";

// (the log line and the toast are said as they are: nothing renames them)
const list = (names: readonly string[]) => names.join(", ");
const whose = (plugins: readonly string[]) =>
  plugins.length === 0 ? "another plugin" : plugins.length === 1 ? `another plugin (${plugins[0]})` : `another plugin (one of ${list(plugins)})`;

export const NAMES_TEXT = {
  /** Ours step aside: the log line. */
  stepAside: (taken: readonly string[], plugins: readonly string[], ours: readonly string[]) =>
    `offshoot: ${whose(plugins)} registers ${list(taken)}, and OpenCode offers only one tool of a name (the later plugin's), so this plugin's tools step aside to names of their own: ${list(ours)}. Every text of this plugin names them so. The plugin option "toolNames": "background" keeps the design's names (then the other plugin's shadow them); "offshoot" keeps these.`,
  /** Ours step aside: the toast. */
  stepAsideToast: (taken: readonly string[], plugins: readonly string[], ours: readonly string[]) =>
    `${whose(plugins)} registers ${list(taken)}: background tasks are ${list(ours)} now.`,
  /** Ours must step aside, but a restart now would cut a turn short: at the next start. */
  stepAsideLater: (taken: readonly string[], plugins: readonly string[], ours: readonly string[]) =>
    `offshoot: ${whose(plugins)} registers ${list(taken)} too, and OpenCode offers only one tool of a name (the later plugin's); a session is at work, so this plugin's tools are offered as ${list(ours)} from OpenCode's next start (until then the other plugin's shadow ours).`,
  /** /tasks's last line, and its description. */
  listTitle: "Tools here: offshoot_*",
  listWhy: (plugins: readonly string[]) => `beside ${plugins.length ? list(plugins) : "another plugin"}`,
  /** Enter on that line: all of it. */
  listMessage: (taken: readonly string[], plugins: readonly string[], ours: readonly string[]) =>
    `${whose(plugins)} registers ${list(taken)}, and OpenCode offers only one tool of a name, so this plugin's tools are ${list(ours)} here. The plugin option "toolNames" fixes them ("background" or "offshoot").`,
  /** Nothing else registers the design's names any more: ours come back. */
  comeBack: (ours: readonly string[]) =>
    `offshoot: no other plugin registers this plugin's design names any more, so its tools are offered as ${list(ours)} again.`,
  /** The option keeps the design's names, though another plugin has one of them. */
  shadowed: (taken: readonly string[], plugins: readonly string[]) =>
    `offshoot: ${whose(plugins)} registers ${list(taken)} too, and the plugin option "toolNames": "background" keeps this plugin's tools under those names: OpenCode offers only one of each (the later plugin's), so the model may reach the other plugin's tool instead of this one. "toolNames": "auto" (the default) lets ours step aside.`,
  /** The instance restarts once to offer the new names (a tool list is read once per instance). */
  restarting: (directory: string) => `offshoot: restarting OpenCode's instance of ${directory} once, so that it offers the tools under their new names.`,
};

/** Added to a reply about a task id that is none of ours, where another plugin's background tasks also have ids (`taken`: its tools of our design's names). */
export function notOurs(id: string, plugins: readonly string[], taken: readonly string[]): string {
  return `"${id}" is none of this plugin's tasks (opencode-offshoot; background_list lists them); ${whose(plugins)} also runs background tasks with ids like it: read one of those with that plugin's own ${taken.map(otherToolName).join(" or ")}, not with this plugin's background_output.`;
}

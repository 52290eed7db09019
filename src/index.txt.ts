// What the server half writes to OpenCode's log when it loads (index.ts): the line that tells a
// person the plugin is there (README "Is it loaded?"). Pure text.

/** The line logged once the server half loaded in an instance: its directory and the tools it offers. */
export function loadedLine(directory: string, tools: readonly string[]): string {
  return `offshoot: loaded in ${directory}; tools: ${tools.join(", ")}`;
}

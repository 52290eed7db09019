// Plugins known to rewrite each model request per session, so that a native child's requests cannot
// start byte-identical to its parent's: with one of them loaded, a `fork: true` launch is a text fork,
// and its receipt says which plugin and why (native/decide.ts). Data, checked against the released
// version named; a plugin's name is as its package.json (or the `plugin` entry) gives it.

export const REQUEST_REWRITERS: ReadonlyMap<string, string> = new Map([
  [
    "@tarquinen/opencode-dcp",
    // 3.1.14: one process-wide state flips with the session it last saw, and its system prompt is added
    // or not by it; it also writes its own tags into the messages the model is sent
    "it rewrites each model request by session (its system prompt, kept in one state all sessions share, and tags in the messages), so a native child's requests cannot start byte-identical to yours",
  ],
]);

/** The first plugin of `plugins` known to rewrite requests, with why. */
export function requestRewriter(plugins: readonly string[] | undefined): { name: string; why: string } | undefined {
  for (const name of plugins ?? []) {
    const why = REQUEST_REWRITERS.get(name);
    if (why) return { name, why };
  }
  return undefined;
}

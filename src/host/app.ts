// The v1 client's app and config calls. Each returns the client's own result: the caller wraps it
// in `call(what, …)`.

import type { Client } from "./types.js";

export function listAgents(client: Client) {
  return client.app.agents();
}

/** The configured providers and their models (with variants). */
export function listProviders(client: Client) {
  return client.config.providers();
}

/** The tool ids the instance of `directory` offers (each plugin's tools, a name twice where two plugins register it). */
export function listToolIds(client: Client, directory: string) {
  return client.tool.ids({ query: { directory } });
}

/** The instance's merged config (its `plugin` list, in the order OpenCode loads them). */
export function readConfig(client: Client, directory: string) {
  return client.config.get({ query: { directory } });
}

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

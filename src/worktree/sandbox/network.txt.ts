// What the sandbox's network says: the proxy's refusals (a worktree child's command reads them in
// its output, appended by the worktree's instance), the note on a command that met no network, and
// the refusal of a webfetch to this machine or its network. Pure texts.

/** The option a person sets to allow hosts (plugin config), and the task's own list. */
export const NETWORK_OPTION = '"sandboxNetwork"';
export const NETWORK_ARG = '"network"';

export const proxyText = {
  notListed: (host: string, port: number) =>
    `${host}:${port} is not among the hosts this task may reach; a person allows it with the plugin option ${NETWORK_OPTION} (every worktree task) or the task's ${NETWORK_ARG} (background_task)`,
  privateAddress: (host: string, address: string, range: string) =>
    `${host} resolves to ${address} (${range}): a worktree task never reaches this machine's or its network's own services, even through a host listed in ${NETWORK_OPTION}`,
  unresolved: (host: string, why: string) => `${host} could not be resolved (${why})`,
  unreachable: (host: string, port: number, why: string) => `${host}:${port} could not be reached (${why})`,
  badRequest: (why: string) => `the proxy could not read this request (${why})`,
};

/** Added to a shell command's output for each request the proxy refused during it. */
export function refusedNote(reasons: readonly string[]): string {
  return `[sandbox: the network request${reasons.length === 1 ? " was" : "s were"} refused: ${reasons.join("; ")}.]`;
}

/** Added to a shell command's output that failed for want of network (the task has no hosts). */
export function noNetworkNote(): string {
  return `[sandbox: this command ran in the task's sandbox, which has no network: no host is reachable, not even this machine's own services (its own loopback works: a server it starts is reachable from inside). A person can allow hosts with the plugin option ${NETWORK_OPTION}, or the task's ${NETWORK_ARG}; work offline otherwise.]`;
}

/** Added to a shell command's output that failed for want of network while the task has hosts. */
export function onlyListedNote(hosts: readonly string[]): string {
  return `[sandbox: this command ran in the task's sandbox, which reaches only ${hosts.join(", ")}, over HTTP(S) through the plugin's proxy (HTTPS_PROXY is set); other hosts and protocols have no network.]`;
}

/** The refusal of OpenCode's webfetch (it runs outside the sandbox) to a non-public address. */
export function webfetchRefusal(url: string, reason: string): string {
  return `Refused: webfetch of ${url}: ${reason}. Nothing was fetched.`;
}

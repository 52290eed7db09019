// Which hosts a worktree child's commands may reach through the plugin's proxy (network.ts), and
// which addresses never: pure rules, shared by the options' check (options.ts), the tool's argument
// check and the proxy.
//
// A pattern is a host name (`registry.npmjs.org`), `*.` and a name for its subdomains
// (`*.githubusercontent.com`; not the name itself), and an optional `:port` (without one: ports 80
// and 443). An address is refused when ipaddr.js (a well-kept parser of every spelling of an IPv4
// and IPv6 address, IPv4-mapped IPv6 included) puts it in a range of this machine or its network
// (NEVER_RANGES): loopback, private (RFC 1918, IPv6 unique and site local), link-local, carrier-grade
// NAT, unspecified, broadcast, multicast, and the IPv6 forms that embed an IPv4 address (NAT64,
// 6to4, Teredo: the IPv4 inside could be any of those). Public and reserved ranges (documentation,
// benchmarking: some networks route their services there) are reachable when allowed.

import ipaddr from "ipaddr.js";

function splitPattern(pattern: string): { host: string; port?: number } {
  const lower = pattern.toLowerCase();
  const colon = lower.lastIndexOf(":");
  if (colon > 0 && /^\d{1,5}$/.test(lower.slice(colon + 1))) return { host: lower.slice(0, colon), port: Number(lower.slice(colon + 1)) };
  return { host: lower };
}

/** Whether `host:port` matches one of the allowed patterns (case-insensitive, a trailing dot ignored). */
export function hostAllowed(patterns: readonly string[], host: string, port: number): boolean {
  const name = host.toLowerCase().replace(/\.$/, "");
  for (const pattern of patterns) {
    const { host: want, port: wantPort } = splitPattern(pattern);
    if (wantPort !== undefined ? port !== wantPort : port !== 80 && port !== 443) continue;
    if (want.startsWith("*.") ? name.length > want.length - 1 && name.endsWith(want.slice(1)) : name === want) return true;
  }
  return false;
}

/** Why a host pattern is not one, or undefined. */
export function hostPatternError(pattern: string): string | undefined {
  const { host, port } = splitPattern(pattern);
  if (port !== undefined && (port < 1 || port > 65535)) return "its port is not 1 to 65535";
  const labels = (host.startsWith("*.") ? host.slice(2) : host).split(".");
  if (host.length > 253 || labels.some((l) => !/^[a-z0-9-]{1,63}$/.test(l) || l.startsWith("-") || l.endsWith("-")))
    return 'it is not a host name (letters, digits and hyphens between dots, "*." first for every subdomain, ":port" last)';
  return undefined;
}

/** The ranges (ipaddr.js's names) of this machine and its network: never reached, even for an allowed host. */
export const NEVER_RANGES: ReadonlySet<string> = new Set([
  "unspecified",
  "broadcast",
  "multicast",
  "linkLocal",
  "loopback",
  "carrierGradeNat",
  "private",
  "uniqueLocal",
  "deprecatedSiteLocal",
  "ipv4Mapped",
  "rfc6145",
  "rfc6052",
  "6to4",
  "teredo",
]);

/** The range of an address (ipaddr.js's name: "unicast" is public), or undefined when it is not an address. */
export function addressRange(address: string): string | undefined {
  if (!ipaddr.isValid(address)) return undefined;
  return ipaddr.process(address).range();
}

/** Why an address is never reached (its range), or undefined when it may be. */
export function refusedRange(address: string): string | undefined {
  const range = addressRange(address) ?? "not an address";
  return NEVER_RANGES.has(range) || range === "not an address" ? range : undefined;
}

/** Whether a string is an IP address (then it is not resolved). */
export function isAddress(host: string): boolean {
  return ipaddr.isValid(host);
}

// The network a person allowed a worktree child: an HTTP proxy in the plugin's own process, outside
// the sandbox, one unix socket per task, reached from inside through a bridge on the sandbox's own
// loopback (plan.ts netScript: the child's tools see HTTP(S)_PROXY=http://127.0.0.1:<port>).
//
// The proxy's rules:
// - a request names its host: CONNECT host:port (HTTPS, any TLS: the proxy never reads it), or an
//   absolute http:// URL (plain HTTP, sent on with `Connection: close`);
// - the host must match the task's allowed patterns (`hostAllowed`: a name, `*.name` for its
//   subdomains, an optional `:port`; without one, ports 80 and 443: hosts.ts);
// - the name is resolved HERE, and only an address outside this machine and its network is
//   connected to: loopback, private, link-local, carrier-grade NAT, unspecified, multicast and the
//   IPv6 forms that embed an IPv4 address are refused (hosts.ts NEVER_RANGES), so a name that resolves to
//   127.0.0.1 is refused too, and the address connected to is the one checked (no second lookup);
// - each refusal is answered 403 with its reason, and kept (the last REFUSALS_KEPT per task) for
//   the worktree's instance to append to the command's output (`refusalsSince`).
// Where: the socket is in a directory of this process's own (`offshoot-sockets-<uid>/<pid>-…` under
// XDG_RUNTIME_DIR, else the temp directory; mode 0700), because a socket's path has at most 107
// bytes; the task's private directory holds a link to it (plan.ts privatePaths().proxy). The proxy lives while
// the task may run commands (openTaskNetwork at its directory's creation and when a process hosts
// it again; closeTaskNetwork with its sandbox). A dead process's directory is swept at start-up.

import { promises as fs, readdirSync, rmSync } from "node:fs";
import { lookup } from "node:dns/promises";
import net from "node:net";
import os from "node:os";
import { join } from "node:path";
import { isProcessAlive } from "../../process-state.js";
import { hostAllowed, isAddress, refusedRange } from "./hosts.js";
import { proxyText } from "./network.txt.js";

/** The longest request head the proxy reads before it answers 431. */
const HEAD_MAX = 64 * 1024;
/** How long a connection to an allowed host may take to open. */
const CONNECT_TIMEOUT_MS = 15_000;
/** The refusals kept per task (for the command's output). */
const REFUSALS_KEPT = 20;

/**
 * The bridge inside the sandbox (Node or Bun, the runtime this plugin runs on): listens on the
 * sandbox's loopback, says its port on stdout (one line: the script reads it and closes its end),
 * then pipes each connection to the proxy's socket. It connects by a relative path from the socket's directory (a socket's path is
 * at most 107 bytes; the task's private directory can be longer).
 */
export const BRIDGE_SOURCE = `// opencode-offshoot: the network bridge of a task's sandbox (src/worktree/sandbox/network.ts)
import net from "node:net";
import fs from "node:fs";
import path from "node:path";
const socket = process.argv[2];
process.chdir(path.dirname(socket));
const name = "./" + path.basename(socket);
const server = net.createServer((inside) => {
  const out = net.connect(name);
  const end = () => { inside.destroy(); out.destroy(); };
  inside.on("error", end);
  out.on("error", end);
  inside.pipe(out);
  out.pipe(inside);
});
server.listen(0, "127.0.0.1", () => fs.writeSync(1, server.address().port + "\\n"));
`;

/** One task's proxy: its socket, its hosts, what it refused. */
interface TaskProxy {
  server: net.Server;
  socket: string;
  hosts: readonly string[];
  refusals: { at: number; reason: string }[];
  /** the connections open now (both sides of each tunnel): destroyed when the proxy closes */
  open: Set<net.Socket>;
}

const KEY = Symbol.for("opencode-offshoot.task-networks");
/** Process-wide (like the worktree hub): every manager of this process hosts its tasks' proxies here, keyed by the task's private directory. */
function proxies(): Map<string, TaskProxy> {
  const g = globalThis as unknown as Record<symbol, Map<string, TaskProxy> | undefined>;
  return (g[KEY] ??= new Map());
}

let socketsDir: Promise<string> | undefined;
let counter = 0;

/** Where every process's socket directory goes: one directory of the user's (XDG_RUNTIME_DIR, else the temp directory), mode 0700. */
function socketsParent(env: NodeJS.ProcessEnv): string {
  const uid = process.getuid?.() ?? 0;
  return join(env.XDG_RUNTIME_DIR || os.tmpdir(), `offshoot-sockets-${uid}`);
}

/** This process's directory for proxy sockets (made once: `<parent>/<pid>-…`, mode 0700). */
function ownSocketsDir(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return (socketsDir ??= (async () => {
    const parent = socketsParent(env);
    await fs.mkdir(parent, { mode: 0o700 }).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "EEXIST") throw error;
    });
    // (a directory another user made there first is not used: a socket's directory must be ours alone)
    if (!(await isOwnPrivateDir(parent))) throw new Error(`${parent} is not a private directory of this user; the task's proxy was not opened`);
    return fs.mkdtemp(join(parent, `${process.pid}-`));
  })());
}

async function isOwnPrivateDir(dir: string): Promise<boolean> {
  const stat = await fs.lstat(dir).catch(() => undefined);
  return !!stat?.isDirectory() && (process.getuid === undefined || stat.uid === process.getuid()) && (stat.mode & 0o077) === 0;
}

/** Start-up: the socket directories of processes that are gone are removed (a kill leaves them). Reads one directory of its own. */
export function sweepSocketDirs(env: NodeJS.ProcessEnv = process.env): void {
  const parent = socketsParent(env);
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = /^(\d+)-/.exec(name)?.[1];
    if (pid && Number(pid) !== process.pid && !isProcessAlive(Number(pid))) rmSync(join(parent, name), { recursive: true, force: true });
  }
}

/**
 * Opens (or re-opens with new hosts) the proxy of a task's sandbox and links its socket into the
 * task's private directory (`link`: plan.ts privatePaths().proxy). Idempotent.
 */
export async function openTaskNetwork(privateDir: string, link: string, hosts: readonly string[]): Promise<void> {
  const existing = proxies().get(privateDir);
  if (existing) {
    existing.hosts = [...hosts];
    return;
  }
  const socket = join(await ownSocketsDir(), `${++counter}.sock`);
  const proxy: TaskProxy = { server: net.createServer(), socket, hosts: [...hosts], refusals: [], open: new Set() };
  proxy.server.on("connection", (client) => serve(proxy, client));
  await new Promise<void>((resolve, reject) => {
    proxy.server.once("error", reject);
    proxy.server.listen(socket, () => resolve());
  });
  proxies().set(privateDir, proxy);
  await fs.rm(link, { force: true });
  await fs.symlink(socket, link);
}

/**
 * Closes a task's proxy (its sandbox goes, or its process stops): it stops listening and every
 * connection still open is destroyed (the commands that used them have ended: their sandbox is
 * gone). Does not wait for the server's close callback, which waits for connections. Idempotent.
 */
export async function closeTaskNetwork(privateDir: string): Promise<void> {
  const proxy = proxies().get(privateDir);
  if (!proxy) return;
  proxies().delete(privateDir);
  proxy.server.close();
  for (const socket of proxy.open) socket.destroy();
  proxy.open.clear();
  await fs.rm(proxy.socket, { force: true });
}

/** Keeps `socket` among the proxy's open connections until it closes. */
function track(proxy: TaskProxy, socket: net.Socket): void {
  proxy.open.add(socket);
  socket.once("close", () => proxy.open.delete(socket));
}

/** Closes every proxy of this process (dispose). */
export async function closeAllTaskNetworks(): Promise<void> {
  await Promise.all([...proxies().keys()].map((dir) => closeTaskNetwork(dir)));
}

/** The reasons of the requests the task's proxy refused since `since` (ms). */
export function refusalsSince(privateDir: string, since: number): string[] {
  return (proxies().get(privateDir)?.refusals ?? []).filter((r) => r.at >= since).map((r) => r.reason);
}

function refuse(proxy: TaskProxy, client: net.Socket, status: string, reason: string): void {
  proxy.refusals.push({ at: Date.now(), reason });
  if (proxy.refusals.length > REFUSALS_KEPT) proxy.refusals.splice(0, proxy.refusals.length - REFUSALS_KEPT);
  const body = `offshoot sandbox: ${reason}\n`;
  // (destroyed once written: a paused socket would never read the peer's end, and stay open)
  client.end(
    `HTTP/1.1 ${status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    () => client.destroy(),
  );
}

/** One connection from the bridge: read the request head, decide, then connect and pipe (or refuse). */
function serve(proxy: TaskProxy, client: net.Socket): void {
  track(proxy, client);
  let head: Buffer = Buffer.alloc(0);
  client.on("error", () => client.destroy());
  const onData = (chunk: Buffer) => {
    head = head.length ? Buffer.concat([head, chunk]) : chunk;
    const end = head.indexOf("\r\n\r\n");
    if (end < 0) {
      if (head.length > HEAD_MAX) {
        client.off("data", onData);
        refuse(proxy, client, "431 Request Header Fields Too Large", proxyText.badRequest("its head is over 64 KB"));
      }
      return;
    }
    client.off("data", onData);
    client.pause();
    void forward(proxy, client, head.subarray(0, end).toString("latin1"), head.subarray(end + 4));
  };
  client.on("data", onData);
}

async function forward(proxy: TaskProxy, client: net.Socket, head: string, rest: Buffer): Promise<void> {
  const lines = head.split("\r\n");
  const [method, target, version] = (lines[0] ?? "").split(" ");
  let host: string;
  let port: number;
  let path = "";
  if (method === "CONNECT" && target) {
    const at = target.lastIndexOf(":");
    host = target.slice(0, at).replace(/^\[(.*)\]$/, "$1");
    port = Number(target.slice(at + 1));
  } else {
    let url: URL;
    try {
      url = new URL(target ?? "");
    } catch {
      return refuse(proxy, client, "400 Bad Request", proxyText.badRequest(`not a proxy request: ${JSON.stringify((lines[0] ?? "").slice(0, 100))}`));
    }
    if (url.protocol !== "http:") return refuse(proxy, client, "400 Bad Request", proxyText.badRequest(`${url.protocol} is not proxied as plain HTTP`));
    host = url.hostname.replace(/^\[(.*)\]$/, "$1");
    port = Number(url.port || 80);
    path = `${url.pathname}${url.search}`;
  }
  if (!host || !Number.isInteger(port) || port < 1 || port > 65535) return refuse(proxy, client, "400 Bad Request", proxyText.badRequest("no host and port"));
  if (!hostAllowed(proxy.hosts, host, port)) return refuse(proxy, client, "403 Forbidden", proxyText.notListed(host, port));
  let address: string;
  try {
    address = await publicAddress(host);
  } catch (error) {
    return refuse(proxy, client, "403 Forbidden", (error as Error).message);
  }
  const upstream = net.connect({ host: address, port, timeout: CONNECT_TIMEOUT_MS });
  track(proxy, upstream);
  upstream.once("timeout", () => upstream.destroy(new Error("timed out")));
  upstream.once("error", (error) => {
    if (upstream.connecting || !client.writable) return refuse(proxy, client, "502 Bad Gateway", proxyText.unreachable(host, port, error.message));
    client.destroy();
  });
  upstream.once("connect", () => {
    upstream.setTimeout(0);
    if (method === "CONNECT") client.write(`${version ?? "HTTP/1.1"} 200 Connection Established\r\n\r\n`);
    else {
      const headers = lines.slice(1).filter((line) => !/^(proxy-connection|proxy-authorization|connection|keep-alive):/i.test(line));
      upstream.write(`${method} ${path} ${version ?? "HTTP/1.1"}\r\n${[...headers, "Connection: close"].join("\r\n")}\r\n\r\n`);
    }
    if (rest.length) upstream.write(rest);
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
    client.resume();
  });
}

/** The first address of `host` (an address itself, or resolved here) outside this machine's and its network's ranges; throws the refusal's reason. */
async function publicAddress(host: string): Promise<string> {
  let addresses: string[];
  if (isAddress(host)) addresses = [host];
  else {
    try {
      addresses = (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
    } catch (error) {
      throw new Error(proxyText.unresolved(host, (error as NodeJS.ErrnoException).code ?? (error as Error).message));
    }
  }
  for (const address of addresses) if (!refusedRange(address)) return address;
  const first = addresses[0] ?? "nothing";
  throw new Error(proxyText.privateAddress(host, first, refusedRange(first) ?? "not an address"));
}

/** Whether every resolved address of a URL's host is public, else the reason (webfetch: instance.ts). */
export async function nonPublicReason(url: string): Promise<string | undefined> {
  let host: string;
  try {
    host = new URL(url).hostname.replace(/^\[(.*)\]$/, "$1");
  } catch {
    return undefined; // (not a URL: webfetch refuses it itself)
  }
  let addresses: string[];
  if (isAddress(host)) addresses = [host];
  else {
    try {
      addresses = (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
    } catch {
      return undefined; // (unresolvable: webfetch fails on its own)
    }
  }
  const bad = addresses.find((a) => refusedRange(a));
  return bad ? proxyText.privateAddress(host, bad, refusedRange(bad)!) : undefined;
}

// The plugin as loaded by the OpenCode instance of a task worktree (OpenCode loads the worktree's
// plugins a second time, in the same process, with `directory` = the worktree). It runs NO manager
// (the project's instance owns the task file and the task). It:
// - says it loaded (the proof that the worktree's config is there) and hands the child's events to
//   the owning manager (hub.ts);
// - refuses delegation inside the child;
// - points every path argument under the parent's checkout at the worktree (paths.ts); refuses a
//   file tool's write (write, edit, apply_patch: they run in OpenCode's own process, outside any
//   sandbox) whose path leads out of the worktree once its symlinks are followed, or into a `.git`;
//   refuses a shell command that names the checkout, or a git command that would write what the worktree
//   shares with it (other branches, tags, the stash, the config: git-guard.ts): nothing the child
//   does changes the parent's checkout or repository beyond its own branch;
// - offers the same five tools as the project's instance (byte-identical definitions; a call is
//   refused), so the child's tool list is the parent's;
// - for a native fork (its registry is the project instance's, shared through the hub): prepends the
//   parent's request, keys the cache to the root (native/hooks.ts), and gives the system prompt the
//   checkout's paths where OpenCode wrote the worktree's, so the child's request starts with the
//   parent's byte for byte. Safe only because every path the child uses is mapped.
//
// OpenCode runs `tool.execute.before` with `{ args }` and then the tool with that very args object
// (chunk-p1c43e92, the session's tool wrapper): the arguments are rewritten in place.
//
// What the write check cannot close: it runs before the tool, which then opens the path by name.
// A link swapped in between (the child's own bash, running in parallel in the same step, makes
// `<worktree>/a.ts` a link after the check) is followed by the write. The OS sandbox keeps bash
// itself inside the worktree, but a link there may point anywhere; only a tool that opened each
// component without following links (openat + O_NOFOLLOW, which Node does not offer) would close it.

import type { SessionMessage } from "../fork/types.js";
import { homedir } from "node:os";
import type { Hooks, PluginInput } from "../host/types.js";
import type { Event } from "../host/types.js";
import { log } from "../host/client.js";
import { delegationRefusal } from "../guard.js";
import { createNativeForkHooks } from "../native/hooks.js";
import { hostOf, markLoaded, sharedForks } from "./hub.js";
import { sharedRepositoryWrite } from "./git-guard.js";
import { checkoutCommandRefusal, configWriteRefusal, sharedRepositoryRefusal, unmappedRefusal, writeEscapeRefusal } from "./isolation.txt.js";
import { type WorktreeMap, mapToolArgs, namesCheckout, pathArgsOf, realPathOf, resolveLinks, writeEscape, writtenPathsOf } from "./paths.js";
import { type SandboxProbe, sandboxProbe } from "./sandbox/probe.js";
import { readOnlyHint, sandboxMissingRefusal } from "./sandbox/sandbox.txt.js";
import { nonPublicReason, refusalsSince } from "./sandbox/network.js";
import { DROP_VARIABLE, dropList } from "./sandbox/plan.js";
import { noNetworkNote, onlyListedNote, refusedNote, webfetchRefusal } from "./sandbox/network.txt.js";
import { promises as fs } from "node:fs";
import { sawSystem, sentSystem } from "../native/request-check.js";

export interface WorktreeInstanceOptions {
  /** the tools the project's instance offers, as the child must see them (tools/child-tools.ts) */
  tools?: Hooks["tool"];
  /** this machine's sandbox probe (sandbox/probe.ts; run once per process) */
  probe?: () => Promise<SandboxProbe>;
}

/** Replaces every occurrence of `from` (followed by a path boundary) with `to`. Linear. */
function replacePathPrefix(text: string, from: string, to: string): string {
  if (!from || !text.includes(from)) return text;
  let out = "";
  let last = 0;
  for (let at = text.indexOf(from); at !== -1; at = text.indexOf(from, at + from.length)) {
    const after = text[at + from.length];
    if (after !== undefined && /[\w.~-]/.test(after)) continue;
    out += text.slice(last, at) + to;
    last = at + from.length;
  }
  return out + text.slice(last);
}

/** How many bash calls' start times an instance keeps (one entry per call in flight). */
const CALLS_TRACKED = 1000;

/** What a command prints when it found no network (curl, git, npm, pip, go, node, python): lowercase, matched as substrings (linear). */
const NO_NETWORK = [
  "could not resolve host",
  "couldn't resolve host",
  "temporary failure in name resolution",
  "name or service not known",
  "no address associated with hostname",
  "getaddrinfo enotfound",
  "getaddrinfo eai_again",
  "network is unreachable",
  "enetunreach",
  "connection refused",
  "econnrefused",
  "failed to establish a new connection",
  "couldn't connect to server",
  "failed to connect to",
];

/** Whether a command's output says it found no network. */
export function mentionsNoNetwork(output: string): boolean {
  const text = output.toLowerCase();
  return NO_NETWORK.some((phrase) => text.includes(phrase));
}

export function worktreeInstanceHooks(input: Pick<PluginInput, "directory" | "client">, options: WorktreeInstanceOptions = {}): Hooks {
  const directory = input.directory;
  markLoaded(directory);
  const warn = (message: string) => log(input.client, "warn", message);
  const native = createNativeForkHooks(sharedForks, warn);

  /** The checkout and worktree of this instance's task (none when no live task of this process names it). */
  function mapOf(): (WorktreeMap & { branch: string }) | undefined {
    const host = hostOf(directory);
    return host ? { checkouts: host.checkouts, worktree: host.worktree, cwd: directory, branch: host.branch } : undefined;
  }

  async function isolate(tool: string, args: Record<string, unknown>): Promise<void> {
    const map = mapOf();
    if (!map || !args || typeof args !== "object") return;
    let refusal: string | undefined;
    try {
      const resolved = new Map<string, string>();
      for (const arg of pathArgsOf(tool, args)) {
        const real = await realPathOf(arg, directory);
        if (real !== undefined) resolved.set(arg, real);
      }
      mapToolArgs(tool, args, map, resolved);
      if (tool === "bash" && namesCheckout(args.command as string, map.checkouts, process.env.HOME || homedir()))
        refusal = checkoutCommandRefusal(map.checkouts[0]!, map.worktree, directory);
      // a git command that writes what the worktree shares with the checkout (branches, tags, stash,
      // config); a sandboxed child's git writes only its private copies of them (sandbox/plan.ts)
      const shared = tool === "bash" && !refusal && !hostOf(directory)?.sandbox ? sharedRepositoryWrite(args.command as string, map.branch) : undefined;
      if (shared) refusal = sharedRepositoryRefusal(shared.command, shared.what, map.branch);
      // a file tool writes in OpenCode's own process: every path it writes, with its links followed,
      // stays in the worktree and out of OpenCode's config there (the host loads that, outside any sandbox)
      const written = writtenPathsOf(tool, args);
      // (a sandboxed child's temp directory is its own too)
      const tmp = hostOf(directory)?.sandbox?.tmp;
      const tops = written.length ? [map.worktree, await resolveLinks(map.worktree)] : [];
      const roots = written.length ? [...tops, ...(tmp ? [tmp, await resolveLinks(tmp)] : [])] : [];
      const config = { roots: tops, entries: hostOf(directory)?.config ?? [] };
      for (const path of written) {
        const escape = await writeEscape(path, map, roots, config);
        if (escape) {
          refusal =
            escape.where === "config" ? configWriteRefusal(tool, escape.resolved) : writeEscapeRefusal(tool, { ...escape, where: escape.where }, map.worktree);
          break;
        }
      }
    } catch (error) {
      refusal = unmappedRefusal(tool, (error as Error).message);
    }
    // The one deliberate throw: OpenCode makes it the refused call's error result (see ../guard.ts).
    if (refusal) throw new Error(refusal);
  }

  const probe = options.probe ?? sandboxProbe;

  /** When each sandboxed bash call started (the proxy's refusals since then are its own); bounded. */
  const callsStarted = new Map<string, number>();
  function startCall(callID: string): void {
    if (callsStarted.size >= CALLS_TRACKED) callsStarted.delete(callsStarted.keys().next().value!);
    callsStarted.set(callID, Date.now());
  }

  /**
   * OpenCode's webfetch runs in its own process, outside the sandbox: for a task's child it is
   * refused for an address of this machine or its network (loopback, private, link-local…), judged
   * after the name is resolved (hosts.ts). (webfetch resolves the name again: a name that answers
   * differently the second time is not caught here; its commands' network is the proxy's, which
   * connects to the address it checked.)
   */
  async function webfetchCheck(tool: string, args: Record<string, unknown> | undefined): Promise<void> {
    if (tool !== "webfetch" || !hostOf(directory) || typeof args?.url !== "string") return;
    const reason = await nonPublicReason(args.url);
    if (reason) throw new Error(webfetchRefusal(args.url, reason));
  }

  /**
   * A sandboxed task's shell command is refused when its sandbox cannot run now (its script is gone,
   * or this machine's sandbox is not ready: bwrap removed since the launch): it would run outside,
   * or not be run by bash at all (fail closed).
   */
  async function sandboxReady(tool: string): Promise<void> {
    const sandbox = hostOf(directory)?.sandbox;
    if (tool !== "bash" || !sandbox) return;
    const stat = await fs.lstat(sandbox.enter).catch(() => undefined);
    if (!stat?.isFile()) throw new Error(sandboxMissingRefusal(`${sandbox.enter} is gone`));
    const machine = await probe();
    if (machine.kind !== "ready") throw new Error(sandboxMissingRefusal(machine.reason));
  }

  return {
    ...(options.tools ? { tool: options.tools } : {}),
    // A sandboxed task's instance runs shell commands with bash (its BASH_ENV enters the sandbox,
    // whatever the user's $SHELL), and runs no formatter or language server: they would run the
    // worktree's code outside the sandbox.
    config: async (config) => {
      try {
        if (!hostOf(directory)?.sandbox || !config) return;
        const machine = await probe();
        if (machine.kind === "ready") (config as { shell?: string }).shell = machine.bash;
        config.formatter = false;
        config.lsp = false;
      } catch (error) {
        warn(`sandbox: setting the worktree's shell failed: ${(error as Error).message}`);
      }
    },
    // every bash call of a sandboxed worktree's child runs in its sandbox: its non-interactive bash
    // reads BASH_ENV first (an interactive terminal a person opens there reads ~/.bashrc instead)
    "shell.env": async (_call, output) => {
      const sandbox = hostOf(directory)?.sandbox;
      if (!sandbox || !output?.env) return;
      output.env.BASH_ENV = sandbox.enter;
      // the names the script drops, from the environment bash gets (OpenCode's, with what hooks added)
      output.env[DROP_VARIABLE] = dropList({ ...process.env, ...output.env }, sandbox.passEnv);
    },
    // what a shell command met in the sandbox, said in its output: a read-only file, a refused or missing network
    "tool.execute.after": async (call, output) => {
      const host = hostOf(directory);
      const started = call?.callID ? callsStarted.get(call.callID) : undefined;
      if (call?.callID) callsStarted.delete(call.callID);
      if (call?.tool !== "bash" || !host?.sandbox || typeof output?.output !== "string") return;
      const { sandbox } = host;
      const notes: string[] = [];
      if (output.output.includes("Read-only file system")) notes.push(readOnlyHint(host.worktree, sandbox.tmp, sandbox.caches));
      const refused = started === undefined ? [] : refusalsSince(sandbox.privateDir, started);
      if (refused.length) notes.push(refusedNote(refused));
      else if (mentionsNoNetwork(output.output)) notes.push(sandbox.hosts.length ? onlyListedNote(sandbox.hosts) : noNetworkNote());
      if (notes.length) output.output += `\n\n${notes.join("\n")}`;
    },
    event: async ({ event }) => {
      await hostOf(directory)?.forward(event as unknown as Event);
    },
    "tool.execute.before": async (call, output) => {
      // an unknown owner (a directory no live task names) is refused too: nothing may delegate here
      const refusal = delegationRefusal(call.tool, call.sessionID, (id) => hostOf(directory)?.isChild(id) ?? true);
      if (refusal) throw new Error(refusal);
      await isolate(call.tool, output?.args as Record<string, unknown>);
      await sandboxReady(call.tool);
      await webfetchCheck(call.tool, output?.args as Record<string, unknown>);
      if (call.tool === "bash" && call.callID && hostOf(directory)?.sandbox) startCall(call.callID);
    },
    // the child's request waits at its owner's gate (manager/step-gate.ts), then starts with its parent's when a native fork
    "experimental.chat.messages.transform": async (hookInput, output) => {
      const host = hostOf(directory);
      if (host && Array.isArray(output?.messages)) await host.beforeModelRequest(output.messages as unknown as SessionMessage[]);
      await native["experimental.chat.messages.transform"](hookInput, output);
    },
    "chat.params": async (hookInput, output) => {
      await native["chat.params"](hookInput, output);
      sentSystem(hookInput.sessionID);
    },
    "chat.headers": native["chat.headers"],
    "experimental.chat.system.transform": async (hookInput, output) => {
      try {
        const host = hostOf(directory);
        if (!host || !hookInput?.sessionID || !Array.isArray(output?.system)) return;
        if (!(await sharedForks.find(hookInput.sessionID))) return;
        // OpenCode's environment block (and instruction paths) name this instance's directory: the parent's names the checkout
        const checkout = host.checkouts[0]!;
        for (let i = 0; i < output.system.length; i++) output.system[i] = replacePathPrefix(output.system[i]!, host.worktree, checkout);
        sawSystem(hookInput.sessionID, output.system);
      } catch (error) {
        warn(`native fork: restoring the parent's system prompt failed: ${(error as Error).message}`);
      }
    },
  };
}

/**
 * A worktree task on another machine (docs/remote.md), on two real OpenCode servers on this machine:
 * A (the parent's, with the option `remotes`) and B (behind a password), a bare repository as the
 * git remote both clones share, and a counting TCP proxy between A and B. Interleaved rounds of a
 * local worktree launch and a remote launch of the same one-line change, each run to its notice and
 * discarded. Prints:
 * - the launch (the `background_task` call, as its tool part times it) of a remote task against a
 *   local worktree task's;
 * - the git bytes a remote task moves through the shared remote (its base and its branch, as git
 *   stores them there) against the size of its change (the patch), goal under 10 KB;
 * - the bytes of B's API that crossed the proxy for it (the relay, the state reads, the events).
 *
 * `npx tsx bench/remote.ts [--rounds N]` (after `npm run build`).
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { DIST_PLUGIN, type OpencodeServer, startOpencode } from "../test/e2e/harness/opencode.js";
import { getMessages, toolParts } from "../test/e2e/harness/messages.js";
import { type ScriptedModel, isToolFollowUp, lastUserText, startScriptedModel } from "../test/e2e/harness/scripted-model.js";
import { printRatio } from "./ratio.js";

const rounds = Number(process.argv[process.argv.indexOf("--rounds") + 1]) || 5;
const PASSWORD = "bench-remote-password";
const git = (cwd: string, ...args: string[]) => execFileSync("git", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** A TCP proxy A→B that counts the bytes each way. */
class CountingProxy {
  readonly server: net.Server;
  bytes = 0;
  constructor(target: number) {
    this.server = net.createServer((inbound) => {
      const outbound = net.connect(target, "127.0.0.1");
      for (const [from, to] of [
        [inbound, outbound],
        [outbound, inbound],
      ] as const) {
        from.on("data", (chunk: Buffer) => {
          this.bytes += chunk.length;
          to.write(chunk);
        });
        from.on("error", () => {});
        from.on("close", () => to.destroy());
      }
    });
  }
  listen(): Promise<number> {
    return new Promise((resolve) => this.server.listen(0, "127.0.0.1", () => resolve((this.server.address() as net.AddressInfo).port)));
  }
}

/** The bytes git stores under a repository's objects/ (what the pushes wrote there). */
function objectBytes(repo: string): number {
  let total = 0;
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.isFile()) total += fs.statSync(p).size;
    }
  };
  walk(path.join(repo, "objects"));
  return total;
}

async function until<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One parent turn on A that calls `tool` once; the call's duration (its tool part's times) and output. */
async function toolCall(
  model: ScriptedModel,
  a: OpencodeServer,
  cue: string,
  tool: string,
  args: object,
): Promise<{ ms: number; output: string; parent: string }> {
  model.script({ name: `${cue}-call`, match: (r) => lastUserText(r) === cue && !isToolFollowUp(r), reply: { toolCalls: [{ name: tool, arguments: args }] } });
  model.script({ name: `${cue}-done`, match: (r) => lastUserText(r) === cue && isToolFollowUp(r), reply: { text: "ok" } });
  const parent = (await a.client.session.create({ body: { title: cue } })).data!.id;
  await a.client.session.prompt({ path: { id: parent }, body: { parts: [{ type: "text", text: cue }] } });
  const part = toolParts(await getMessages(a.client, parent), tool).at(-1)!;
  const state = part.state as { status: string; output?: string; time?: { start: number; end: number } };
  if (state.status !== "completed") throw new Error(`${tool}: ${JSON.stringify(state).slice(0, 400)}`);
  return { ms: state.time!.end - state.time!.start, output: state.output!, parent };
}

async function main() {
  const model = await startScriptedModel();
  model.script({ name: "wake", match: (r) => lastUserText(r).startsWith("Background tasks you started have ended:"), reply: { text: "noted" } });
  const bare = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "offshoot-bench-bare-")));
  git(bare, "init", "-q", "--bare", "-b", "main");
  const files: Record<string, string> = { "src/shared.ts": "export const shared = 1;\n" };
  for (let i = 0; i < 200; i++) files[`src/f${i}.ts`] = `export const x${i} = ${i};\n`;
  const b = await startOpencode({
    plugins: [DIST_PLUGIN],
    model,
    password: PASSWORD,
    files,
    beforeStart: (dir) => {
      git(dir, "remote", "add", "origin", bare);
      git(dir, "push", "-q", "origin", "main");
    },
  });
  const proxy = new CountingProxy(b.port);
  const url = `http://127.0.0.1:${await proxy.listen()}`;
  let a: OpencodeServer | undefined;
  try {
    a = await startOpencode({
      plugins: [[DIST_PLUGIN, { remotes: { b: { url, passwordEnv: "B_PASSWORD", directory: b.directory } } }]],
      model,
      files,
      env: { B_PASSWORD: PASSWORD },
      beforeStart: (dir) => {
        git(dir, "remote", "add", "origin", bare);
        git(dir, "fetch", "-q", "origin");
      },
    });
    const local: number[] = [];
    const remote: number[] = [];
    const gitBytes: number[] = [];
    const apiBytes: number[] = [];
    const patchBytes: number[] = [];
    for (let round = 0; round < rounds; round++) {
      for (const where of ["local", "remote"] as const) {
        const cue = `BENCH_${where}_${round}`;
        model.script({
          name: `${cue}-bash`,
          match: (r) => lastUserText(r).includes(`${cue}_CHILD`) && !isToolFollowUp(r),
          reply: { toolCalls: [{ name: "bash", arguments: { command: `printf 'export const r${round} = 1;\\n' >> src/shared.ts`, description: "edit" } }] },
        });
        model.script({ name: `${cue}-answer`, match: (r) => lastUserText(r).includes(`${cue}_CHILD`) && isToolFollowUp(r), reply: { text: "edited" } });
        const objectsBefore = objectBytes(bare);
        const proxiedBefore = proxy.bytes;
        const args = {
          description: `Bench ${where} ${round}`,
          prompt: `${cue}_CHILD`,
          agent: "general",
          ...(where === "remote" ? { remote: "b" } : { isolation: "worktree" }),
        };
        const launched = await toolCall(model, a, cue, "background_task", args);
        const id = /bg_[0-9a-z]{8}/.exec(launched.output)?.[0];
        if (!id) throw new Error(`no task id: ${launched.output.slice(0, 400)}`);
        (where === "remote" ? remote : local).push(launched.ms);
        await until(`the notice of ${id}`, async () =>
          (await getMessages(a!.client, launched.parent)).some((m) =>
            m.parts.some((p) => p.type === "text" && String(p.text).startsWith(`[background task ${id} `)),
          ),
        );
        if (where === "remote") {
          gitBytes.push(objectBytes(bare) - objectsBefore);
          apiBytes.push(proxy.bytes - proxiedBefore);
          const tip = git(bare, "rev-parse", `refs/heads/offshoot/${id}`);
          const base = git(bare, "rev-parse", `refs/heads/offshoot/${id}-base`);
          patchBytes.push(Buffer.byteLength(git(bare, "diff", base, tip)));
        }
        await toolCall(model, a, `${cue}_DISCARD`, "background_cancel", { task_id: id, discard: true });
      }
    }
    console.log(`rounds: ${rounds} (interleaved: a local worktree launch, then a remote one)`);
    console.log(`launch, local worktree: median ${median(local).toFixed(0)} ms (${local.map((x) => x.toFixed(0)).join(", ")})`);
    console.log(`launch, remote: median ${median(remote).toFixed(0)} ms (${remote.map((x) => x.toFixed(0)).join(", ")})`);
    console.log(`git bytes written to the shared remote per remote task: ${gitBytes.join(", ")}; its change as a patch: ${patchBytes.join(", ")} bytes`);
    console.log(`bytes of B's API through the proxy per remote task (launch to notice): ${apiBytes.join(", ")}`);
    printRatio({
      measure: "remote: a task's launch",
      value: `${median(remote).toFixed(0)} ms (median)`,
      floor: `${median(local).toFixed(0)} ms, a local worktree task's launch`,
      ratio: median(remote) / median(local),
      goal: "reported (no goal)",
      met: true,
      samples: remote.map((x, i) => x / local[i]!),
    });
    const moved = median(gitBytes);
    printRatio({
      measure: "remote: git bytes moved for a one-line change",
      value: `${moved} bytes (base and branch, as stored on the shared remote)`,
      floor: `${median(patchBytes)} bytes, the change as a patch`,
      ratio: moved / median(patchBytes),
      goal: "under 10 KB",
      met: moved < 10_240,
    });
  } finally {
    await a?.stop();
    await b.stop();
    proxy.server.close();
    await model.close();
    fs.rmSync(bare, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});

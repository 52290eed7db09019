/**
 * The sandbox's rule, as data (src/worktree/sandbox/plan.ts), said two ways: bubblewrap's mounts and
 * the macOS sandbox-exec profile. One table of writes a child might try, each with where it may
 * land; both renderings are evaluated against it (the profile by a small reader of the SBPL clauses
 * the plan writes: macOS cannot run here). And the probe's verdicts, on fake and real machines.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawn } from "node:child_process";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { bwrapArgs, enterScript, type SandboxLayout, seatbeltProfile, shellQuote } from "../../../src/worktree/sandbox/plan.js";
import { probeSandbox } from "../../../src/worktree/sandbox/probe.js";
import { chooseSandbox, copyRefs, writableCaches } from "../../../src/worktree/sandbox/prepare.js";
import { dropList, dropsVariable, privatePaths } from "../../../src/worktree/sandbox/plan.js";
import { closeTaskNetwork, refusalsSince } from "../../../src/worktree/sandbox/network.js";
import { hostAllowed, hostPatternError, refusedRange } from "../../../src/worktree/sandbox/hosts.js";
import { createWorktree, removeWorktree } from "../../../src/worktree/worktree.js";
import type { WorktreeInfo } from "../../../src/task-record.js";
import { tempRepo, type TempRepo } from "./git-repo.js";

const layout: SandboxLayout = {
  worktree: "/data/wt/p/bg_1",
  gitDir: "/home/u/repo/.git/worktrees/bg_1",
  commonDir: "/home/u/repo/.git",
  privateDir: "/data/sb/p/bg_1",
  caches: ["/home/u/.npm"],
  taskId: "bg_1",
};
const branch = "offshoot/bg_1";

/** Where a write to `path` lands under bubblewrap: the real file it changes, or "refused" (read-only). */
function bwrapLands(path_: string): string {
  const args = bwrapArgs(layout);
  expect(args.slice(args.indexOf("--ro-bind"), args.indexOf("--ro-bind") + 3)).toEqual(["--ro-bind", "/", "/"]);
  let landed = "refused";
  let best = -1;
  // the last mount over a path wins; each --bind source target makes target writable, landing in source
  for (let i = 0; i < args.length; i++) {
    if (args[i] !== "--bind") continue;
    const [source, target] = [args[i + 1]!, args[i + 2]!];
    if ((path_ === target || path_.startsWith(`${target}/`)) && target.length >= best) {
      best = target.length;
      landed = source + path_.slice(target.length);
    }
  }
  return landed;
}

/** Whether the profile lets a write to `path` through (the clauses seatbeltProfile writes: deny all, then allows). */
function seatbeltAllows(profile: string, path_: string): boolean {
  expect(profile).toContain("(deny file-write*)");
  const allows = profile.split("\n").filter((line) => line.startsWith("(allow file-write*"));
  const unquote = (text: string) => text.replace(/\\(.)/g, "$1");
  for (const line of allows) {
    for (const [, p] of line.matchAll(/\(subpath "((?:[^"\\]|\\.)*)"\)/g)) if (path_ === unquote(p!) || path_.startsWith(`${unquote(p!)}/`)) return true;
    for (const [, p] of line.matchAll(/\(literal "((?:[^"\\]|\\.)*)"\)/g)) if (path_ === unquote(p!)) return true;
    for (const [, r] of line.matchAll(/\(regex #"((?:[^"\\]|\\.)*)"\)/g)) if (new RegExp(r!).test(path_)) return true;
  }
  return false;
}

/** The rule: a write may land only in the task's own places; the user's checkout and shared .git never change. */
const WRITES: { path: string; linux: string; mac: boolean }[] = [
  { path: "/data/wt/p/bg_1/src/a.ts", linux: "/data/wt/p/bg_1/src/a.ts", mac: true },
  // its HEAD, index and reflog: a private copy on Linux (the user's repository never names a commit only the task has); in place on macOS
  { path: "/home/u/repo/.git/worktrees/bg_1/index", linux: "/data/sb/p/bg_1/admin/index", mac: true },
  { path: "/home/u/repo/.git/worktrees/bg_1/logs/HEAD", linux: "/data/sb/p/bg_1/admin/logs/HEAD", mac: true },
  { path: "/data/sb/p/bg_1/git/objects/ab/cdef", linux: "/data/sb/p/bg_1/git/objects/ab/cdef", mac: true },
  { path: "/data/sb/p/bg_1/tmp/x", linux: "/data/sb/p/bg_1/tmp/x", mac: true },
  { path: "/home/u/.npm/_cacache/x", linux: "/home/u/.npm/_cacache/x", mac: true },
  // its own branch: a private copy on Linux; in place on macOS (Seatbelt cannot mount)
  { path: "/home/u/repo/.git/refs/heads/offshoot/bg_1", linux: "/data/sb/p/bg_1/refs/heads/offshoot/bg_1", mac: true },
  { path: "/home/u/repo/.git/refs/heads/offshoot/bg_1.lock", linux: "/data/sb/p/bg_1/refs/heads/offshoot/bg_1.lock", mac: true },
  // the user's branches, tags, stash and reflogs: private copies on Linux, refused on macOS
  { path: "/home/u/repo/.git/refs/heads/main", linux: "/data/sb/p/bg_1/refs/heads/main", mac: false },
  { path: "/home/u/repo/.git/refs/stash", linux: "/data/sb/p/bg_1/refs/stash", mac: false },
  { path: "/home/u/repo/.git/logs/HEAD", linux: "/data/sb/p/bg_1/logs/HEAD", mac: false },
  // never: the checkout, the shared config, hooks, info, packed-refs, objects, another worktree, the home
  { path: "/home/u/repo/src/a.ts", linux: "refused", mac: false },
  { path: "/home/u/repo/.git/config", linux: "refused", mac: false },
  { path: "/home/u/repo/.git/hooks/pre-commit", linux: "refused", mac: false },
  { path: "/home/u/repo/.git/info/exclude", linux: "refused", mac: false },
  { path: "/home/u/repo/.git/packed-refs", linux: "refused", mac: false },
  { path: "/home/u/repo/.git/objects/ab/cdef", linux: "refused", mac: false },
  { path: "/home/u/repo/.git/worktrees/bg_2/HEAD", linux: "refused", mac: false },
  { path: "/data/wt/p/bg_2/src/a.ts", linux: "refused", mac: false },
  { path: "/data/wt/p/bg_10/x", linux: "refused", mac: false },
  { path: "/home/u/.bashrc", linux: "refused", mac: false },
  { path: "/data/sb/p/bg_1/enter.sh", linux: "refused", mac: false },
  { path: "/data/sb/p/bg_1/git/config", linux: "refused", mac: false },
];

describe("the sandbox's rule", () => {
  test.each(WRITES)("bubblewrap: a write to $path lands in $linux", ({ path: p, linux }) => {
    expect(bwrapLands(p)).toBe(linux);
  });

  test.each(WRITES)("sandbox-exec: a write to $path is allowed: $mac", ({ path: p, mac }) => {
    expect(seatbeltAllows(seatbeltProfile(layout, branch), p)).toBe(mac);
  });

  test("bubblewrap gives the child its own processes and /proc, ends them with the command, and no BASH_ENV inside", () => {
    const args = bwrapArgs(layout);
    for (const flag of ["--die-with-parent", "--new-session", "--unshare-pid"]) expect(args).toContain(flag);
    expect(args.join(" ")).toContain("--proc /proc");
    expect(args.join(" ")).toContain(
      `--setenv GIT_OBJECT_DIRECTORY /data/sb/p/bg_1/git/objects --setenv GIT_ALTERNATE_OBJECT_DIRECTORIES /home/u/repo/.git/objects`,
    );
    expect(args.join(" ")).toContain("--setenv TMPDIR /data/sb/p/bg_1/tmp");
    expect(args.slice(-2)).toEqual(["--unsetenv", "BASH_ENV"]);
    expect(args).toContain("--unshare-net"); // a network namespace of its own: nothing of the host's is reachable
  });

  test("a path with quotes or spaces stays one word in the script and in the profile", () => {
    const odd = { ...layout, worktree: `/data/it's "here"/bg_1` };
    const script = enterScript("/usr/bin/bwrap", odd);
    expect(script).toContain(`--bind '/data/it'\\''s "here"/bg_1' '/data/it'\\''s "here"/bg_1'`);
    expect(script).toContain('-- "$BASH" -c "$BASH_EXECUTION_STRING"');
    expect(script.split("\n")[1]).toBe("unset BASH_ENV");
    expect(seatbeltAllows(seatbeltProfile(odd, branch), `/data/it's "here"/bg_1/x`)).toBe(true);
    expect(shellQuote("plain/path_1.x")).toBe("plain/path_1.x");
  });
});

describe("the probe", () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "offshoot-probe-"));
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
  const bin = (name: string, script: string) => {
    const dir = fs.mkdtempSync(path.join(root, "bin-"));
    fs.writeFileSync(path.join(dir, name), `#!/bin/sh\n${script}\n`, { mode: 0o755 });
    fs.symlinkSync("/bin/sh", path.join(dir, "bash"));
    return dir;
  };

  test("no bwrap on PATH: not installed, with the install line per system", async () => {
    const probe = await probeSandbox("linux", { PATH: bin("other", "true") });
    expect(probe.kind).toBe("not-installed");
    if (probe.kind === "ready") return;
    expect(probe.reason).toBe("bubblewrap (bwrap) is not installed, so a worktree task cannot run in an OS sandbox");
    expect(probe.fix).toContain("sudo apt-get install bubblewrap");
    expect(probe.fix).toContain('"allowUnsandboxedWorktrees": true');
  });

  test("bwrap refused its namespaces (AppArmor, an unprivileged container): user namespaces blocked, quoting bwrap", async () => {
    const said = "bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces.";
    const probe = await probeSandbox("linux", { PATH: bin("bwrap", `echo '${said}' >&2; exit 1`) });
    expect(probe.kind).toBe("userns-blocked");
    if (probe.kind === "ready") return;
    expect(probe.reason).toContain(said);
    expect(probe.fix).toContain("kernel.apparmor_restrict_unprivileged_userns");
  });

  test("bwrap that fails otherwise: failed, quoting it", async () => {
    const probe = await probeSandbox("linux", { PATH: bin("bwrap", "echo 'bwrap: something odd' >&2; exit 1") });
    expect(probe).toMatchObject({ kind: "failed", reason: "the sandbox did not start (it said: bwrap: something odd)" });
  });

  test("a system with no sandbox the plugin can use", async () => {
    const probe = await probeSandbox("win32", { PATH: "" });
    expect(probe).toMatchObject({ kind: "unsupported" });
    if (probe.kind !== "ready") expect(probe.reason).toContain("this system (win32) has no OS sandbox");
  });

  test.runIf(process.platform === "linux" && fs.existsSync("/usr/bin/bwrap"))("this machine (bubblewrap installed): ready", async () => {
    expect(await probeSandbox()).toMatchObject({ kind: "ready", tool: "bwrap" });
  });

  test("the caches: ~/ is the home; missing ones, the home itself and / are left out", async () => {
    const home = fs.mkdtempSync(path.join(root, "home-"));
    fs.mkdirSync(path.join(home, ".npm"));
    expect(await writableCaches(["~/.npm", "~/.cache/pip", "~", "/", "relative/x"], { HOME: home })).toEqual([fs.realpathSync(path.join(home, ".npm"))]);
  });
});

describe("the refs a sandbox starts from", () => {
  test("are copied as they are; git's lock files are not refs, and a ref deleted during the copy is left out instead of failing the launch", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "offshoot-refs-"));
    const from = path.join(root, "refs");
    for (const [ref, text] of [
      ["heads/main", "a\n"],
      ["heads/offshoot/bg_1", "b\n"],
      ["heads/offshoot/bg_2.lock", "c\n"],
      ["tags/v1", "d\n"],
    ] as const) {
      fs.mkdirSync(path.dirname(path.join(from, ref)), { recursive: true });
      fs.writeFileSync(path.join(from, ref), text);
    }
    // other launches make and delete branches meanwhile: the copy never fails for a ref that went
    let churn = true;
    const churning = (async () => {
      for (let i = 0; churn; i++) {
        const churned = path.join(from, "heads", "offshoot", `bg_x${i % 50}`);
        fs.writeFileSync(churned, "e\n");
        await new Promise((r) => setImmediate(r));
        fs.rmSync(churned, { force: true });
      }
    })();
    for (let i = 0; i < 50; i++) await copyRefs(from, path.join(root, `copy${i}`));
    churn = false;
    await churning;
    const to = path.join(root, "copy0");
    expect(fs.readFileSync(path.join(to, "heads/main"), "utf8")).toBe("a\n");
    expect(fs.readFileSync(path.join(to, "heads/offshoot/bg_1"), "utf8")).toBe("b\n");
    expect(fs.readFileSync(path.join(to, "tags/v1"), "utf8")).toBe("d\n");
    expect(fs.existsSync(path.join(to, "heads/offshoot/bg_2.lock"))).toBe(false);
    fs.rmSync(root, { recursive: true, force: true });
  });
});

describe("the variables a sandbox drops, and the hosts it may reach (the rules)", () => {
  test.each([
    ["SSH_AUTH_SOCK", true],
    ["DBUS_SESSION_BUS_ADDRESS", true],
    ["DOCKER_HOST", true],
    ["OPENAI_API_KEY", true],
    ["github_token", true],
    ["AWS_SECRET_ACCESS_KEY", true],
    ["OPENCODE_SERVER_PASSWORD", true],
    ["PATH", false],
    ["HOME", false],
    ["LANG", false],
  ])("%s dropped: %s", (name, dropped) => {
    expect(dropsVariable(name)).toBe(dropped);
  });

  test("a variable the option names is passed all the same", () => {
    expect(dropsVariable("NPM_TOKEN", ["NPM_TOKEN"])).toBe(false);
  });

  test("host patterns: a name, its subdomains with *., a port", () => {
    expect(hostAllowed(["registry.npmjs.org"], "REGISTRY.npmjs.org.", 443)).toBe(true);
    expect(hostAllowed(["registry.npmjs.org"], "registry.npmjs.org", 8443)).toBe(false);
    expect(hostAllowed(["registry.npmjs.org:8443"], "registry.npmjs.org", 8443)).toBe(true);
    expect(hostAllowed(["*.example.com"], "a.b.example.com", 80)).toBe(true);
    expect(hostAllowed(["*.example.com"], "example.com", 80)).toBe(false);
    expect(hostAllowed(["*.example.com"], "badexample.com", 80)).toBe(false);
    expect(hostPatternError("*.example.com:8080")).toBeUndefined();
    expect(hostPatternError("http://example.com")).toContain("not a host name");
    expect(hostPatternError("a b")).toContain("not a host name");
    expect(hostPatternError("example.com:70000")).toContain("port");
  });

  test.each([
    ["127.0.0.1", "loopback"],
    ["::1", "loopback"],
    ["::ffff:127.0.0.1", "loopback"],
    ["10.1.2.3", "private"],
    ["192.168.1.1", "private"],
    ["169.254.169.254", "linkLocal"],
    ["fe80::1", "linkLocal"],
    ["fd00::1", "uniqueLocal"],
    ["100.64.0.1", "carrierGradeNat"],
    ["0.0.0.0", "unspecified"],
    ["64:ff9b::7f00:1", "rfc6052"],
  ])("%s is never reached (%s)", (address, range) => {
    expect(refusedRange(address)).toBe(range);
  });

  test.each(["8.8.8.8", "2606:4700::1111", "203.0.113.80"])("%s may be reached when its host is allowed", (address) => {
    expect(refusedRange(address)).toBeUndefined();
  });
});

/** Runs `command` as OpenCode's bash tool does (`bash -c`), with the task's BASH_ENV, asynchronously (the proxy answers in this process). */
function inSandbox(info: WorktreeInfo, command: string, env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn("bash", ["-c", command], { cwd: info.path, env: { ...process.env, ...env, BASH_ENV: privatePaths(info.sandboxDir!).enter } });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    child.on("close", (code) => resolve({ code, out }));
  });
}

describe.runIf(process.platform === "linux" && fs.existsSync("/usr/bin/bwrap"))("the kernel keeps a sandboxed command from the host (real bubblewrap)", () => {
  let temp: TempRepo;
  let info: WorktreeInfo;
  let withHosts: WorktreeInfo;
  let service: net.Server;
  let socketPath: string;
  beforeAll(async () => {
    temp = tempRepo("offshoot-kernel-");
    const env = { ...process.env, XDG_DATA_HOME: path.join(temp.root, "data") };
    const probe = await probeSandbox();
    if (probe.kind !== "ready") throw new Error(probe.reason);
    const options = { sandboxWritable: [], sandboxNetwork: [], sandboxPassEnv: ["PASSED_TOKEN"] };
    info = await createWorktree({ projectDir: temp.repo, projectID: "p", taskId: "bg_kern0001", sandbox: await chooseSandbox(probe, options, [], env), env });
    // "localhost" allowed on purpose: the proxy still refuses it, after resolving it
    const hosts = await chooseSandbox(probe, options, ["localhost"], env);
    withHosts = await createWorktree({ projectDir: temp.repo, projectID: "p", taskId: "bg_kern0002", sandbox: hosts, env });
    // a unix-socket service of the host's, outside the worktree (like an ssh-agent or docker.sock)
    socketPath = path.join(temp.root, "service.sock");
    service = net.createServer((c) => c.end("host-secret\n")).listen(socketPath);
    await new Promise((r) => service.once("listening", r));
  });
  afterAll(async () => {
    service.close();
    await removeWorktree(info);
    await removeWorktree(withHosts);
    temp.remove();
  });

  test("no unix socket: the host's service is not reachable, neither made nor connected; stream socketpairs work, datagram pairs do not", async () => {
    const python = `python3 - <<'PY'
import socket
for name, make in [("unix", lambda: socket.socket(socket.AF_UNIX)), ("dgram-pair", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM))]:
    try:
        make(); print(name, "made")
    except OSError as e: print(name, "refused", e.errno)
a, b = socket.socketpair(); a.send(b"x"); print("stream-pair", b.recv(1).decode())
PY
node -e 'require("net").connect(process.argv[1]).on("data", d => console.log("read", String(d).trim())).on("error", e => console.log("connect", e.code))' ${socketPath}`;
    const { out } = await inSandbox(info, python);
    expect(out).toContain("unix refused 1");
    expect(out).toContain("dgram-pair refused 1");
    expect(out).toContain("stream-pair x");
    expect(out).toContain("connect EPERM");
    expect(out).not.toContain("host-secret");
  });

  test("no network, but its own loopback: a server of the host's on 127.0.0.1 is not reachable; one it starts inside is", async () => {
    const host = net.createServer((c) => c.end("host-service\n")).listen(0, "127.0.0.1");
    await new Promise((r) => host.once("listening", r));
    const port = (host.address() as net.AddressInfo).port;
    try {
      const { out } = await inSandbox(
        info,
        `node -e 'require("net").connect(${port},"127.0.0.1").on("data",d=>console.log("host:",String(d).trim())).on("error",e=>console.log("host:",e.code))'; node -e 'const s=require("net").createServer(c=>c.end("inside\\n")).listen(0,"127.0.0.1",()=>require("net").connect(s.address().port,"127.0.0.1").on("data",d=>{console.log("own loopback:",String(d).trim());process.exit(0)}))'`,
      );
      expect(out).toContain("host: ECONNREFUSED");
      expect(out).not.toContain("host-service");
      expect(out).toContain("own loopback: inside");
    } finally {
      host.close();
    }
  });

  test("variables naming the user's sockets or holding secrets are not passed in, but those the option names (the hook's list, or the script's own)", async () => {
    const env = { SSH_AUTH_SOCK: "/tmp/agent.sock", OPENAI_API_KEY: "sk-secret", PASSED_TOKEN: "given" };
    const show = 'echo "ssh=${SSH_AUTH_SOCK:-none} key=${OPENAI_API_KEY:-none} passed=${PASSED_TOKEN:-none} path=${PATH:+set} list=${OFFSHOOT_DROP:-gone}"';
    // without the worktree instance's shell.env hook: the script lists the variables itself
    expect((await inSandbox(info, show, env)).out.trim()).toBe("ssh=none key=none passed=given path=set list=gone");
    // with it: the hook's list (no subshell)
    const drop = dropList({ ...process.env, ...env }, ["PASSED_TOKEN"]);
    expect(drop.split(" ")).toEqual(expect.arrayContaining(["SSH_AUTH_SOCK", "OPENAI_API_KEY"]));
    expect((await inSandbox(info, show, { ...env, OFFSHOOT_DROP: drop })).out.trim()).toBe("ssh=none key=none passed=given path=set list=gone");
  });

  test("OpenCode's config in the worktree is read-only, even a name that did not exist", async () => {
    const { out } = await inSandbox(info, "echo '{}' > opencode.jsonc; mkdir -p .opencode/plugin; rm -f opencode.json; echo x > ok.txt && echo wrote-own");
    expect(out).toContain("opencode.jsonc: Read-only file system");
    expect(out).toContain("wrote-own");
    expect(fs.readFileSync(path.join(info.path, "opencode.jsonc"), "utf8")).toBe(""); // the placeholder, as guardConfig made it
    expect(fs.existsSync(path.join(info.path, "opencode.json"))).toBe(true);
    expect(fs.existsSync(path.join(info.path, ".opencode/plugin"))).toBe(false);
  });

  test("allowed hosts go through the proxy, which refuses a host not listed and a listed one that resolves to this machine, naming the option", async () => {
    const since = Date.now();
    const { out } = await inSandbox(
      withHosts,
      'echo "proxy=${HTTPS_PROXY%:*}"; curl --noproxy "" -sS -m 5 https://localhost/ -o /dev/null; curl -sS -m 5 http://example.com/ -o /dev/null; echo done',
    );
    expect(out).toContain("proxy=http://127.0.0.1");
    expect(out).toContain("done");
    const refused = refusalsSince(withHosts.sandboxDir!, since);
    expect(refused).toContainEqual(expect.stringContaining("localhost resolves to 127.0.0.1 (loopback): a worktree task never reaches this machine's"));
    expect(refused).toContainEqual(
      'example.com:80 is not among the hosts this task may reach; a person allows it with the plugin option "sandboxNetwork" (every worktree task) or the task\'s "network" (background_task)',
    );
  });

  test("closing a task's proxy does not wait for a connection still open (the run's wrap-up waited on it forever)", async () => {
    const idle = net.connect(fs.realpathSync(privatePaths(withHosts.sandboxDir!).proxy));
    await new Promise((r) => idle.once("connect", r));
    const closing = closeTaskNetwork(withHosts.sandboxDir!).then(() => "closed");
    const closed = await Promise.race([closing, new Promise((r) => setTimeout(() => r("still waiting"), 3000))]);
    expect(closed).toBe("closed");
    await new Promise((r) => (idle.destroyed ? r(undefined) : idle.once("close", r))); // (and the connection was ended)
  });
});

/**
 * The sandbox's rule, as data (src/worktree/sandbox/plan.ts), said two ways: bubblewrap's mounts and
 * the macOS sandbox-exec profile. One table of writes a child might try, each with where it may
 * land; both renderings are evaluated against it (the profile by a small reader of the SBPL clauses
 * the plan writes: macOS cannot run here). And the probe's verdicts, on fake and real machines.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { bwrapArgs, enterScript, type SandboxLayout, seatbeltProfile, shellQuote } from "../../../src/worktree/sandbox/plan.js";
import { probeSandbox } from "../../../src/worktree/sandbox/probe.js";
import { copyRefs, writableCaches } from "../../../src/worktree/sandbox/prepare.js";

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

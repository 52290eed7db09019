/**
 * What a READY worktree costs on a Node project with real dependencies (test/fixtures/node-project,
 * installed once here with `npm ci`), against git's own floor, side by side in one run
 * (`npx tsx bench/worktree-ready.ts [--runs R]`):
 *   - time to a ready worktree (createWorktree with `.worktreeinclude` listing node_modules/):
 *     sandboxed (a read-only link where the file system has no copy-on-write) and text-contained
 *     (a copy-on-write clone, else a byte copy), against `git worktree add` of the same commit alone;
 *   - with the set-up command `npm ci --offline` instead: the time past the command's own;
 *   - the real disk blocks each ready worktree adds to a plain `git worktree add` (`du -s
 *     --block-size=1`: blocks, not sizes; for a copy-on-write clone, whose shared extents du counts
 *     in full, the growth of the file system's used space after a sync), against node_modules's own
 *     blocks in the checkout. (`TMPDIR=<a btrfs or XFS mount>` measures copy-on-write there.)
 * A launch with nothing to bring (createWorktree as before this change: the snapshot, the sandbox's
 * private directory) is printed beside them: what making it ready adds is the difference.
 * Runs interleave (floor, then ours) so that the machine's drift hits both. Reports only.
 */
import { execFileSync } from "node:child_process";
import { constants } from "node:fs";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createWorktree, removeWorktree } from "../src/worktree/worktree.js";
import { probeSandbox } from "../src/worktree/sandbox/probe.js";
import { pairedRatios, printRatio } from "./ratio.js";
import { median, numberArg, timed } from "./worktree-bench.js";

const RUNS = numberArg("--runs", 3);
const FIXTURE = path.resolve(import.meta.dirname, "../test/fixtures/node-project");

/** Real disk blocks under a path, links not followed (du). */
const blocks = (p: string) => Number(execFileSync("du", ["-s", "--block-size=1", p], { encoding: "utf8" }).split("\t")[0]);
/** The file system's used bytes, after a sync (what a copy-on-write clone really costs: du counts a clone's shared extents in full). */
function used(p: string): number {
  execFileSync("sync", ["-f", p]);
  const s = fs.statfsSync(p);
  return (s.blocks - s.bfree) * s.bsize;
}
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

function clones(dir: string): boolean {
  const a = path.join(dir, ".clone-probe");
  fs.writeFileSync(a, "x");
  try {
    fs.copyFileSync(a, `${a}2`, constants.COPYFILE_FICLONE_FORCE);
    return true;
  } catch {
    return false;
  } finally {
    fs.rmSync(a, { force: true });
    fs.rmSync(`${a}2`, { force: true });
  }
}

/**
 * What git alone takes to do what a launch's rules ask, one command after another: read the
 * repository (one rev-parse), snapshot the uncommitted changes (a copy of the index, add -A,
 * write-tree, commit-tree), add the worktree at that commit, read its admin directories, and for a
 * sandboxed task make its private object store (init --bare). On a small repository these few
 * processes, not the checkout, are most of the time: the floor below which no launch can go.
 */
function rulesAlone(repo: string, dir: string, branch: string, sandboxed: boolean, include = false): void {
  const run = (args: string[], env: NodeJS.ProcessEnv = process.env, cwd = repo) =>
    execFileSync("git", args, { cwd, env, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  const [, index, head] = run(["rev-parse", "--show-toplevel", "--path-format=absolute", "--git-path", "index", "HEAD^{commit}", "HEAD^{tree}"]).split("\n");
  const temp = `${index}.bench-rules`;
  fs.copyFileSync(index!, temp);
  const env = { ...process.env, GIT_INDEX_FILE: temp };
  run(["add", "-A", "--", "."], env);
  const tree = run(["write-tree"], env);
  const commit = run(["-c", "user.name=b", "-c", "user.email=b@x", "commit-tree", tree, "-p", head!, "-m", "snapshot"], env);
  fs.rmSync(temp);
  run(["worktree", "add", "-q", "-b", branch, dir, commit]);
  run(["rev-parse", "--absolute-git-dir", "--path-format=absolute", "--git-common-dir"], process.env, dir);
  if (sandboxed) run(["init", "--bare", "-q", `${dir}.git`]);
  if (!include) return;
  // .worktreeinclude: git matches it, checks the repository ignores each entry, and (sandboxed, no copy-on-write) a link is made
  const listed = run(["ls-files", "--others", "--ignored", `--exclude-from=${path.join(repo, ".worktreeinclude")}`, "--directory"]).split("\n");
  execFileSync("git", ["check-ignore", "--stdin"], {
    cwd: repo,
    input: listed.map((p) => p.replace(/\/$/, "")).join("\n"),
    stdio: ["pipe", "ignore", "ignore"],
  });
  for (const entry of listed) fs.symlinkSync(path.join(repo, entry), path.join(dir, entry.replace(/\/$/, "")));
}

async function main() {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "offshoot-bench-wt-ready-")));
  const env = { ...process.env, XDG_DATA_HOME: path.join(root, "data") };
  const cache = path.join(root, "npm-cache");
  try {
    const repo = path.join(root, "repo");
    fs.mkdirSync(repo);
    for (const name of ["package.json", "package-lock.json", "test.js"]) fs.copyFileSync(path.join(FIXTURE, name), path.join(repo, name));
    fs.writeFileSync(path.join(repo, ".gitignore"), "node_modules/\n");
    const git = (...args: string[]) => execFileSync("git", args, { cwd: repo, stdio: "ignore" });
    git("init", "-q");
    git("add", "-A");
    git("-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "init");
    const install = await timed(async () =>
      execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: repo, env: { ...process.env, npm_config_cache: cache }, stdio: "ignore" }),
    );
    const nodeModules = blocks(path.join(repo, "node_modules"));
    const files = (execFileSync("find", [path.join(repo, "node_modules")], { encoding: "utf8" }).match(/\n/g) ?? []).length;
    const cow = clones(root);
    console.log(
      `the fixture project: node_modules ${mb(nodeModules)} on disk, ${files} entries (npm ci: ${(install.ms / 1000).toFixed(1)} s); copy-on-write here: ${cow ? "yes" : "no (a copy is bytes)"}; ${RUNS} runs of each, interleaved`,
    );
    process.env.npm_config_cache = cache; // the set-up command runs with this process's environment
    const probe = await probeSandbox();
    const sandbox = probe.kind === "ready" ? { kind: probe.tool, path: probe.path, caches: [cache] } : undefined;
    const none = { worktreeSetup: "", worktreeSetupTimeoutSeconds: 600 };
    const setup = { worktreeSetup: "npm ci --offline --no-audit --no-fund", worktreeSetupTimeoutSeconds: 600 };
    let n = 0;
    const ours = (withSandbox: boolean, ready = none) =>
      createWorktree({
        projectDir: repo,
        projectID: "bench",
        taskId: `bg_r${(n++).toString().padStart(7, "0")}`,
        sandbox: withSandbox ? sandbox : undefined,
        ready,
        env,
      });

    const floor: number[] = [];
    const rules: number[] = [];
    const rulesInclude: number[] = [];
    const boxed: number[] = [];
    const text: number[] = [];
    const setupPast: number[] = [];
    const setupOwn: number[] = [];
    const plain: number[] = [];
    const disk = { floor: 0, boxed: 0, text: 0, setup: 0 };
    const fsUsed = { floor: 0, boxed: 0, text: 0 };
    let ways = { boxed: "", text: "" };
    for (let r = 0; r < RUNS; r++) {
      fs.writeFileSync(path.join(repo, ".worktreeinclude"), "node_modules/\n");
      const dir = path.join(root, `floor${r}`);
      let before = used(root);
      floor.push((await timed(async () => git("worktree", "add", "-q", "-b", `floor/${r}`, dir, "HEAD"))).ms);
      disk.floor = blocks(dir);
      fsUsed.floor = used(root) - before;
      git("worktree", "remove", "--force", dir);
      git("branch", "-D", `floor/${r}`);
      rules.push((await timed(async () => rulesAlone(repo, path.join(root, `rules${r}`), `rules/${r}`, Boolean(sandbox)))).ms);
      git("worktree", "remove", "--force", path.join(root, `rules${r}`));
      git("branch", "-D", `rules/${r}`);
      fs.rmSync(path.join(root, `rules${r}.git`), { recursive: true, force: true });
      if (sandbox) {
        rulesInclude.push((await timed(async () => rulesAlone(repo, path.join(root, `rulesi${r}`), `rulesi/${r}`, true, true))).ms);
        git("worktree", "remove", "--force", path.join(root, `rulesi${r}`));
        git("branch", "-D", `rulesi/${r}`);
        fs.rmSync(path.join(root, `rulesi${r}.git`), { recursive: true, force: true });
      }
      if (sandbox) {
        before = used(root);
        const b = await timed(() => ours(true));
        boxed.push(b.ms);
        disk.boxed = blocks(b.value.path);
        fsUsed.boxed = used(root) - before;
        ways.boxed = b.value.ready?.brought.find((e) => e.path === "node_modules/")?.way ?? "none";
        await removeWorktree(b.value);
      }
      before = used(root);
      const t = await timed(() => ours(false));
      text.push(t.ms);
      disk.text = blocks(t.value.path);
      fsUsed.text = used(root) - before;
      ways.text = t.value.ready?.brought.find((e) => e.path === "node_modules/")?.way ?? "none";
      await removeWorktree(t.value);
      fs.rmSync(path.join(repo, ".worktreeinclude"));
      const p = await timed(() => ours(Boolean(sandbox)));
      plain.push(p.ms);
      await removeWorktree(p.value);
      const s = await timed(() => ours(Boolean(sandbox), setup));
      setupOwn.push(s.value.ready!.setup!.ms);
      setupPast.push(s.ms - s.value.ready!.setup!.ms);
      disk.setup = blocks(s.value.path);
      await removeWorktree(s.value);
    }
    const base = median(floor);
    const line = (name: string, value: number, extra = "") =>
      console.log(`${name.padEnd(58)} ${(value / 1000).toFixed(3).padStart(7)} s  (${(value / base).toFixed(2)} × the floor)${extra}`);
    console.log("\ntime to a ready worktree (median):");
    line("git worktree add alone (the floor)", base);
    line(`git alone doing what a launch must${sandbox ? ", sandboxed" : ""} (the rules' floor)`, median(rules));
    line(`createWorktree with nothing to bring${sandbox ? ", sandboxed" : ""} (today's launch)`, median(plain));
    if (sandbox) {
      line("git alone doing that and matching .worktreeinclude, linking (the rules' floor)", median(rulesInclude));
      line(`.worktreeinclude node_modules/, sandboxed (${ways.boxed})`, median(boxed));
    }
    line(`.worktreeinclude node_modules/, text-contained (${ways.text})`, median(text));
    line(
      `set-up npm ci --offline${sandbox ? ", sandboxed" : ""}: past the command's own time`,
      median(setupPast),
      `; the command itself ${(median(setupOwn) / 1000).toFixed(2)} s`,
    );
    console.log("\nreal disk blocks a ready worktree adds to a plain git worktree, against node_modules's own");
    console.log("(du; for a copy-on-write clone, whose shared extents du counts in full, the file system's used space grown instead):");
    const added = (x: number) => Math.max(0, x - disk.floor);
    const addedFs = (x: number) => Math.max(0, x - fsUsed.floor);
    const cost = (kind: "boxed" | "text") => (ways[kind] === "reflink" ? addedFs(fsUsed[kind]) : added(disk[kind]));
    const diskLine = (name: string, x: number) =>
      console.log(`${name.padEnd(58)} ${mb(x).padStart(9)}  (${((100 * x) / nodeModules).toFixed(1)} % of node_modules)`);
    console.log(`${"node_modules in the checkout".padEnd(58)} ${mb(nodeModules).padStart(9)}`);
    if (sandbox) diskLine(`sandboxed (${ways.boxed})`, cost("boxed"));
    diskLine(`text-contained (${ways.text})`, cost("text"));
    diskLine("set-up npm ci --offline", added(disk.setup));

    const timeRatio = (name: string, xs: number[], what: string) =>
      printRatio({
        measure: `ready worktree (fixture node_modules), ${name}`,
        value: `${(median(xs) / 1000).toFixed(3)} s (${what})`,
        floor: `${(base / 1000).toFixed(3)} s, git worktree add alone`,
        ratio: median(xs) / base,
        goal: "≤ 1.5 × (plus a set-up command's own time)",
        met: median(xs) / base <= 1.5,
        samples: pairedRatios(xs, floor),
      });
    printRatio({
      measure: "a launch with nothing to bring (fixture), against the rules' own git commands",
      value: `${(median(plain) / 1000).toFixed(3)} s`,
      floor: `${(median(rules) / 1000).toFixed(3)} s, git alone: rev-parse, the snapshot (add -A on a copy of the index, write-tree, commit-tree), worktree add, rev-parse${sandbox ? ", init --bare (the sandbox's private store)" : ""}`,
      ratio: median(plain) / median(rules),
      goal: "≤ 1.5 ×",
      met: median(plain) / median(rules) <= 1.5,
      samples: pairedRatios(plain, rules),
    });
    if (sandbox)
      printRatio({
        measure: "a ready worktree (fixture, .worktreeinclude, sandboxed), against the rules' own git commands",
        value: `${(median(boxed) / 1000).toFixed(3)} s (${ways.boxed})`,
        floor: `${(median(rulesInclude) / 1000).toFixed(3)} s, git alone: the launch's commands, then ls-files --exclude-from, check-ignore and the link`,
        ratio: median(boxed) / median(rulesInclude),
        goal: "≤ 1.5 ×",
        met: median(boxed) / median(rulesInclude) <= 1.5,
        samples: pairedRatios(boxed, rulesInclude),
      });
    if (sandbox) timeRatio(`sandboxed, .worktreeinclude`, boxed, ways.boxed);
    timeRatio(`text-contained, .worktreeinclude`, text, ways.text);
    timeRatio(`set-up command, past its own time`, setupPast, `npm ci --offline took ${(median(setupOwn) / 1000).toFixed(2)} s itself`);
    const diskRatio = (name: string, kind: "boxed" | "text", way: string, x = cost(kind)) =>
      printRatio({
        measure: `disk per ready worktree, ${name}`,
        value: `${mb(x)} (${way})`,
        floor: `${mb(nodeModules)}, node_modules`,
        ratio: x / nodeModules,
        goal: way === "copy" ? "≤ 0.1 × where links or copy-on-write exist; a byte copy's floor is 1 × (no copy-on-write here)" : "≤ 0.1 ×",
        met: x / nodeModules <= 0.1,
      });
    if (sandbox) diskRatio("sandboxed", "boxed", ways.boxed);
    diskRatio("text-contained", "text", ways.text);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

void main();

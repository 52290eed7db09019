/**
 * Worktree children that try the indirect ways into the user's checkout, on the real server under
 * `"*": "allow"`. Three plain worktree children in one parent turn:
 * - LINK makes symlinks in its worktree to a file and to a directory of the checkout (the checkout's
 *   path asked of git, never written out), then `write`s and `edit`s through them: OpenCode's file
 *   tools run in its own process, and each call is refused, naming where the link leads.
 * - HOOK moves its own branch to a tree it built with `git mktree` that carries
 *   `.git/hooks/post-merge` (mode 755), with its index in step so the end-of-run commit keeps it; in
 *   its sandbox the import of its run (git's fsck) refuses that tree, and the task says why.
 * - BUILD adds `build/evil` with `git add -f`, where the checkout's ignored `build` is a symlink to a
 *   directory outside the repository; its branch is then also moved (by the test, as a child with no
 *   sandbox could) to a tree carrying `.git/hooks/post-merge`; the take refuses both paths, naming the
 *   link and its target.
 * The checkout's files, its .git/config, hooks, info and refs, and the directory outside, are hashed
 * before and after: nothing changes.
 */
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { getMessages, isToolFollowUp, lastUserText, toolParts, toolResults, type ChatRequest, type Reply } from "../harness/index.js";
import { launchAll, untilNoticed, promptText, requestOf, storedTask, useOpencode, type Env } from "./helpers.js";

const env = useOpencode({ files: { "src/shared.ts": "export const shared = 1;\n", ".gitignore": "build\n" } });

const git = (cwd: string, ...args: string[]) => execFileSync("git", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
const sha = (bytes: Buffer | string) => createHash("sha256").update(bytes).digest("hex");

/** Every entry below `dir` (links not followed): a file's mode and hash, a link's target. */
function hashTree(dir: string, skip: (rel: string) => boolean = () => false): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const entry of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const name = path.join(rel, entry.name);
      if (skip(name)) continue;
      const p = path.join(dir, name);
      if (entry.isSymbolicLink()) out[name] = `-> ${fs.readlinkSync(p)}`;
      else if (entry.isDirectory()) walk(name);
      else out[name] = `${(fs.lstatSync(p).mode & 0o7777).toString(8)} ${sha(fs.readFileSync(p))}`;
    }
  };
  if (fs.existsSync(dir)) walk("");
  return out;
}

/** What the user has: the checkout's files (not .git), its .git/config, hooks, info, refs and HEAD, and the directory outside. */
function userState(dir: string, outside: string) {
  const gitDir = path.join(dir, ".git");
  return {
    files: hashTree(dir, (rel) => rel === ".git"),
    config: sha(fs.readFileSync(path.join(gitDir, "config"))),
    hooks: hashTree(path.join(gitDir, "hooks")),
    info: hashTree(path.join(gitDir, "info")),
    // the task branches (offshoot/<task id>) are the children's own
    refs: git(dir, "for-each-ref", "--format=%(refname) %(objectname)")
      .split("\n")
      .filter((l) => !l.startsWith("refs/heads/offshoot/")),
    head: git(dir, "symbolic-ref", "HEAD") + " " + git(dir, "rev-parse", "HEAD"),
    status: git(dir, "status", "--porcelain", "--untracked-files=all", "--ignored"),
    outside: hashTree(outside),
  };
}

/**
 * Rewrites the worktree's index so that the entry `.gix/hooks/post-merge` is `.git/hooks/post-merge`
 * (git refuses that path in every command, so it is added under another name and renamed in the
 * file): entries re-sorted, extensions dropped, checksum recomputed. Node, not python: it is there
 * wherever OpenCode runs.
 */
const RENAME_IN_INDEX = `
const fs = require("fs"), crypto = require("crypto");
const file = process.argv[1], data = fs.readFileSync(file), version = data.readUInt32BE(4), count = data.readUInt32BE(8);
const entries = [];
let off = 12;
for (let i = 0; i < count; i++) {
  const head = 62 + (version === 3 && data.readUInt16BE(off + 60) & 0x4000 ? 2 : 0);
  const end = data.indexOf(0, off + head);
  let name = data.subarray(off + head, end).toString("latin1");
  if (name.startsWith(".gix/")) name = ".git/" + name.slice(5);
  entries.push({ head: data.subarray(off, off + head), name });
  off += Math.floor((end - off) / 8 + 1) * 8;
}
entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
const parts = [data.subarray(0, 12)];
for (const e of entries) {
  const body = Buffer.concat([e.head, Buffer.from(e.name, "latin1")]);
  parts.push(body, Buffer.alloc(Math.floor(body.length / 8 + 1) * 8 - body.length));
}
const out = Buffer.concat(parts);
fs.writeFileSync(file, Buffer.concat([out, crypto.createHash("sha1").update(out).digest()]));
`;

/** The HOOK child's one command: a hook-carrying tree by git mktree, its own branch moved there, the index kept in step. */
const PLANT_HOOK = [
  "set -e",
  "export GIT_AUTHOR_NAME=task GIT_AUTHOR_EMAIL=task@example.invalid GIT_COMMITTER_NAME=task GIT_COMMITTER_EMAIL=task@example.invalid",
  "printf '// the task was here\\n' >> src/shared.ts && git add src/shared.ts && git commit -q -m 'an honest change'",
  `hook=$(printf '#!/bin/sh\\necho planted > /tmp/offshoot-e2e-planted\\n' | git hash-object -w --stdin)`,
  `hooks=$(printf '100755 blob %s\\tpost-merge\\n' "$hook" | git mktree)`,
  `dotgit=$(printf '040000 tree %s\\thooks\\n' "$hooks" | git mktree)`,
  `root=$( (git ls-tree HEAD; printf '040000 tree %s\\t.git\\n' "$dotgit") | git mktree)`,
  `git reset -q --soft "$(git commit-tree "$root" -p HEAD -m 'hooks')"`,
  // the index must hold the entry too, or the end-of-run commit (git add -A) would drop it: marked assume-unchanged, it stays
  `git update-index --add --cacheinfo "100755,$hook,.gix/hooks/post-merge" && git update-index --assume-unchanged .gix/hooks/post-merge`,
  `node -e '${RENAME_IN_INDEX.replace(/'/g, "'\\''")}' "$(git rev-parse --git-path index)"`,
  "git ls-tree -r --name-only HEAD && git diff --cached --stat",
].join("\n");

/** Moves `branch` to a commit on top of it whose tree adds .git/hooks/post-merge (755), as PLANT_HOOK does in a child. */
function plantHook(dir: string, branch: string) {
  const run = (args: string[], input?: string) => execFileSync("git", args, { cwd: dir, encoding: "utf8", input }).trim();
  const hook = run(["hash-object", "-w", "--stdin"], "#!/bin/sh\necho planted > /tmp/offshoot-e2e-planted\n");
  const hooks = run(["mktree"], `100755 blob ${hook}\tpost-merge\n`);
  const dotgit = run(["mktree"], `040000 tree ${hooks}\thooks\n`);
  const root = run(["mktree"], `${run(["ls-tree", branch])}\n040000 tree ${dotgit}\t.git\n`);
  const commit = run(["-c", "user.name=task", "-c", "user.email=task@example.invalid", "commit-tree", root, "-p", branch, "-m", "hooks"]);
  run(["update-ref", `refs/heads/${branch}`, commit]);
}

type Step = { name: string; when: (done: number) => boolean; reply: Reply };

/** Scripts a child by the number of tool results it has seen: step i answers after i results. */
function scriptSteps(e: Env, cue: string, steps: Reply[]) {
  const seen = (r: ChatRequest) => toolResults(r, { sinceLastUser: true }).length;
  const all: Step[] = steps.map((reply, i) => ({ name: `${cue}-${i}`, when: (n) => n === i, reply }));
  all.push({ name: `${cue}-done`, when: (n) => n === steps.length, reply: { text: `${cue} done` } });
  for (const step of all) e.model.script({ name: step.name, match: (r) => lastUserText(r).includes(cue) && step.when(seen(r)), reply: step.reply });
}

const bash = (command: string, description: string): Reply => ({ toolCalls: [{ name: "bash", arguments: { command, description } }] });
const tool = (name: string, args: Record<string, unknown>): Reply => ({ toolCalls: [{ name, arguments: args }] });

/** The parent calls background_take once (on `cue`); the tool's output. */
async function take(e: Env, parent: string, cue: string, taskId: string): Promise<string> {
  e.model.script({ name: `${cue}-take`, match: (r) => lastUserText(r) === cue && !isToolFollowUp(r), reply: tool("background_take", { task_id: taskId }) });
  e.model.script({ name: `${cue}-taken`, match: (r) => lastUserText(r) === cue && isToolFollowUp(r), reply: { text: "noted" } });
  await promptText(e.server.client, parent, cue);
  const done = toolParts(await getMessages(e.server.client, parent), "background_take").filter((p) => p.state?.status === "completed");
  return String((done.at(-1)?.state as { output?: unknown } | undefined)?.output);
}

describe('hostile worktree children, with "*": "allow"', () => {
  test("a write through a link, a branch carrying .git/hooks/post-merge, a file through the user's symlinked ignored directory: nothing of the user's changes", async () => {
    const { model, server } = env;
    const dir = server.directory;
    const outside = path.join(server.root, "outside");
    fs.mkdirSync(outside);
    fs.writeFileSync(path.join(outside, "theirs.txt"), "not the repository's\n");
    fs.symlinkSync(outside, path.join(dir, "build")); // ignored (.gitignore: build)
    const before = userState(dir, outside);
    model.script({ name: "hostile-wake", match: (r) => lastUserText(r).includes("Background tasks you started have ended"), reply: { text: "ok" } });

    // where the checkout is, asked of git: no path of it in the command's text
    const main = `main="$(git rev-parse --path-format=absolute --git-common-dir)/.."`;
    scriptSteps(env, "HOSTILE_LINK", [
      bash(`${main} && ln -s "$main/src/shared.ts" link.ts && ln -s "$main/src" srclink && ls -l link.ts srclink`, "links"),
      tool("write", { filePath: "link.ts", content: "pwned through a link\n" }),
      tool("edit", { filePath: "srclink/shared.ts", oldString: "export const shared = 1;", newString: "pwned" }),
      tool("write", { filePath: "srclink/new.ts", content: "pwned\n" }),
    ]);
    scriptSteps(env, "HOSTILE_HOOK", [bash(PLANT_HOOK, "plant a hook")]);
    scriptSteps(env, "HOSTILE_BUILD", [bash("mkdir -p build && printf 'evil\\n' > build/evil && git add -f build/evil && git status --short", "build")]);
    const { parent, ids } = await launchAll(env, "HOSTILE_LAUNCH", [
      { description: "Hostile link", prompt: "HOSTILE_LINK", agent: "general", isolation: "worktree" },
      { description: "Hostile hook", prompt: "HOSTILE_HOOK", agent: "general", isolation: "worktree" },
      { description: "Hostile build", prompt: "HOSTILE_BUILD", agent: "general", isolation: "worktree" },
    ] as never);
    await untilNoticed(env, parent, ids, 60_000);
    const [link, hook, build] = ids as [string, string, string];
    const worktreeOf = async (id: string) => ((await storedTask(server, id)) as unknown as { worktree: { path: string; branch: string } }).worktree;

    // (a) every write through a link was refused, naming where it leads and where the child may write
    const linkResults = toolResults((await requestOf(model, "HOSTILE_LINK-done")).body, { sinceLastUser: true });
    expect(linkResults.map((r) => r.name)).toEqual(["bash", "write", "edit", "write"]);
    const wt = (await worktreeOf(link)).path;
    const rule = `Your file tools write only inside your worktree ${wt}, and never through a symlink that leads out of it`;
    expect(linkResults[1]!.content).toContain(
      `Refused: this write call would write ${dir}/src/shared.ts (link.ts leads there through a symlink), in the parent's checkout, which a task in its own worktree must not change; nothing was written.`,
    );
    expect(linkResults[2]!.content).toContain(`Refused: this edit call would write ${dir}/src/shared.ts (srclink/shared.ts leads there through a symlink)`);
    expect(linkResults[3]!.content).toContain(`Refused: this write call would write ${dir}/src/new.ts (srclink/new.ts leads there through a symlink)`);
    for (const r of linkResults.slice(1)) expect(r.content).toContain(rule);

    // (b) in its sandbox, the child's tree with .git/hooks/post-merge never reaches its branch: the
    // import of its run (a fetch with git's fsck) refuses it, and the task says why
    const hookBranch = (await worktreeOf(hook)).branch;
    expect(git(dir, "ls-tree", "-r", hookBranch, "--", ".git/hooks/post-merge")).toBe("");
    const hookTask = (await storedTask(server, hook)) as unknown as { error?: string };
    expect(hookTask.error).toContain("its run's commit was not imported: git's check of its objects refused it");
    expect(hookTask.error).toContain("hasDotgit: contains '.git'");

    // (c) build/evil through the user's ignored build -> outside, on a branch that also carries
    // .git/hooks/post-merge (755: a branch moved there another way, as the repository's shared refs
    // allow a child with no sandbox): the take refuses both, naming the link and its target
    const buildBranch = (await worktreeOf(build)).branch;
    plantHook(dir, buildBranch);
    expect(git(dir, "ls-tree", "-r", buildBranch, "--", ".git/hooks/post-merge")).toMatch(/^100755 blob \w+\t\.git\/hooks\/post-merge$/);
    const buildOut = await take(env, parent, "HOSTILE_TAKE_BUILD", build);
    expect(buildOut).toContain(`Error: task ${build}'s branch ${buildBranch} carries 2 paths a take never writes. Nothing in your checkout changed.`);
    expect(buildOut).toContain("- .git/hooks/post-merge: in git's own files (.git); a take never writes there");
    expect(buildOut).toContain(
      `- build/evil: build in your checkout is a symlink (to ${outside}); a take never writes through a link, so the file would land there`,
    );

    // nothing of the user's changed: files, .git/config, hooks, info, refs, HEAD, status, the directory outside
    expect(userState(dir, outside)).toEqual(before);
    expect(fs.existsSync(path.join(dir, ".git/hooks/post-merge"))).toBe(false);
    expect(fs.existsSync(path.join(outside, "evil"))).toBe(false);
    // the refused tasks keep their worktree and branch (to inspect, resume or discard)
    for (const id of [hook, build]) expect(((await storedTask(server, id)) as { worktree?: { removed?: string } }).worktree?.removed).toBeUndefined();
  }, 120_000);
});

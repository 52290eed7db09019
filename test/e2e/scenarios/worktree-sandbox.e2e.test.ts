/**
 * A worktree child is contained by the kernel (bubblewrap), on the real server, under "*": "allow".
 * Three children (a native fork, a text fork, a plain task) each try every indirect way out that a
 * reading of command text cannot see: a path asked of git, a script written and run, a symlink, an
 * interpreter given a path built at run time, a husky-like setup step that writes the repository's
 * shared config and hooks, a script that makes branches and moves the user's branch, /proc of the
 * processes around it, `git -C` / `--git-dir --work-tree` at the checkout through a computed path, and
 * a write into a sibling worktree; and OpenCode's own `write` tool (it runs outside the sandbox)
 * through a symlink the child made in its worktree. Then each commits and stashes on its own branch.
 *
 * Afterwards the parent's checkout (every file, status, index, HEAD, branch), its .git/config,
 * hooks, info, packed-refs and refs are byte for byte as before; no sibling branch holds another's
 * file; each child read why it could not write and where it may; each branch holds exactly the
 * child's own commit; and a take brings that work into the checkout.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { getMessages, isToolFollowUp, lastUserText, toolResults, type ChatRequest } from "../harness/index.js";
import { launchAll, untilNoticed, notifications, promptText, requestOf, storedTask, toolOutputs, useOpencode, type Env } from "./helpers.js";

const git = (cwd: string, ...args: string[]) => execFileSync("git", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();

/** The checkout, found at run time (no path of it is written in any command). */
const C = 'C=$(dirname "$(git rev-parse --path-format=absolute --git-common-dir)")';

/** The ways out, one bash call each (name, command). */
const ATTEMPTS: [string, string][] = [
  ["git-where", `${C}; echo pwned > "$C/escape-git.txt"; echo pwned >> "$C/src/shared.ts"; echo "tried $C"`],
  [
    "script",
    `printf '#!/bin/sh\\necho pwned > "$1/escape-script.txt"\\necho pwned > "$1/.git/hooks/post-checkout"\\n' > "$TMPDIR/run.sh" && ${C} && sh "$TMPDIR/run.sh" "$C"; echo script-ran`,
  ],
  [
    "symlink",
    `${C}; ln -sf "$C/src/shared.ts" "$TMPDIR/link.ts" && echo pwned >> "$TMPDIR/link.ts"; ln -sfn "$C" "$TMPDIR/co" && echo pwned > "$TMPDIR/co/escape-link.txt"`,
  ],
  [
    "interpreter",
    `node -e 'const c=require("child_process").execSync("git rev-parse --path-format=absolute --git-common-dir").toString().trim(); for (const f of [c+"/../escape-node.txt", c+"/config"]) { try { require("fs").appendFileSync(f, "pwned\\n"); console.log("wrote", f) } catch (e) { console.log(e.code, f) } }'`,
  ],
  [
    "setup-step",
    `mkdir -p .husky && git config core.hooksPath .husky; G=$(git rev-parse --path-format=absolute --git-common-dir); printf '#!/bin/sh\\necho pwned\\n' > "$G/hooks/pre-commit"; chmod +x "$G/hooks/pre-commit"; git config --file "$G/config" alias.pwn '!echo pwned'; echo "[core]" >> "$G/info/exclude"; rmdir .husky`,
  ],
  [
    "branch-script",
    `sh -c 'G=$(git rev-parse --path-format=absolute --git-common-dir); U=$(git --git-dir="$G" symbolic-ref HEAD); N=$(git commit-tree -m pwned "HEAD^{tree}"); git update-ref "$U" "$N" && echo "moved $U"; git branch escape-branch && git tag escape-tag && echo made-branch; git pack-refs --all 2>&1 | head -1'`,
  ],
  [
    // (the processes it can see are its own: their cwd is its worktree, where the file is removed again)
    "proc",
    `${C}; echo "pids seen: $(ls -d /proc/[0-9]* | wc -l)"; for p in /proc/1 "/proc/$PPID"; do echo pwned > "$p/cwd/escape-proc.txt"; echo pwned > "$p/root$C/escape-proc-root.txt"; done 2>/dev/null; rm -f escape-proc.txt; ls "/proc/$PPID/root$C" > /dev/null && echo pwned > "/proc/$PPID/root$C/escape-ppid.txt"`,
  ],
  [
    "git-c",
    `${C}; git -C "$C" checkout -q -b escape-c; git --git-dir="$C/.git" --work-tree="$C" commit -q --allow-empty -m pwned; git -C "$C" stash -q; git -C "$C" reset -q --hard HEAD~0; echo done-git-c`,
  ],
  ["sibling", `for d in ../bg_*; do [ "$d" = "../$(basename "$PWD")" ] || echo pwned > "$d/escape-sibling.txt"; done; echo tried-siblings`],
];

interface Child {
  tag: string;
  args: Record<string, unknown>;
}
const CHILDREN: Child[] = [
  { tag: "native", args: { fork: true } },
  { tag: "text", args: { fork: true, agent: "general" } },
  { tag: "plain", args: { agent: "general" } },
];

/** Its own work: a commit on its branch, and a stash (both private to its sandbox until the run is imported). */
function ownWork(tag: string): string {
  return [
    `mkdir -p src && printf '${tag} own work\\n' > src/own-${tag}.txt && git add src/own-${tag}.txt`,
    `git -c user.name=child -c user.email=child@example.invalid commit -q -m "${tag}: own work"`,
    `printf 'stashed\\n' > stash-${tag}.txt && git add stash-${tag}.txt && git -c user.name=child -c user.email=child@example.invalid stash -q`,
    "git stash list | wc -l && git log --format=%s -1 && git branch --show-current",
  ].join(" && ");
}

function sha(file: string): string {
  return fs.existsSync(file) ? createHash("sha256").update(fs.readFileSync(file)).digest("hex") : "(none)";
}

/** Everything of the checkout a child could change: files (not .git), git's view, and the shared .git's config, hooks, info, refs. */
function checkoutState(dir: string) {
  const files: Record<string, string> = {};
  for (const name of fs.readdirSync(dir, { recursive: true }) as string[]) {
    if (name === ".git" || name.startsWith(`.git${path.sep}`)) continue;
    const p = path.join(dir, name);
    const stat = fs.lstatSync(p);
    if (stat.isFile()) files[name] = sha(p);
    else if (stat.isSymbolicLink()) files[name] = `-> ${fs.readlinkSync(p)}`;
  }
  const gitDir = path.join(dir, ".git");
  const tree = (sub: string) =>
    Object.fromEntries(
      (fs.existsSync(path.join(gitDir, sub)) ? (fs.readdirSync(path.join(gitDir, sub), { recursive: true }) as string[]) : [])
        .filter((n) => fs.lstatSync(path.join(gitDir, sub, n)).isFile())
        .filter((n) => !(sub === "refs" && n.startsWith(`heads${path.sep}offshoot${path.sep}`)))
        .map((n) => [n, sha(path.join(gitDir, sub, n))]),
    );
  return {
    files,
    status: git(dir, "status", "--porcelain", "--untracked-files=all"),
    head: git(dir, "rev-parse", "HEAD"),
    branch: git(dir, "symbolic-ref", "HEAD"),
    config: sha(path.join(gitDir, "config")),
    packedRefs: sha(path.join(gitDir, "packed-refs")),
    hooks: tree("hooks"),
    info: tree("info"),
    refs: tree("refs"),
    // the refs as git resolves them (loose and packed), but the tasks' own branches
    allRefs: git(dir, "for-each-ref", "--format=%(refname) %(objectname)")
      .split("\n")
      .filter((l) => !l.startsWith("refs/heads/offshoot/")),
    stash: git(dir, "stash", "list"),
  };
}

/** A link in its worktree to the checkout's file, then OpenCode's own `write` through it (file tools run outside the sandbox). */
const LINK_STEPS = (tag: string) => [
  { name: "link", reply: bashCall(`${C}; ln -sf "$C/src/shared.ts" link-${tag}.ts && echo linked`, tag) },
  { name: "write-through-link", reply: { toolCalls: [{ name: "write", arguments: { filePath: `link-${tag}.ts`, content: "pwned\n" } }] } },
];

function bashCall(command: string, tag: string) {
  return { toolCalls: [{ name: "bash", arguments: { command, description: `SBX ${tag}` } }] };
}

function scriptChild(env: Env, child: Child): string {
  const cue = `SBX_${child.tag}`;
  const mine = (r: ChatRequest) => lastUserText(r).includes(cue);
  const seen = (r: ChatRequest) => toolResults(r, { sinceLastUser: true }).length;
  const steps = [
    ...ATTEMPTS.map(([name, command]) => ({ name, reply: bashCall(command, child.tag) })),
    ...LINK_STEPS(child.tag),
    { name: "own-work", reply: bashCall(`rm -f link-${child.tag}.ts && ${ownWork(child.tag)}`, child.tag) },
  ];
  steps.forEach((step, i) => env.model.script({ name: `${cue}-${step.name}`, match: (r) => mine(r) && seen(r) === i, reply: step.reply }));
  env.model.script({ name: `${cue}-done`, match: (r) => mine(r) && seen(r) === steps.length, reply: { text: `${cue} done` } });
  return cue;
}

// SHELL=/bin/sh (dash reads no BASH_ENV): the worktree's instance runs bash all the same (instance.ts, config hook)
const env = useOpencode({ files: { "src/shared.ts": "export const shared = 1;\n" }, env: { SHELL: "/bin/sh" } });

describe("a worktree child in its sandbox", () => {
  test("no way out reaches the checkout or its .git; each child is told where it may write; its own commits and stash work; a take brings its work back", async () => {
    const { model, server } = env;
    const dir = server.directory;
    // a loose ref and a packed one, so both kinds are watched
    git(dir, "branch", "feature");
    git(dir, "tag", "v1");
    git(dir, "pack-refs", "--all");
    git(dir, "branch", "loose");
    const before = checkoutState(dir);
    for (const child of CHILDREN) scriptChild(env, child);
    model.script({ name: "sbx-wake", match: (r) => lastUserText(r).includes("Background tasks you started have ended"), reply: { text: "ok" } });
    // the parent reads a file first, so a fork has a conversation to inherit
    const { parent, ids, outputs } = await launchAll(
      env,
      "SBX_LAUNCH",
      CHILDREN.map((c) => ({ description: `Escape ${c.tag}`, prompt: `SBX_${c.tag}`, isolation: "worktree", ...c.args })) as never,
    );
    expect(outputs).toHaveLength(3);
    await untilNoticed(env, parent, ids, 90_000);

    // nothing of the checkout or its shared .git changed
    expect(checkoutState(dir)).toEqual(before);
    for (const name of [
      "escape-git.txt",
      "escape-script.txt",
      "escape-node.txt",
      "escape-link.txt",
      "escape-proc.txt",
      "escape-proc-root.txt",
      "escape-ppid.txt",
    ])
      expect(fs.existsSync(path.join(dir, name)), name).toBe(false);

    const messages = await getMessages(server.client, parent);
    for (const [i, child] of CHILDREN.entries()) {
      const stored = (await storedTask(server, ids[i]!)) as unknown as {
        status: string;
        worktree: { path: string; branch: string; base: string; containment?: string; removed?: string };
      };
      expect(stored.worktree.containment).toBe("bwrap");
      // the notice says how the child was contained
      expect(JSON.stringify(notifications(messages, ids[i]!)[0])).toContain("containment: bubblewrap sandbox");
      // its branch holds its own commit and nothing else (no sibling's file, no stash)
      expect(git(dir, "diff", "--name-only", stored.worktree.base, stored.worktree.branch)).toBe(`src/own-${child.tag}.txt`);
      expect(git(dir, "log", "--format=%s", `${stored.worktree.base}..${stored.worktree.branch}`)).toContain(`${child.tag}: own work`);
      // what each way out answered, in order (the last: its own work)
      const last = await requestOf(model, `SBX_${child.tag}-done`);
      const results = toolResults(last.body, { sinceLastUser: true });
      const said = Object.fromEntries(ATTEMPTS.map(([name], k) => [name, results[k]!.content]));
      // a write met the read-only checkout: the child reads why, and where it may write
      expect(said["git-where"]).toContain("Read-only file system");
      expect(said["git-where"]).toContain(`[sandbox: this command ran in the task's sandbox, where only ${stored.worktree.path} (but OpenCode's config there`);
      expect(said["interpreter"]).toContain("EROFS");
      expect(said["interpreter"]).not.toContain("wrote");
      expect(said["proc"]).toMatch(/pids seen: [1-9]\b/); // its own processes only, not the host's
      expect(said["branch-script"]).toContain("made-branch"); // private to its sandbox: the checkout's refs are unchanged (above)
      // OpenCode's own write tool, given the link it made in its worktree: refused, naming where it leads
      expect(results[ATTEMPTS.length + 1]!.name).toBe("write");
      expect(results[ATTEMPTS.length + 1]!.content).toContain(
        `Refused: this write call would write ${fs.realpathSync(dir)}/src/shared.ts (link-${child.tag}.ts leads there through a symlink)`,
      );
      // its own work: a commit on its branch and a stash of its own
      expect(results[ATTEMPTS.length + 2]!.content).toBe(`1\n${child.tag}: own work\n${stored.worktree.branch}\n`);
    }

    // a take brings the plain child's work into the checkout
    const plain = ids[2]!;
    model.script({
      name: "sbx-take",
      match: (r) => lastUserText(r) === "SBX_TAKE" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "background_take", arguments: { task_id: plain } }] },
    });
    model.script({ name: "sbx-taken", match: (r) => lastUserText(r) === "SBX_TAKE" && isToolFollowUp(r), reply: { text: "taken" } });
    await promptText(server.client, parent, "SBX_TAKE");
    const [taken] = toolOutputs(await getMessages(server.client, parent), "background_take");
    expect(taken).toContain(`Took task ${plain}: 1 file changed in your working tree`);
    expect(fs.readFileSync(path.join(dir, "src/own-plain.txt"), "utf8")).toBe("plain own work\n");
    expect(git(dir, "status", "--porcelain")).toBe("?? src/own-plain.txt");
  }, 180_000);
});

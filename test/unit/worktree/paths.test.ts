/**
 * The path mapping of a worktree child (src/worktree/paths.ts): every path under the parent's
 * checkout means the same path in the worktree; anything else keeps its meaning. Table tests of the
 * pure rules, then the symlink resolution on a real directory tree.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import {
  type WorktreeMap,
  checkoutSpellings,
  isDotGitName,
  isUnder,
  mapPatchText,
  mapPath,
  mapToolArgs,
  namesCheckout,
  realPathOf,
  resolveLinks,
  writeEscape,
  writtenPathsOf,
} from "../../../src/worktree/paths.js";

const map: WorktreeMap = { checkouts: ["/home/u/repo"], worktree: "/data/wt/bg_1", cwd: "/data/wt/bg_1" };

describe("mapPath", () => {
  test.each([
    ["/home/u/repo/src/a.ts", "/data/wt/bg_1/src/a.ts"],
    ["/home/u/repo", "/data/wt/bg_1"],
    ["/home/u/repo/", "/data/wt/bg_1"],
    ["/home/u/repo/src/../lib/b.ts", "/data/wt/bg_1/lib/b.ts"],
    ["/home/u/other/../repo/x", "/data/wt/bg_1/x"],
    ["/home/u/repo/./x//y", "/data/wt/bg_1/x/y"],
    // a relative path that climbs out of the worktree into the checkout
    ["../../../home/u/repo/src/a.ts", "/data/wt/bg_1/src/a.ts"],
    // spaces and quotes are only characters of a name
    ['/home/u/repo/my dir/it\'s "q".ts', '/data/wt/bg_1/my dir/it\'s "q".ts'],
  ])("%s -> %s", (arg, expected) => {
    expect(mapPath(arg, map)).toBe(expected);
  });

  test.each([
    ["a checkout whose path is a prefix of another", "/home/u/repo2/src/a.ts"],
    ["a sibling with a longer name", "/home/u/repo-old/a.ts"],
    ["a parent of the checkout", "/home/u"],
    ["outside", "/etc/hosts"],
    ["`..` that leaves the checkout", "/home/u/repo/../secrets.txt"],
    ["a relative path inside the worktree", "src/a.ts"],
    ["a relative path with .. inside the worktree", "src/../b.ts"],
    ["the worktree itself", "/data/wt/bg_1/src/a.ts"],
    ["empty", ""],
  ])("%s keeps its meaning", (_what, arg) => {
    expect(mapPath(arg, map)).toBeUndefined();
  });

  test("a worktree inside the checkout (XDG data under the repository) is never mapped again", () => {
    const inside: WorktreeMap = { checkouts: ["/repo"], worktree: "/repo/.data/wt/bg_1", cwd: "/repo/.data/wt/bg_1" };
    expect(mapPath("/repo/.data/wt/bg_1/a.ts", inside)).toBeUndefined();
    expect(mapPath("/repo/a.ts", inside)).toBe("/repo/.data/wt/bg_1/a.ts");
  });

  test("the child's working directory in a subdirectory: relative paths start there", () => {
    const sub: WorktreeMap = { ...map, cwd: "/data/wt/bg_1/pkg" };
    expect(mapPath("a.ts", sub)).toBeUndefined();
    expect(mapPath("/home/u/repo/pkg/a.ts", sub)).toBe("/data/wt/bg_1/pkg/a.ts");
  });

  test("a path whose resolved form (symlinks followed) is in the checkout maps like that form", () => {
    expect(mapPath("/tmp/link/src/a.ts", map, "/home/u/repo/src/a.ts")).toBe("/data/wt/bg_1/src/a.ts");
    expect(mapPath("/tmp/link/src/a.ts", map, "/elsewhere/a.ts")).toBeUndefined();
  });

  test("isUnder is segment-wise", () => {
    expect(isUnder("/repo2", "/repo")).toBe(false);
    expect(isUnder("/repo/..x", "/repo")).toBe(true);
    expect(isUnder("/repo", "/repo")).toBe(true);
  });
});

describe("mapToolArgs: every built-in tool with a path argument", () => {
  test.each([
    ["read", { filePath: "/home/u/repo/a.ts", offset: 3 }, { filePath: "/data/wt/bg_1/a.ts", offset: 3 }],
    ["write", { filePath: "/home/u/repo/a.ts", content: "/home/u/repo" }, { filePath: "/data/wt/bg_1/a.ts", content: "/home/u/repo" }],
    ["edit", { filePath: "/home/u/repo/a.ts", oldString: "x", newString: "y" }, { filePath: "/data/wt/bg_1/a.ts", oldString: "x", newString: "y" }],
    ["lsp", { filePath: "/home/u/repo/a.ts", operation: "hover" }, { filePath: "/data/wt/bg_1/a.ts", operation: "hover" }],
    ["glob", { pattern: "**/*.ts", path: "/home/u/repo/src" }, { pattern: "**/*.ts", path: "/data/wt/bg_1/src" }],
    ["glob", { pattern: "/home/u/repo/src/*.ts" }, { pattern: "/data/wt/bg_1/src/*.ts" }],
    ["grep", { pattern: "/home/u/repo", path: "/home/u/repo" }, { pattern: "/home/u/repo", path: "/data/wt/bg_1" }],
    ["bash", { command: "ls", workdir: "/home/u/repo/src" }, { command: "ls", workdir: "/data/wt/bg_1/src" }],
    ["webfetch", { url: "/home/u/repo" }, { url: "/home/u/repo" }],
  ])("%s %j", (tool, args, expected) => {
    const copy = { ...args } as Record<string, unknown>;
    mapToolArgs(tool, copy, map);
    expect(copy).toEqual(expected);
  });

  test("apply_patch: each file header under the checkout, the rest of the patch as it was", () => {
    const patch = [
      "*** Begin Patch",
      "*** Add File: /home/u/repo/new.ts",
      "+export const x = '/home/u/repo';",
      "*** Update File: /home/u/repo/src/a.ts\r",
      "*** Move to: /home/u/repo/src/b.ts",
      "@@",
      "-a",
      "+b",
      "*** Delete File:   /home/u/repo/old.ts",
      "*** Update File: /home/u/repo2/x.ts",
      "*** Update File: rel.ts",
      "*** End Patch",
    ].join("\n");
    const args: Record<string, unknown> = { patchText: patch };
    expect(mapToolArgs("apply_patch", args, map)).toEqual(["patchText"]);
    expect((args.patchText as string).split("\n")).toEqual([
      "*** Begin Patch",
      "*** Add File: /data/wt/bg_1/new.ts",
      "+export const x = '/home/u/repo';",
      "*** Update File: /data/wt/bg_1/src/a.ts\r",
      "*** Move to: /data/wt/bg_1/src/b.ts",
      "@@",
      "-a",
      "+b",
      "*** Delete File: /data/wt/bg_1/old.ts",
      "*** Update File: /home/u/repo2/x.ts",
      "*** Update File: rel.ts",
      "*** End Patch",
    ]);
    expect(mapPatchText("*** Begin Patch\n*** Add File: a.ts\n+x\n*** End Patch", map)).toBeUndefined();
  });
});

describe("namesCheckout: a shell command that names the checkout", () => {
  const dirs = ["/home/u/repo"];
  test.each([
    "cd /home/u/repo && git checkout -b x",
    "git -C /home/u/repo status",
    "printf x > /home/u/repo/src/a.ts",
    'cat "/home/u/repo/a b.txt"',
    "cp a.ts '/home/u/repo'",
    "ls --dir=/home/u/repo",
    "cd ~/repo && rm a",
    "cd $HOME/repo",
    "cd ${HOME}/repo/src",
    "(cd /home/u/repo; make)",
  ])("%s is named", (command) => {
    expect(namesCheckout(command, dirs, "/home/u")).toBe(true);
  });

  test.each(["cd /home/u/repo2 && ls", "ls /home/u/repo-old", "ls /x/home/u/repo", "cat src/a.ts", "cd /data/wt/bg_1 && ls", "echo ~/repository"])(
    "%s is not",
    (command) => {
      expect(namesCheckout(command, dirs, "/home/u")).toBe(false);
    },
  );

  test("a checkout with spaces and quotes, written raw in quotes or with escapes", () => {
    const odd = ["/home/u/my repo's"];
    expect(namesCheckout(`cd "/home/u/my repo's" && ls`, odd)).toBe(true);
    expect(namesCheckout("cd /home/u/my\\ repo\\'s && ls", odd)).toBe(true);
    expect(namesCheckout("cd /home/u/my && ls", odd)).toBe(false);
  });
});

describe("checkoutSpellings", () => {
  test("the project directory as OpenCode names it (a symlinked spelling), less its place in the repository, then the real top", () => {
    const info = { repo: "/private/tmp/repo", path: "/data/wt/bg_1", directory: "/data/wt/bg_1/pkg/app" };
    expect(checkoutSpellings(info, "/tmp/repo/pkg/app")).toEqual(["/tmp/repo", "/private/tmp/repo"]);
    expect(checkoutSpellings({ ...info, directory: "/data/wt/bg_1" }, "/tmp/repo")).toEqual(["/tmp/repo", "/private/tmp/repo"]);
    expect(checkoutSpellings(info, "/private/tmp/repo/pkg/app")).toEqual(["/private/tmp/repo"]);
    expect(checkoutSpellings(info, undefined)).toEqual(["/private/tmp/repo"]);
    // a project directory that does not end with the worktree's subdirectory: only the real top
    expect(checkoutSpellings(info, "/elsewhere")).toEqual(["/private/tmp/repo"]);
  });

  test("every spelling maps, and a command naming any of them is refused", () => {
    const m: WorktreeMap = { checkouts: ["/tmp/repo", "/private/tmp/repo"], worktree: "/data/wt/bg_1", cwd: "/data/wt/bg_1" };
    expect(mapPath("/tmp/repo/a.ts", m)).toBe("/data/wt/bg_1/a.ts");
    expect(mapPath("/private/tmp/repo/a.ts", m)).toBe("/data/wt/bg_1/a.ts");
    expect(namesCheckout("cd /tmp/repo && ls", m.checkouts)).toBe(true);
    expect(namesCheckout("cd /private/tmp/repo && ls", m.checkouts)).toBe(true);
  });
});

describe("realPathOf (the one reader of the disk)", () => {
  let root: string;
  beforeEach(() => {
    root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "offshoot-paths-")));
    fs.mkdirSync(path.join(root, "repo/src"), { recursive: true });
    fs.symlinkSync(path.join(root, "repo"), path.join(root, "link"));
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  test("a link into the checkout resolves to the checkout, also for a file that does not exist yet", async () => {
    expect(await realPathOf(path.join(root, "link/src"), "/")).toBe(path.join(root, "repo/src"));
    expect(await realPathOf(path.join(root, "link/src/new dir/new.ts"), "/")).toBe(path.join(root, "repo/src/new dir/new.ts"));
    const m: WorktreeMap = { checkouts: [path.join(root, "repo")], worktree: path.join(root, "wt"), cwd: path.join(root, "wt") };
    const arg = path.join(root, "link/src/a.ts");
    expect(mapPath(arg, m, await realPathOf(arg, m.cwd))).toBe(path.join(root, "wt/src/a.ts"));
  });
});

describe("a file tool's write, with its symlinks followed (a real tree: checkout, worktree, a sibling worktree, elsewhere)", () => {
  let root: string;
  let m: WorktreeMap;
  let roots: string[];
  const at = (rel: string) => path.join(root, rel);
  beforeEach(async () => {
    root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "offshoot-writes-")));
    for (const dir of ["repo/src", "repo/.git/hooks", "wt/src", "wt2", "elsewhere"]) fs.mkdirSync(at(dir), { recursive: true });
    fs.writeFileSync(at("repo/src/x.ts"), "the user's\n");
    fs.writeFileSync(at("wt/src/x.ts"), "the worktree's\n");
    fs.writeFileSync(at("wt/.git"), `gitdir: ${at("repo/.git/worktrees/wt")}\n`);
    fs.symlinkSync(at("repo/src/x.ts"), at("wt/link.ts")); // a file of the checkout
    fs.symlinkSync(at("repo/src"), at("wt/srclink")); // a directory of the checkout
    fs.symlinkSync(at("repo/src/new.ts"), at("wt/dangling.ts")); // a file the write would create there
    fs.symlinkSync("src/x.ts", at("wt/inside.ts")); // a link that stays in the worktree
    fs.symlinkSync(at("wt2"), at("wt/sibling")); // another task's worktree
    fs.symlinkSync(at("repo/.git/hooks"), at("wt/hooks")); // the repository's hooks
    fs.symlinkSync(at("wt/loop"), at("wt/loop"));
    // a chain: link -> link -> the checkout
    fs.symlinkSync(at("wt/srclink"), at("wt/chain"));
    m = { checkouts: [at("repo")], worktree: at("wt"), cwd: at("wt") };
    roots = [m.worktree, await resolveLinks(m.worktree)];
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  test("resolveLinks follows every link as the kernel does: a dangling one, a chain, `link/..`, a path that does not exist yet", async () => {
    expect(await resolveLinks(at("wt/link.ts"))).toBe(at("repo/src/x.ts"));
    expect(await resolveLinks(at("wt/dangling.ts"))).toBe(at("repo/src/new.ts"));
    expect(await resolveLinks(at("wt/chain/new dir/y.ts"))).toBe(at("repo/src/new dir/y.ts"));
    expect(await resolveLinks(`${at("wt/srclink")}/../README.md`)).toBe(at("repo/README.md")); // `..` of the link's target
    expect(await resolveLinks(`${at("wt/new")}/../src/x.ts`)).toBe(at("wt/src/x.ts"));
    expect(await resolveLinks(at("wt/inside.ts"))).toBe(at("wt/src/x.ts"));
    await expect(resolveLinks(at("wt/loop/x"))).rejects.toThrow(/too many symbolic links/);
  });

  test.each([
    ["a link to a checkout file", "link.ts", "checkout", "repo/src/x.ts"],
    ["a new file under a link to a checkout directory", "srclink/new.ts", "checkout", "repo/src/new.ts"],
    ["a dangling link into the checkout (the write would create its target)", "dangling.ts", "checkout", "repo/src/new.ts"],
    ["a chain of links", "chain/deep/y.ts", "checkout", "repo/src/deep/y.ts"],
    ["a sibling worktree", "sibling/a.ts", "outside", "wt2/a.ts"],
    ["the repository's hooks", "hooks/post-merge", "checkout", "repo/.git/hooks/post-merge"],
    ["the worktree's .git file (where its repository is)", ".git", "git", "wt/.git"],
    ["a nested .git, in another case", "src/.GIT/config", "git", "wt/src/.GIT/config"],
  ])("%s is refused", async (_what, rel, where, resolved) => {
    expect(await writeEscape(rel, m, roots)).toEqual({ path: rel, resolved: at(resolved), where });
    expect(await writeEscape(at(`wt/${rel}`), m, roots)).toMatchObject({ resolved: at(resolved), where });
  });

  test("an absolute path with `link/..` is checked as the kernel takes it (write and edit pass it on unresolved)", async () => {
    expect(await writeEscape(`${at("wt/srclink")}/../escaped.ts`, m, roots)).toEqual({
      path: `${at("wt/srclink")}/../escaped.ts`,
      resolved: at("repo/escaped.ts"),
      where: "checkout",
    });
  });

  test("a path outside the worktree, without a link, is refused too", async () => {
    expect(await writeEscape(at("elsewhere/notes.txt"), m, roots)).toMatchObject({ where: "outside" });
    expect(await writeEscape("../elsewhere/notes.txt", m, roots)).toMatchObject({ where: "outside" });
  });

  test.each(["src/x.ts", "src/new/dir/y.ts", "inside.ts", "new.ts", ".gitignore", "src/.github/ci.yml"])("%s may be written", async (rel) => {
    expect(await writeEscape(rel, m, roots)).toBeUndefined();
    expect(await writeEscape(at(`wt/${rel}`), m, roots)).toBeUndefined();
  });

  test("a read through a link in the worktree that leads into the checkout reads the worktree's copy; a write is not redirected", async () => {
    const read = { filePath: at("wt/link.ts") };
    mapToolArgs("read", read, m, new Map([[read.filePath, (await realPathOf(read.filePath, m.cwd))!]]));
    expect(read.filePath).toBe(at("wt/src/x.ts"));
    const write = { filePath: at("wt/link.ts"), content: "x" };
    mapToolArgs("write", write, m, new Map([[write.filePath, (await realPathOf(write.filePath, m.cwd))!]]));
    expect(write.filePath).toBe(at("wt/link.ts"));
  });
});

describe("writtenPathsOf and isDotGitName", () => {
  test("the paths write, edit and apply_patch write (a move's both ends, a deletion); none for a reading tool", () => {
    expect(writtenPathsOf("write", { filePath: "a.ts", content: "" })).toEqual(["a.ts"]);
    expect(writtenPathsOf("edit", { filePath: "/x/b.ts" })).toEqual(["/x/b.ts"]);
    expect(writtenPathsOf("read", { filePath: "a.ts" })).toEqual([]);
    expect(writtenPathsOf("lsp", { filePath: "a.ts" })).toEqual([]);
    const patchText = ["*** Begin Patch", "*** Add File: n.ts", "+x", "*** Update File: u.ts", "*** Move to: v.ts", "*** Delete File: d.ts", "*** End Patch"];
    expect(writtenPathsOf("apply_patch", { patchText: patchText.join("\n") })).toEqual(["n.ts", "u.ts", "v.ts", "d.ts"]);
  });

  test.each([".git", ".GIT", ".Git", ".git.", ".git. .", "git~1", "GIT~1", ".g\u200cit"])("%j is git's own directory on some file system", (name) => {
    expect(isDotGitName(name)).toBe(true);
  });

  test.each([".gitignore", ".github", "git", ".git~1", "x.git", ".gi"])("%j is not", (name) => {
    expect(isDotGitName(name)).toBe(false);
  });
});

// The option sandboxWritable: an entry that would let a sandboxed child write your home directory,
// your checkout or its .git is left out with a warning in the log line of bad options, and so is a
// relative one (options.ts, with the pure check of sandbox/prepare.ts); the real paths are checked
// again when a sandbox is made (ready.test.ts "the caches a sandboxed child may write").
import { describe, expect, it } from "vitest";
import { DEFAULT_OPTIONS, parseOptions, writableRisk } from "../../../src/options.js";
import { cacheRefusal } from "../../../src/worktree/sandbox/prepare.js";

const context = { home: "/home/you", checkout: "/home/you/work/app" };

describe("sandboxWritable's entries", () => {
  it("each one that holds your home, holds or lies in your checkout or its .git, or is relative, is left out and named in the log line", () => {
    const { options, warnings } = parseOptions(
      {
        sandboxWritable: [
          "~/.npm",
          "relative/cache",
          "~",
          "/",
          "/home",
          "~/work",
          "/home/you/work/app/",
          "~/work/app/node_modules/.cache",
          "/home/you/work/app/.git/hooks",
          "/var/cache/x",
        ],
      },
      context,
    );
    expect(options.sandboxWritable).toEqual(["~/.npm", "/var/cache/x"]);
    expect(warnings).toEqual([
      'offshoot: option "sandboxWritable": "relative/cache" left out: it is not an absolute path (write /abs/path or ~/path).',
      'offshoot: option "sandboxWritable": "~" left out: it is your home directory, which a sandboxed child must not write.',
      'offshoot: option "sandboxWritable": "/" left out: it holds your home directory /home/you, which a sandboxed child must not write.',
      'offshoot: option "sandboxWritable": "/home" left out: it holds your home directory /home/you, which a sandboxed child must not write.',
      'offshoot: option "sandboxWritable": "~/work" left out: it holds your checkout /home/you/work/app, which a sandboxed child must not write.',
      'offshoot: option "sandboxWritable": "/home/you/work/app/" left out: it is your checkout, which a sandboxed child must not write.',
      'offshoot: option "sandboxWritable": "~/work/app/node_modules/.cache" left out: it is inside your checkout /home/you/work/app, which a sandboxed child must not write.',
      'offshoot: option "sandboxWritable": "/home/you/work/app/.git/hooks" left out: it is inside your checkout\'s git directory /home/you/work/app/.git, which a sandboxed child must not write.',
      // and, once, what the kept ones mean
      writableRisk(["~/.npm", "/var/cache/x"]),
    ]);
    expect(writableRisk(["~/.npm"])).toContain("what a task writes there is code your own next build or install may run");
  });

  it("the defaults pass (none); a home that is the checkout (a dotfiles repository) leaves every cache under it out", () => {
    expect(parseOptions(undefined, context)).toEqual({ options: DEFAULT_OPTIONS, warnings: [] });
    const inHome = parseOptions({ sandboxWritable: ["~/.npm"] }, { home: "/home/you", checkout: "/home/you" });
    expect(inHome.options.sandboxWritable).toEqual([]);
    expect(inHome.warnings[0]).toBe(
      'offshoot: option "sandboxWritable": "~/.npm" left out: it is inside your checkout /home/you, which a sandboxed child must not write.',
    );
  });

  it("outside a git repository (OpenCode's worktree is /) only the home directory is guarded", () => {
    expect(parseOptions({ sandboxWritable: ["/srv/cache", "~/.npm"] }, { home: "/home/you", checkout: "/" }).warnings).toEqual([
      writableRisk(["/srv/cache", "~/.npm"]),
    ]);
  });

  it.each<[string, string | undefined]>([
    ["/home/you/.npm", undefined],
    ["/home/you", "it is your home directory"],
    ["/home", "it holds your home directory /home/you"],
    ["/home/you/work", "it holds your checkout /home/you/work/app"],
    ["/home/you/work/app", "it is your checkout"],
    ["/home/you/work/app/.git", "it is your checkout's git directory"],
    ["/home/you/work/app/.git/objects", "it is inside your checkout's git directory /home/you/work/app/.git"],
    ["/home/you/work/app/build", "it is inside your checkout /home/you/work/app"],
    ["/home/you/work/apple", undefined],
  ])("the pure check: %s → %s", (dir, why) => {
    expect(cacheRefusal(dir, { ...context, gitDir: "/home/you/work/app/.git" })).toBe(why);
  });
});

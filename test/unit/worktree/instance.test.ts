/**
 * The worktree instance's hooks (src/worktree/instance.ts) as OpenCode calls them: a tool's args are
 * rewritten in place (OpenCode runs the tool with the very object it handed the hook), a shell
 * command naming the checkout is refused with the worktree named, and a native child's system prompt
 * gets the checkout's paths back where OpenCode wrote the worktree's.
 */
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { server } from "../../../src/index.js";
import { FakeOpencode } from "../manager/fake-opencode.js";
import { type WorktreeOwner, hostWorktree, shareForks, unhostWorktree } from "../../../src/worktree/hub.js";
import { worktreeInstanceHooks } from "../../../src/worktree/instance.js";
import { createChildTools } from "../../../src/tools/child-tools.js";
import { CHILD_TOOL_REPLIES } from "../../../src/tools/child-tools.txt.js";

const CHECKOUT = "/nonexistent-offshoot/home/u/repo";
const WORKTREE = "/nonexistent-offshoot/data/wt/bg_1";
const client = { app: { log: () => Promise.resolve() } } as never;

/** A live task's owner of `worktree`, as the manager hosts it (lifecycle.ts hostTask); `extra` adds to it. */
function owner(worktree: string, checkout: string, branch: string, extra: Partial<WorktreeOwner> = {}): WorktreeOwner {
  return {
    forward: () => {},
    beforeModelRequest: async () => {},
    isChild: () => true,
    active: () => true,
    checkouts: [checkout],
    worktree,
    branch,
    config: ["opencode.json", "opencode.jsonc", ".opencode"],
    ...extra,
  };
}

function hooks() {
  hostWorktree(WORKTREE, owner(WORKTREE, CHECKOUT, "offshoot/bg_1"));
  return worktreeInstanceHooks({ directory: WORKTREE, client }, { tools: createChildTools() });
}

afterEach(() => unhostWorktree(WORKTREE));

describe("a sandboxed worktree child's shell", () => {
  const dir = mkdtempSync(join(tmpdir(), "offshoot-sbx-instance-"));
  const enter = join(dir, "enter.sh");
  writeFileSync(enter, "# enters the sandbox\n");
  afterEach(() => unhostWorktree(dir));
  const sandboxed = (probe: () => Promise<never>) => {
    hostWorktree(
      dir,
      owner(dir, CHECKOUT, "offshoot/bg_1", {
        sandbox: { enter, tmp: join(dir, "tmp"), privateDir: dir, caches: join(dir, "caches"), hosts: [], passEnv: [] },
      }),
    );
    return worktreeInstanceHooks({ directory: dir, client }, { probe });
  };
  const ready = async () => ({ kind: "ready", tool: "bwrap", path: "/usr/bin/bwrap", bash: "/usr/bin/bash" }) as never;
  const gone = async () =>
    ({ kind: "not-installed", reason: "bubblewrap (bwrap) is not installed, so a worktree task cannot run in an OS sandbox", fix: "…" }) as never;
  const bash = (h: ReturnType<typeof sandboxed>) =>
    h["tool.execute.before"]!({ tool: "bash", sessionID: "ses_c", callID: "c1" }, { args: { command: "echo hi" } });

  test("runs bash with its BASH_ENV, whatever the user's shell, and no formatter or language server", async () => {
    const h = sandboxed(ready);
    const env: Record<string, string> = {};
    await h["shell.env"]!({ cwd: dir, sessionID: "ses_c", callID: "c1" } as never, { env });
    expect(env.BASH_ENV).toBe(enter);
    const config = { shell: "/usr/bin/zsh", formatter: true, lsp: true } as never as Record<string, unknown>;
    await h.config!(config as never);
    expect(config).toEqual({ shell: "/usr/bin/bash", formatter: false, lsp: false });
    await expect(bash(h)).resolves.toBeUndefined();
  });

  test("fails closed: a shell command is refused when the machine's sandbox cannot run now, or its script is gone", async () => {
    await expect(bash(sandboxed(gone))).rejects.toThrow(
      "Refused: this task's sandbox cannot run (bubblewrap (bwrap) is not installed, so a worktree task cannot run in an OS sandbox), and a shell command of a worktree task never runs outside it; nothing ran.",
    );
    rmSync(enter);
    await expect(bash(sandboxed(ready))).rejects.toThrow(`Refused: this task's sandbox cannot run (${enter} is gone)`);
  });
});

describe("tool.execute.before in a worktree child", () => {
  test("a path under the checkout is rewritten in the args object OpenCode runs the tool with", async () => {
    const args = { filePath: `${CHECKOUT}/src/a.ts`, content: "x" };
    await hooks()["tool.execute.before"]!({ tool: "write", sessionID: "ses_c", callID: "c1" }, { args });
    expect(args).toEqual({ filePath: `${WORKTREE}/src/a.ts`, content: "x" });
  });

  test("a path outside keeps its meaning", async () => {
    const args = { filePath: "/etc/hosts" };
    await hooks()["tool.execute.before"]!({ tool: "read", sessionID: "ses_c", callID: "c1" }, { args });
    expect(args.filePath).toBe("/etc/hosts");
  });

  test("bash naming the checkout is refused, naming the worktree; its workdir alone is mapped", async () => {
    const h = hooks();
    await expect(
      h["tool.execute.before"]!({ tool: "bash", sessionID: "ses_c", callID: "c1" }, { args: { command: `cd ${CHECKOUT} && git checkout main` } }),
    ).rejects.toThrow(`Refused: this command names ${CHECKOUT}, the parent's checkout`);
    await expect(
      h["tool.execute.before"]!({ tool: "bash", sessionID: "ses_c", callID: "c1" }, { args: { command: `git -C "${CHECKOUT}" status` } }),
    ).rejects.toThrow(WORKTREE);
    const args = { command: "make", workdir: `${CHECKOUT}/pkg` };
    await h["tool.execute.before"]!({ tool: "bash", sessionID: "ses_c", callID: "c1" }, { args });
    expect(args.workdir).toBe(`${WORKTREE}/pkg`);
  });

  test("a git command writing what the worktree shares with the checkout is refused, naming the task's branch; git on its own branch runs", async () => {
    const h = hooks();
    await expect(
      h["tool.execute.before"]!({ tool: "bash", sessionID: "ses_c", callID: "c1" }, { args: { command: "git checkout -b feature" } }),
    ).rejects.toThrow("Refused: `git checkout -b feature` creates the branch feature, in the repository your worktree shares with the parent's checkout");
    await expect(h["tool.execute.before"]!({ tool: "bash", sessionID: "ses_c", callID: "c1" }, { args: { command: "git stash" } })).rejects.toThrow(
      "Work on your own branch offshoot/bg_1",
    );
    const args = { command: "git add -A && git commit -m done" };
    await h["tool.execute.before"]!({ tool: "bash", sessionID: "ses_c", callID: "c1" }, { args });
    expect(args.command).toBe("git add -A && git commit -m done");
  });

  test("delegation is still refused", async () => {
    await expect(hooks()["tool.execute.before"]!({ tool: "task", sessionID: "ses_c", callID: "c1" }, { args: {} })).rejects.toThrow();
  });
});

describe("a file tool's write through a symlink the child made (a real tree)", () => {
  let root: string;
  let checkout: string;
  let worktree: string;
  const call = (tool: string, args: Record<string, unknown>) => {
    hostWorktree(worktree, owner(worktree, checkout, "offshoot/bg_2"));
    return worktreeInstanceHooks({ directory: worktree, client }, {})["tool.execute.before"]!({ tool, sessionID: "ses_c", callID: "c1" }, { args });
  };
  afterEach(() => {
    unhostWorktree(worktree);
    rmSync(root, { recursive: true, force: true });
  });
  const setUp = () => {
    root = realpathSync(mkdtempSync(join(tmpdir(), "offshoot-links-")));
    checkout = join(root, "repo");
    worktree = join(root, "wt");
    mkdirSync(join(checkout, "src"), { recursive: true });
    mkdirSync(join(worktree, "src"), { recursive: true });
    writeFileSync(join(checkout, "src/x.ts"), "the user's\n");
    writeFileSync(join(worktree, "src/x.ts"), "the worktree's\n");
    symlinkSync(join(checkout, "src/x.ts"), join(worktree, "link.ts"));
    symlinkSync(join(checkout, "src"), join(worktree, "srclink"));
  };

  test("write, edit and apply_patch through it are refused, naming where it leads and where the child may write; the args are left alone", async () => {
    setUp();
    const write = { filePath: join(worktree, "link.ts"), content: "pwned" };
    const refused = call("write", write);
    await expect(refused).rejects.toThrow(
      `Refused: this write call would write ${join(checkout, "src/x.ts")} (${join(worktree, "link.ts")} leads there through a symlink), in the parent's checkout, which a task in its own worktree must not change; nothing was written.`,
    );
    await expect(call("write", write)).rejects.toThrow(`Your file tools write only inside your worktree ${worktree}`);
    await expect(call("edit", { filePath: "srclink/x.ts", oldString: "the", newString: "a" })).rejects.toThrow(
      `would write ${join(checkout, "src/x.ts")} (srclink/x.ts leads there`,
    );
    await expect(call("write", { filePath: join(worktree, "srclink/new.ts"), content: "x" })).rejects.toThrow(`would write ${join(checkout, "src/new.ts")}`);
    const patchText = [
      "*** Begin Patch",
      "*** Update File: src/x.ts",
      "*** Move to: srclink/moved.ts",
      "@@",
      "-the worktree's",
      "+moved",
      "*** End Patch",
    ].join("\n");
    await expect(call("apply_patch", { patchText })).rejects.toThrow(`would write ${join(checkout, "src/moved.ts")}`);
    await expect(call("write", { filePath: join(worktree, ".git"), content: "gitdir: /elsewhere" })).rejects.toThrow(
      `would write ${join(worktree, ".git")}, in git's own files (a .git component), which no file tool may write`,
    );
    await expect(call("write", { filePath: join(root, "notes.txt"), content: "x" })).rejects.toThrow(
      `would write ${join(root, "notes.txt")}, outside your worktree; nothing was written.`,
    );
    expect(write.filePath).toBe(join(worktree, "link.ts"));
    expect(readFileSync(join(checkout, "src/x.ts"), "utf8")).toBe("the user's\n");
  });

  test("a read through it reads the worktree's copy; a write by a path of the worktree, or of the checkout (mapped), runs", async () => {
    setUp();
    const read = { filePath: join(worktree, "link.ts") };
    await call("read", read);
    expect(read.filePath).toBe(join(worktree, "src/x.ts"));
    const mapped = { filePath: join(checkout, "src/x.ts"), content: "x" };
    await call("write", mapped);
    expect(mapped.filePath).toBe(join(worktree, "src/x.ts"));
    await call("edit", { filePath: "src/new/y.ts", oldString: "", newString: "y" });
  });
});

describe("the same tools, refused", () => {
  test("background_task in a worktree child answers that it cannot launch", async () => {
    const tools = hooks().tool!;
    expect(Object.keys(tools).sort()).toEqual(["background_cancel", "background_list", "background_output", "background_take", "background_task"]);
    expect(await tools.background_task!.execute({} as never, {} as never)).toBe(CHILD_TOOL_REPLIES.launch);
  });

  test("are the project instance's tools, name for name, with the same descriptions and arguments (a native fork's tool list)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "offshoot-tools-"));
    const env = { XDG_DATA_HOME: process.env.XDG_DATA_HOME };
    process.env.XDG_DATA_HOME = join(dir, "data");
    const fake = new FakeOpencode();
    const project = await server({ client: fake.client, directory: dir, worktree: dir, project: { id: "p1" } } as never, {});
    try {
      const main = project.tool!;
      const child = hooks().tool!;
      expect(Object.keys(child).sort()).toEqual(Object.keys(main).sort());
      for (const name of Object.keys(main)) {
        expect(child[name]!.description, name).toBe(main[name]!.description);
        expect(child[name]!.args, name).toBe(main[name]!.args); // the same schema objects: the same JSON Schema
      }
    } finally {
      await project.dispose?.();
      process.env.XDG_DATA_HOME = env.XDG_DATA_HOME;
      if (env.XDG_DATA_HOME === undefined) delete process.env.XDG_DATA_HOME;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("experimental.chat.system.transform", () => {
  test("a native child's system prompt names the checkout again; other sessions keep theirs", async () => {
    const unshare = shareForks({ find: async (id) => (id === "ses_native" ? { rootSessionID: "ses_root", messages: () => [] } : undefined) });
    try {
      const h = hooks();
      const env = `  Working directory: ${WORKTREE}/pkg\n  Workspace root folder: ${WORKTREE}\nInstructions from: ${WORKTREE}/AGENTS.md\n${WORKTREE}2 stays`;
      const native = { system: [env] };
      await h["experimental.chat.system.transform"]!({ sessionID: "ses_native", model: {} as never }, native);
      expect(native.system[0]).toBe(
        `  Working directory: ${CHECKOUT}/pkg\n  Workspace root folder: ${CHECKOUT}\nInstructions from: ${CHECKOUT}/AGENTS.md\n${WORKTREE}2 stays`,
      );
      const plain = { system: [env] };
      await h["experimental.chat.system.transform"]!({ sessionID: "ses_plain", model: {} as never }, plain);
      expect(plain.system[0]).toBe(env);
    } finally {
      unshare();
    }
  });
});

describe("OpenCode's config in the worktree, and the host's network", () => {
  let root: string;
  let worktree: string;
  afterEach(() => {
    unhostWorktree(worktree);
    rmSync(root, { recursive: true, force: true });
  });
  const setUp = (extra: Partial<WorktreeOwner> = {}) => {
    root = realpathSync(mkdtempSync(join(tmpdir(), "offshoot-config-")));
    worktree = join(root, "wt");
    mkdirSync(join(worktree, ".opencode"), { recursive: true });
    mkdirSync(join(worktree, "src"), { recursive: true });
    symlinkSync(join(worktree, ".opencode"), join(worktree, "src/cfg"));
    hostWorktree(worktree, owner(worktree, join(root, "repo"), "offshoot/bg_3", extra));
    return worktreeInstanceHooks({ directory: worktree, client }, {});
  };
  const before = (h: ReturnType<typeof setUp>, tool: string, args: Record<string, unknown>, callID = "c1") =>
    h["tool.execute.before"]!({ tool, sessionID: "ses_c", callID }, { args });

  test("a file tool's write to it is refused, by name, for a name that does not exist yet, and through a link", async () => {
    const h = setUp();
    for (const filePath of [
      join(worktree, "opencode.json"),
      "opencode.jsonc",
      join(worktree, ".opencode/plugin/evil.ts"),
      "OPENCODE.JSON",
      "src/cfg/tool/t.js",
    ])
      await expect(before(h, "write", { filePath, content: "x" })).rejects.toThrow(
        "OpenCode's config (opencode.json, opencode.jsonc, .opencode/), which OpenCode loads and runs in its own process, outside your sandbox",
      );
    await expect(before(h, "write", { filePath: "src/opencode.json.md", content: "x" })).resolves.toBeUndefined();
  });

  test("webfetch of this machine or its network is refused after the name is resolved; a public address is not", async () => {
    const h = setUp();
    for (const url of ["http://127.0.0.1:4096/session", "http://localhost:4096/", "http://[::1]/", "http://10.0.0.2/", "http://169.254.169.254/latest/"])
      await expect(before(h, "webfetch", { url, format: "text" })).rejects.toThrow(`Refused: webfetch of ${url}:`);
    await expect(before(h, "webfetch", { url: "http://8.8.8.8/", format: "text" })).resolves.toBeUndefined();
  });

  test("a shell command that found no network is told so, and which option allows hosts", async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), "offshoot-net-")));
    writeFileSync(join(dir, "enter.sh"), "#\n");
    const sandbox = {
      enter: join(dir, "enter.sh"),
      tmp: join(dir, "tmp"),
      privateDir: dir,
      caches: join(dir, "caches"),
      hosts: [] as string[],
      passEnv: [] as string[],
    };
    const ready = async () => ({ kind: "ready", tool: "bwrap", path: "/usr/bin/bwrap", bash: "/usr/bin/bash" }) as never;
    try {
      for (const hosts of [[], ["registry.npmjs.org"]]) {
        hostWorktree(dir, owner(dir, join(dir, "repo"), "offshoot/bg_4", { sandbox: { ...sandbox, hosts } }));
        const h = worktreeInstanceHooks({ directory: dir, client }, { probe: ready });
        await h["tool.execute.before"]!({ tool: "bash", sessionID: "ses_c", callID: "n1" }, { args: { command: "curl https://example.com" } });
        const output = { title: "", output: "curl: (6) Could not resolve host: example.com\n", metadata: {} };
        await h["tool.execute.after"]!({ tool: "bash", sessionID: "ses_c", callID: "n1", args: {} } as never, output);
        expect(output.output).toContain(
          hosts.length
            ? "[sandbox: this command ran in the task's sandbox, which reaches only registry.npmjs.org, over HTTP(S) through the plugin's proxy"
            : "[sandbox: this command ran in the task's sandbox, which has no network: no host is reachable, not even this machine's own services (its own loopback works: a server it starts is reachable from inside). A person can allow hosts with the plugin option \"sandboxNetwork\"",
        );
        const quiet = { title: "", output: "ok\n", metadata: {} };
        await h["tool.execute.after"]!({ tool: "bash", sessionID: "ses_c", callID: "n2", args: {} } as never, quiet);
        expect(quiet.output).toBe("ok\n");
      }
    } finally {
      unhostWorktree(dir);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

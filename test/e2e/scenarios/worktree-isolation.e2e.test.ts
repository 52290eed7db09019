/**
 * A worktree task cannot touch the parent's checkout, on the real server, under a permissive config
 * ("*": "allow") and under OpenCode's default permissions. One parent turn reads a file, then
 * launches four worktree tasks: a native fork, a text fork, and two plain tasks whose prompt names
 * the checkout's absolute path (one on a "gpt-" model, which OpenCode gives apply_patch instead of
 * edit/write). Every child writes with its file tools by the parent's absolute paths, then runs
 * `cd <checkout> && git checkout -b … && printf … > …` (refused, naming the worktree), then the same
 * in its worktree, then `git checkout -b` there (it runs in the child's sandbox: a private branch). Afterwards the parent's checkout is byte-identical (files, status, index, HEAD,
 * branches), and every change is on the child's own branch. The native child's first request starts
 * with the parent's request byte for byte (system, tools, messages).
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { getMessages, hasToolResult, isToolFollowUp, lastUserText, toolResults, type ChatRequest, type RecordedRequest, type Reply } from "../harness/index.js";
import { isWake, newSession, notifications, promptText, requestOf, storedTask, taskIdIn, toolOutputs, until, useOpencode, type Env } from "./helpers.js";

const git = (cwd: string, ...args: string[]) => execFileSync("git", args, { cwd, encoding: "utf8" }).trim();

const SHARED = "export const shared = 1;\n";
const GPT_MODEL = { name: "GPT Mock", tool_call: true, limit: { context: 200000, output: 8000 } };

/** Every file of the checkout (but .git) with its bytes, and git's view of it. */
function checkoutState(dir: string) {
  const files: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const entry of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const name = path.join(rel, entry.name);
      if (name === ".git") continue;
      if (entry.isDirectory()) walk(name);
      else files[name] = fs.readFileSync(path.join(dir, name), "base64");
    }
  };
  walk("");
  return {
    files,
    status: git(dir, "status", "--porcelain", "--untracked-files=all"),
    index: git(dir, "ls-files", "-s", "--debug"),
    head: git(dir, "rev-parse", "HEAD"),
    branch: git(dir, "symbolic-ref", "HEAD"),
    // the branches a task's commit adds (offshoot/<task id>) are the only new refs allowed
    refs: git(dir, "for-each-ref", "--format=%(refname) %(objectname)")
      .split("\n")
      .filter((l) => !l.startsWith("refs/heads/offshoot/")),
  };
}

type Json = Record<string, any>;

function withoutCacheControl<T>(value: T): T {
  return JSON.parse(JSON.stringify(value, (key, v) => (key === "cache_control" ? undefined : v)));
}

/** The child's first request begins with everything the parent sent (native-fork.e2e's comparison). */
function expectSharedPrefix(parent: RecordedRequest, child: RecordedRequest) {
  const split = (r: RecordedRequest) => {
    const messages = withoutCacheControl(JSON.parse(r.raw) as Json).messages as Json[];
    return {
      system: messages.filter((m) => m.role === "system"),
      blocks: messages.filter((m) => m.role !== "system"),
      tools: (JSON.parse(r.raw) as Json).tools,
    };
  };
  const p = split(parent);
  const c = split(child);
  expect(c.system).toEqual(p.system);
  expect(c.tools).toEqual(p.tools);
  expect(p.blocks.length).toBeGreaterThan(2);
  expect(c.blocks.length).toBeGreaterThan(p.blocks.length);
  expect(c.blocks.slice(0, p.blocks.length)).toEqual(p.blocks);
}

interface Child {
  tag: string;
  /** the background_task arguments (without description and prompt) */
  args: Record<string, unknown>;
  /** apply_patch instead of write + edit */
  patch?: boolean;
}

const CHILDREN: Child[] = [
  { tag: "native", args: { fork: true } },
  { tag: "text", args: { fork: true, agent: "general" } },
  { tag: "plain", args: { agent: "general" } },
  { tag: "gpt", args: { agent: "general", model: "mock/gpt-5-mock" }, patch: true },
];

/** Scripts one child: its file tools by the checkout's absolute paths, the refused `cd <checkout>`, the retry in its worktree. */
function scriptChild(env: Env, run: string, child: Child, checkout: string) {
  const cue = `ISO_${run}_${child.tag}`;
  const mine = (r: ChatRequest) => lastUserText(r).includes(cue);
  const done = (r: ChatRequest, tool: string) => toolResults(r, { sinceLastUser: true }).filter((t) => t.name === tool).length;
  const steps: { name: string; when: (r: ChatRequest) => boolean; reply: Reply | ((r: ChatRequest) => Reply) }[] = [
    child.patch
      ? {
          name: "patch",
          when: (r) => !isToolFollowUp(r),
          reply: {
            toolCalls: [
              {
                name: "apply_patch",
                arguments: {
                  patchText: [
                    "*** Begin Patch",
                    `*** Add File: ${checkout}/src/${child.tag}-patch.txt`,
                    `+${child.tag} patch`,
                    `*** Update File: ${checkout}/src/shared.ts`,
                    "@@",
                    "-export const shared = 1;",
                    `+export const shared = 1; // ${child.tag}`,
                    "*** End Patch",
                  ].join("\n"),
                },
              },
            ],
          },
        }
      : {
          name: "write",
          when: (r) => !isToolFollowUp(r),
          reply: { toolCalls: [{ name: "write", arguments: { filePath: `${checkout}/src/${child.tag}-write.txt`, content: `${child.tag} write\n` } }] },
        },
    ...(child.patch
      ? []
      : [
          {
            name: "edit",
            when: (r: ChatRequest) => done(r, "write") === 1 && done(r, "edit") === 0,
            reply: {
              toolCalls: [
                {
                  name: "edit",
                  arguments: {
                    filePath: `${checkout}/src/shared.ts`,
                    oldString: "export const shared = 1;",
                    newString: `export const shared = 1; // ${child.tag}`,
                  },
                },
              ],
            },
          },
        ]),
    {
      name: "bash-checkout",
      when: (r) => (done(r, "edit") === 1 || done(r, "apply_patch") === 1) && done(r, "bash") === 0,
      reply: {
        toolCalls: [
          {
            name: "bash",
            arguments: {
              command: `cd ${checkout} && git checkout -q -b evil-${child.tag} && printf '${child.tag} bash\\n' > src/${child.tag}-bash.txt`,
              description: cue,
            },
          },
        ],
      },
    },
    {
      name: "bash-retry",
      when: (r) => done(r, "bash") === 1,
      // the retry uses the directory the refusal named
      reply: (r) => {
        const refusal = toolResults(r, { sinceLastUser: true }).find((t) => t.name === "bash")?.content ?? "";
        const dir = /your working directory: (.+?)\)/.exec(refusal)?.[1] ?? "/nonexistent";
        return {
          toolCalls: [
            { name: "bash", arguments: { command: `cd '${dir}' && printf '${child.tag} bash\\n' > src/${child.tag}-bash.txt && pwd`, description: cue } },
          ],
        };
      },
    },
    // a branch of its own, made in its worktree (no path of the checkout named): the repository's branches are the parent's too
    {
      name: "git-branch",
      when: (r) => done(r, "bash") === 2,
      reply: { toolCalls: [{ name: "bash", arguments: { command: `git checkout -q -b evil2-${child.tag}`, description: cue } }] },
    },
    { name: "done", when: (r) => done(r, "bash") === 3, reply: { text: `${cue} done` } },
  ];
  for (const step of steps) env.model.script({ name: `${cue}-${step.name}`, match: (r) => mine(r) && step.when(r), reply: step.reply });
  return cue;
}

/** The whole scenario on one server; `run` names its cues. */
async function isolationRun(env: Env, run: string) {
  const { model, server } = env;
  const dir = server.directory;
  fs.appendFileSync(path.join(dir, "notes.txt"), "the parent's untracked notes\n");
  const before = checkoutState(dir);
  const cues = CHILDREN.map((c) => scriptChild(env, run, c, dir));
  const parentCue = `ISO_PARENT_${run}`;
  const mine = (r: ChatRequest) => lastUserText(r) === parentCue;
  model.script({
    name: `${parentCue}-read`,
    match: (r) => mine(r) && !isToolFollowUp(r),
    reply: { toolCalls: [{ name: "read", arguments: { filePath: path.join(dir, "src/shared.ts") } }] },
  });
  model.script({
    name: `${parentCue}-launch`,
    match: (r) => mine(r) && hasToolResult(r, "read", { sinceLastUser: true }) && !hasToolResult(r, "background_task", { sinceLastUser: true }),
    reply: {
      toolCalls: CHILDREN.map((c, i) => ({
        name: "background_task",
        arguments: {
          description: `Isolated ${run} ${c.tag}`,
          // the plain tasks get the checkout's absolute path in their prompt, as agents write them
          prompt: `${cues[i]}: edit ${path.join(dir, "src/shared.ts")} and add files under ${path.join(dir, "src")}`,
          isolation: "worktree",
          ...c.args,
        },
      })),
    },
  });
  model.script({
    name: `${parentCue}-launched`,
    match: (r) => mine(r) && hasToolResult(r, "background_task", { sinceLastUser: true }),
    reply: { text: "launched" },
  });
  model.script({ name: `${parentCue}-wake`, match: (r) => isWake(r) && lastUserText(r).includes(`Isolated ${run}`), reply: { text: "noted" } });

  const parent = await newSession(server.client, parentCue);
  await promptText(server.client, parent, parentCue);
  const outputs = toolOutputs(await getMessages(server.client, parent), "background_task");
  expect(outputs).toHaveLength(CHILDREN.length);
  // (a launch that failed says why here, not as a TypeError)
  const ids = outputs.map(taskIdIn);
  // the fork into a worktree is native now; the one with another agent stays a text fork
  expect(outputs[0]).toContain("Fork: native: shares your prompt cache.");
  expect(outputs[1]).toContain("Fork: context copy");
  await until(
    "every task's notice",
    async () => {
      const m = await getMessages(server.client, parent);
      return ids.every((id) => notifications(m, id).length >= 1) || undefined;
    },
    60_000,
  );

  // The parent's checkout is exactly as it was: files, status, index, HEAD, branch, refs.
  expect(checkoutState(dir)).toEqual(before);
  expect(git(dir, "branch", "--list", "evil-*")).toBe("");
  expect(git(dir, "branch", "--list", "evil2-*")).toBe("");

  for (const [i, child] of CHILDREN.entries()) {
    const wt = (await storedTask(server, ids[i]!)) as unknown as {
      worktree: { path: string; directory: string; branch: string; base: string; removed?: string };
    };
    expect(wt.worktree.removed).toBeUndefined();
    // every change is on the child's own branch
    const changed = git(dir, "diff", "--name-only", wt.worktree.base, wt.worktree.branch).split("\n").sort();
    expect(changed).toEqual([`src/${child.tag}-bash.txt`, `src/${child.tag}-${child.patch ? "patch" : "write"}.txt`, "src/shared.ts"].sort());
    expect(git(dir, "show", `${wt.worktree.branch}:src/shared.ts`)).toBe(`export const shared = 1; // ${child.tag}`);
    expect(git(dir, "show", `${wt.worktree.branch}:src/${child.tag}-bash.txt`)).toBe(`${child.tag} bash`);
    // the child's first request said where it works
    const first = await requestOf(model, `${cues[i]}-${child.patch ? "patch" : "write"}`);
    expect(lastUserText(first.body)).toContain(`your working directory is ${wt.worktree.directory}`);
    // `cd <checkout> && …` was refused with the worktree named; the retry ran in the worktree
    const retry = await requestOf(model, `${cues[i]}-done`);
    const [refused, ran, branched] = toolResults(retry.body, { sinceLastUser: true }).filter((t) => t.name === "bash");
    expect(refused!.content).toContain(`Refused: this command names ${fs.realpathSync(dir)}`);
    expect(refused!.content).toContain(wt.worktree.path);
    expect(ran!.content).toContain(wt.worktree.directory);
    // `git checkout -b` in its own worktree ran, in its sandbox: the branch is its private copy (the
    // parent's repository has no evil2-* branch, checked above), and its work still reached its own branch
    expect(branched!.content).toBe("(no output)");
  }

  // The native child's first request starts with the parent's request, byte for byte.
  const parentReq = await requestOf(model, `${parentCue}-launch`);
  const nativeFirst = await requestOf(model, `${cues[0]}-write`);
  expectSharedPrefix(parentReq, nativeFirst);
  expect(lastUserText(nativeFirst.body)).toContain("You are a forked copy of the agent above");
}

const models = { provider: { mock: { models: { "gpt-5-mock": GPT_MODEL } } } };

describe('worktree isolation, with "*": "allow"', () => {
  const env = useOpencode({ files: { "src/shared.ts": SHARED }, config: models });
  test("no child changes the parent's checkout; each change is on its own branch; the native child shares the parent's prefix", async () => {
    await isolationRun(env, "ALLOW");
  }, 120_000);
});

describe("worktree isolation, with OpenCode's default permissions", () => {
  // no permission key at all: OpenCode's defaults (external_directory asks, among others)
  const env = useOpencode({ files: { "src/shared.ts": SHARED }, config: { ...models, permission: undefined } });
  test("no child changes the parent's checkout and nothing asks; each change is on its own branch", async () => {
    await isolationRun(env, "DEFAULT");
  }, 120_000);
});

/**
 * Taking a worktree task's changes on the real server (background_take): a clean take lands in the
 * parent's working tree as uncommitted changes, merged with the parent's own uncommitted edit; a
 * second task that changed the same lines conflicts and the parent is left byte-identical (files,
 * index, HEAD, git status); and a SIGKILL of OpenCode in the middle of a take leaves the working tree
 * untouched once it starts again (the take's journal is rolled back), after which the take works.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { getMessages, isToolFollowUp, lastUserText, toolParts, type ScriptedModel } from "../harness/index.js";
import { launchAll, notifications, promptText, storedTask, until, useOpencode, type Env } from "./helpers.js";

const env = useOpencode({ files: { "src/shared.ts": "export const shared = 1;\n" } });

const git = (cwd: string, ...args: string[]) => execFileSync("git", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();

type Stored = { status: string; worktree?: { path: string; branch: string; removed?: string } };

/** Everything a user could see of the parent's checkout: every file's bytes (not .git), the raw index, HEAD, branch, status. */
function checkoutState(dir: string) {
  const files: Record<string, string> = {};
  for (const name of fs.readdirSync(dir, { recursive: true }) as string[]) {
    if (name === ".git" || name.startsWith(`.git${path.sep}`)) continue;
    const p = path.join(dir, name);
    const stat = fs.lstatSync(p);
    if (stat.isFile()) files[name] = fs.readFileSync(p, "utf8");
    else if (stat.isSymbolicLink()) files[name] = `-> ${fs.readlinkSync(p)}`;
  }
  // (status first: it refreshes the index's stat cache, so both reads see the index after a refresh)
  const status = git(dir, "status", "--porcelain", "--untracked-files=all");
  return {
    files,
    status,
    index: fs.readFileSync(path.join(dir, ".git/index")).toString("base64"),
    head: git(dir, "rev-parse", "HEAD"),
    branch: git(dir, "branch", "--show-current"),
  };
}

/** A child that runs one bash command, then answers. */
function scriptChild(model: ScriptedModel, cue: string, command: string) {
  model.script({
    name: `${cue}-bash`,
    match: (r) => lastUserText(r).includes(cue) && !isToolFollowUp(r),
    reply: { toolCalls: [{ name: "bash", arguments: { command, description: cue } }] },
  });
  model.script({ name: `${cue}-done`, match: (r) => lastUserText(r).includes(cue) && isToolFollowUp(r), reply: { text: `${cue} done` } });
}

/** The parent calls background_take once (on `cue`); resolves with the tool's output once its turn ended. */
async function take(e: Env, parent: string, cue: string, args: Record<string, unknown>): Promise<string> {
  e.model.script({
    name: `${cue}-take`,
    match: (r) => lastUserText(r) === cue && !isToolFollowUp(r),
    reply: { toolCalls: [{ name: "background_take", arguments: args }] },
  });
  e.model.script({ name: `${cue}-taken`, match: (r) => lastUserText(r) === cue && isToolFollowUp(r), reply: { text: "taken" } });
  await promptText(e.server.client, parent, cue);
  // (completed calls only: the call a kill cut stays "running" in the parent's messages)
  const done = toolParts(await getMessages(e.server.client, parent), "background_take").filter((p) => p.state?.status === "completed");
  return String((done.at(-1)?.state as { output?: unknown } | undefined)?.output);
}

async function endedTasks(parent: string, ids: string[], timeoutMs = 30_000) {
  await until(
    "the tasks' notices",
    async () => {
      const m = await getMessages(env.server.client, parent);
      return ids.every((id) => notifications(m, id).length >= 1) || undefined;
    },
    timeoutMs,
  );
}

describe("background_take", () => {
  test("a clean take merges into the parent's uncommitted work; a conflicting one changes nothing and names the file", async () => {
    const { model, server } = env;
    const dir = server.directory;
    fs.appendFileSync(path.join(dir, "src/shared.ts"), "// parent's edit\n");
    model.script({ name: "take-wake", match: (r) => lastUserText(r).includes("Background tasks you started have ended"), reply: { text: "ok" } });
    scriptChild(model, "TK_CHILD_A", "printf 'export const a = 1;\\n' >> src/shared.ts && mkdir -p lib && printf 'new\\n' > lib/new.ts");
    scriptChild(model, "TK_CHILD_B", "printf 'export const b = 2;\\n' >> src/shared.ts");
    const { parent, ids } = await launchAll(env, "TK_LAUNCH", [
      { description: "Taker A", prompt: "TK_CHILD_A", agent: "general", isolation: "worktree" },
      { description: "Taker B", prompt: "TK_CHILD_B", agent: "general", isolation: "worktree" },
    ] as never);
    await endedTasks(parent, ids);
    // the parent keeps working meanwhile: a staged change of its own
    fs.writeFileSync(path.join(dir, "mine.txt"), "mine\n");
    git(dir, "add", "mine.txt");
    const head = git(dir, "rev-parse", "HEAD");
    const wtA = ((await storedTask(server, ids[0]!)) as Stored).worktree!;
    // the take works from the branch alone: the run's directory was freed when it was committed
    expect(fs.existsSync(wtA.path)).toBe(false);

    const out = await take(env, parent, "TK_TAKE_A", { task_id: ids[0] });

    expect(out).toContain(
      `Took task ${ids[0]}: 2 files changed in your working tree, not staged or committed; its branch ${wtA.branch} was removed (its worktree directory had been freed).`,
    );
    expect(fs.readFileSync(path.join(dir, "src/shared.ts"), "utf8")).toBe("export const shared = 1;\n// parent's edit\nexport const a = 1;\n");
    expect(fs.readFileSync(path.join(dir, "lib/new.ts"), "utf8")).toBe("new\n");
    expect(git(dir, "rev-parse", "HEAD")).toBe(head);
    expect(git(dir, "diff", "--cached", "--name-only")).toBe("mine.txt"); // the index: only the parent's own staged file
    expect(git(dir, "branch", "--list", wtA.branch)).toBe("");
    expect(fs.existsSync(wtA.path)).toBe(false);
    expect(((await storedTask(server, ids[0]!)) as Stored).worktree!.removed).toBe("taken");

    // B appended at the same place: a conflict now; nothing in the checkout changes
    const before = checkoutState(dir);
    const conflict = await take(env, parent, "TK_TAKE_B", { task_id: ids[1] });
    expect(conflict).toContain(`Error: task ${ids[1]}'s changes conflict with your working tree in 1 file. Nothing in your checkout changed.`);
    expect(conflict).toContain("- src/shared.ts");
    expect(checkoutState(dir)).toEqual(before);
    expect(((await storedTask(server, ids[1]!)) as Stored).worktree!.removed).toBeUndefined();
  });

  test("SIGKILL in the middle of a take: after the restart the working tree is untouched, then the take works", async () => {
    const { model, server } = env;
    const dir = server.directory;
    // many files, so the kill lands while they are being written
    scriptChild(model, "TK_CHILD_MANY", 'mkdir -p many && for i in $(seq 1 4000); do echo "$i" > many/f$i.txt; done');
    const { parent, ids } = await launchAll(env, "TK_LAUNCH_MANY", [
      { description: "Many files", prompt: "TK_CHILD_MANY", agent: "general", isolation: "worktree" },
    ] as never);
    const id = ids[0]!;
    await endedTasks(parent, ids, 90_000); // (4,000 files written by a shell loop, then committed: a minute on a loaded machine)
    await until("its run committed", async () => ((await storedTask(server, id)) as { worktree?: { changes?: unknown } })?.worktree?.changes);
    const before = checkoutState(dir);
    const journal = path.join(dir, ".git", `offshoot-take-${id}.json`);

    // the take starts; the moment its journal is there (before its first file), OpenCode is killed
    model.script({
      name: "TK_TAKE_MANY-take",
      match: (r) => lastUserText(r) === "TK_TAKE_MANY" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "background_take", arguments: { task_id: id } }] },
    });
    const watcher = fs.watch(path.join(dir, ".git"));
    const journalSeen = new Promise<void>((resolve) => {
      watcher.on("change", () => fs.existsSync(journal) && resolve());
    });
    await server.client.session.promptAsync({ path: { id: parent }, body: { parts: [{ type: "text", text: "TK_TAKE_MANY" }] } });
    await journalSeen;
    watcher.close();
    // some files are written by now, not all: the kill is mid-take
    await until("a first file written", () => fs.existsSync(path.join(dir, "many")) || undefined, 10_000).catch(() => undefined);
    env.ev.close();
    let cutMidTake = false; // what the kill left: the journal (a take cut short) or none (every file written)
    await server.restart({ signal: "SIGKILL", afterKill: () => (cutMidTake = fs.existsSync(journal)) });
    await env.resubscribe();
    // The kill lands where the machine's speed puts it: almost always while the files are written (the
    // journal is there), on a slow machine sometimes after the last one. Either way the tree is whole:
    // untouched (rolled back at start-up) or fully applied (the journal was gone), never half.
    const manyOf = () => (fs.existsSync(path.join(dir, "many")) ? fs.readdirSync(path.join(dir, "many")).length : 0);
    await until("the take rolled back or finished", () => !fs.existsSync(journal) || undefined, 30_000);
    if (cutMidTake) {
      // start-up rolled the take back: untouched, journal gone, said in the log
      expect(checkoutState(dir)).toEqual(before);
      await until("the roll-back logged", () => env.server.logs().includes(`the take of task ${id} was cut short`) || undefined, 10_000);
    } else {
      expect(manyOf()).toBe(4000);
      // (the kill came after the take was saved too: it is done, and nothing is left to take)
      if (((await storedTask(server, id)) as { worktree?: { removed?: string } })?.worktree?.removed === "taken") return;
    }

    // and taking it again works: all of it, or (fully applied already) nothing more to write
    const out = await take(env, parent, "TK_TAKE_AGAIN", { task_id: id });
    expect(out).toContain(cutMidTake ? `Took task ${id}: 4000 files changed` : `Took task ${id}: your working tree has its changes already`);
    expect(manyOf()).toBe(4000);
  }, 180_000); // 4,000 files written, committed, taken, killed and rolled back, and two starts of the server: minutes on a loaded 2-core machine
});

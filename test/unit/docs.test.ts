// The docs quote what the plugin says; this test keeps them saying it. A quote in README.md or docs/
// is marked `<!-- reply: name -->` right before it (a fenced block, or an inline `code` span), and
// QUOTES below renders `name` from the code's own text (its *.txt.ts modules and formatters) on the
// sample tasks of this file: a reply whose code changes fails here until its doc changes too. In a
// quote `…` stands for any text (an id, a path, the part left out). Every plain fenced block (no
// language) must be marked, a reply or `<!-- shown: what -->` (a screen of the TUI, what a demo
// prints): no quote goes unchecked by accident. The README also stays a front door: at most 150
// lines, none over 160 characters.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../e2e/harness/opencode.js";
import { loadedLine } from "../../src/index.txt.js";
import { buildTaskNotification, buildWakePrompt } from "../../src/manager/parent/notices.txt.js";
import { TAKE, type TakeBranch } from "../../src/manager/requests/take.txt.js";
import type { BackgroundTask } from "../../src/task-record.js";
import { parseOptions, writableRisk } from "../../src/options.js";
import { MESSAGES, NO_ONE_CAN_ANSWER, QUESTION_MESSAGES } from "../../src/prompts.js";
import { REMOTE } from "../../src/manager/remote/remote.txt.js";
import { REPLIES as CANCEL } from "../../src/tools/background-cancel.txt.js";
import { formatTaskList } from "../../src/tools/background-list.js";
import { REPLIES as OUTPUT } from "../../src/tools/background-output.txt.js";
import { REPLIES as TASK } from "../../src/tools/background-task.txt.js";
import { activeTaskReport } from "../../src/tools/progress.js";
import { endedTaskResult, taskHeader } from "../../src/tools/result.js";
import { WORKTREE_TOASTS } from "../../src/tui/worktree-actions.txt.js";
import { DISCARD } from "../../src/worktree/discard.txt.js";
import { worktreeLines } from "../../src/worktree/describe.js";
import { gitTooOldForTake } from "../../src/worktree/git-version.txt.js";
import { NAMES_TEXT, notOurs } from "../../src/coexist/tool-names.txt.js";
import { REQUEST_REWRITERS } from "../../src/coexist/request-rewriters.js";
import { OWN_TOOL_NAMES, TOOL_KEYS, withToolNames } from "../../src/tool-names.js";
import { REPLIES as RESOLVE } from "../../src/tools/resolve.txt.js";
import { forkLine } from "../../src/native/describe.js";

// ─── the sample tasks the docs show ───

const NOW = 1_800_000_000_000;
const base = {
  parentSessionID: "ses_parent",
  callID: "call_1",
  ownerPid: 1,
  createdAt: NOW,
  notifiedRun: 1,
  reportedRun: 0,
  run: 1,
} as const;

/** docs/tools.md's text fork, ended. */
const planFix = {
  ...base,
  id: "bg_2pwd4veh",
  sessionID: "ses_dfe9ea493ffe9k4SSV9q3X8SbP",
  description: "Plan fix for clock skew TODO",
  agent: "general",
  model: { providerID: "mock", modelID: "mock-model" },
  isForked: true,
  fork: { kind: "text", keptMessages: 5, totalMessages: 6, chars: 2001, fromCompaction: false },
  receipt: { kind: "text", read: 0, input: 100, copy: 500 },
  status: "completed",
  startedAt: NOW,
  completedAt: NOW,
  toolCalls: 0,
  usage: { input: 100, output: 20, reasoning: 0, cacheRead: 0, cacheWrite: 0, cost: 0 },
} as unknown as BackgroundTask;

/** A task that has not ended, with what the docs show of it. */
const running = (fields: Partial<BackgroundTask>) => ({ ...base, isForked: false, status: "running", ...fields }) as unknown as BackgroundTask;

/** docs/tools.md's running task, 41 s in. */
const cleanBuild = running({
  id: "bg_k2m9x0qa",
  sessionID: "ses_k2m9",
  description: "Clean the build dir",
  agent: "explore",
  startedAt: NOW - 41_000,
  toolCalls: 3,
  lastTool: "bash",
  steers: 1,
  usage: { input: 5100, output: 240, reasoning: 0, cacheRead: 0, cacheWrite: 0, cost: 0 },
});

/** docs/questions-and-permissions.md's task whose child asks. */
const askA = running({
  id: "bg_p3seveji",
  sessionID: "ses_p3se",
  description: "Ask A",
  agent: "build",
  startedAt: NOW - 1_000,
  toolCalls: 1,
  lastTool: "question",
});
const DB_QUESTION = {
  id: "que_1",
  questions: [
    {
      question: "Which database should I use?",
      header: "Database",
      options: [
        { label: "PostgreSQL", description: "" },
        { label: "SQLite", description: "" },
      ],
    },
  ],
};

/** The worktree of docs/worktrees.md's result: its run committed, its directory freed. */
const worktree = {
  repo: "/repo",
  path: "/…/worktrees/<project>/bg_2pwd4veh",
  directory: "/…/worktrees/<project>/bg_2pwd4veh",
  branch: "offshoot/bg_2pwd4veh",
  base: "1a2b3c4d5e6f70818283",
  parentHead: "ffffffffffff",
  linked: [],
  containment: "bwrap",
  changes: { files: ["src/shared.ts"], fileCount: 1, insertions: 1, deletions: 0 },
  freedAt: NOW,
};
const freedBranch: TakeBranch = { branch: "offshoot/bg_2pwd4veh", base: "1a2b3c4d5e6f70818283", freed: true, path: "/…/bg_2pwd4veh" };
const keptBranch: TakeBranch = { ...freedBranch, freed: false };
const conflict = TAKE.conflict("bg_2pwd4veh", freedBranch, ["src/shared.ts"], []);

/** What a reply name renders to. */
const QUOTES: Record<string, () => string | Promise<string>> = {
  // docs/tools.md
  // docs/beside-other-plugins.md
  "names.stepAside": () =>
    NAMES_TEXT.stepAside(
      ["background_output", "background_cancel"],
      ["oh-my-opencode"],
      TOOL_KEYS.map((key) => OWN_TOOL_NAMES[key]),
    ),
  "names.notOurs": () =>
    withToolNames(
      `${RESOLVE.unknownTask("bg_0a1b2c3d", [])}\n${notOurs("bg_0a1b2c3d", ["oh-my-opencode"], ["background_output", "background_cancel"])}`,
      OWN_TOOL_NAMES,
    ),
  "names.notNative": () =>
    `Fork: ${forkLine({
      kind: "text",
      keptMessages: 3,
      totalMessages: 4,
      chars: 204,
      fromCompaction: false,
      notNative: `the plugin @tarquinen/opencode-dcp is loaded: ${REQUEST_REWRITERS.get("@tarquinen/opencode-dcp")}`,
    })}.`,
  "task.launched": () =>
    MESSAGES.launched({ ...planFix, fork: { ...planFix.fork!, kind: "text", notNative: "agent general is not yours (build)" } as typeof planFix.fork }),
  "task.launchedNative": () =>
    MESSAGES.launched({
      ...planFix,
      id: "bg_u4d1onhy",
      sessionID: "ses_dfab83c64ffevDllQI7oRWx0Vt",
      description: "Draft tryTake(n) for batches",
      agent: "build",
      status: "running",
      fork: { kind: "native", messages: 8, estimatedTokens: 16_000, rootSessionID: "ses_parent" },
    } as BackgroundTask),
  "task.forkWithResume": () => TASK.forkWithResume,
  "task.descriptionMissing": () => TASK.descriptionMissing,
  "task.unknownModel": () => MESSAGES.unknownModel("mock/wizard-9000", ["mock/mock-model", "mock/other-model"], 0),
  "task.badModelArg": () => MESSAGES.badModelArg("wizard"),
  "task.unknownAgent": () => MESSAGES.unknownAgent("wizard", ["build", "explore", "general", "plan"]),
  "task.steered": () => MESSAGES.steered(cleanBuild),
  "task.notice": () =>
    buildTaskNotification(
      planFix,
      "From the inherited context: the parent read src/rate-limiter.ts and grep found the TODO in refill().\nPlan: clamp `elapsed` with Math.max(0, ...) and keep `last` unchanged when the clock goes backwards.",
      NOW,
    ),
  "task.wake": () => buildWakePrompt([planFix], []),
  "task.budgetNotYours": () => TASK.budgetNotYours,
  "output.running": () => {
    const progress = {
      lastActivityAt: NOW - 4_000,
      lastTool: { tool: "bash", title: "List the build outputs", status: "completed" },
      toolCalls: 3,
      latestText: "The build dir holds two stale bundles; I check that nothing imports them.",
    };
    return activeTaskReport({ now: () => NOW, progressOf: async () => progress }, cleanBuild, OUTPUT.stillRunning);
  },
  "output.ended": () =>
    endedTaskResult(
      {
        now: () => NOW,
        answerOf: async () => "From the inherited context: the parent read src/rate-limiter.ts and grep found the TODO in refill().\n(the rest of its answer)",
        resultRead: async () => {},
        tasksOf: () => [],
      },
      { ...planFix, startedAt: NOW - 3_000 } as BackgroundTask,
    ),
  "output.waiting": () => `${taskHeader(askA, NOW)}\n${OUTPUT.waiting(askA, DB_QUESTION)}`,
  "cancel.cancelled": () => CANCEL.cancelled(planFix, "running"),
  "discard.freed": () => DISCARD.discarded("bg_2pwd4veh", freedBranch),
  "discard.kept": () => DISCARD.discarded("bg_2pwd4veh", keptBranch),
  "take.tookFreed": () => TAKE.took("bg_2pwd4veh", ["src/shared.ts", "src/new.ts (new, untracked)"], TAKE.afterRemoved(freedBranch)),
  "take.tookFreedOne": () => TAKE.took("bg_2pwd4veh", ["src/shared.ts"], TAKE.afterRemoved(freedBranch)),
  "take.afterRemovedKept": () => TAKE.afterRemoved(keptBranch),
  "take.conflictFreed": () => `Error: ${conflict}`,
  "take.noChanges": () => TAKE.noChanges("bg_2pwd4veh", "offshoot/bg_2pwd4veh"),
  "take.gitTooOld": () => `Error: ${TAKE.gitTooOld("bg_2pwd4veh", gitTooOldForTake("2.37.1", "2.38"))}`,
  "list.example": () => {
    const sonnet = { providerID: "anthropic", modelID: "claude-sonnet-4" };
    const planned = {
      ...planFix,
      model: sonnet,
      startedAt: NOW - 3_000,
      toolCalls: 2,
      usage: { input: 800, output: 100, reasoning: 0, cacheRead: 1_900, cacheWrite: 0, cost: 0 },
      receipt: { kind: "text", read: 1_900, input: 2_400, copy: 500 },
    } as BackgroundTask;
    const cleaning = { ...cleanBuild, steers: undefined, model: { providerID: "anthropic", modelID: "claude-haiku-4-5" } } as BackgroundTask;
    const picking = { ...askA, description: "Pick a database", model: sonnet } as BackgroundTask;
    const linting = running({
      id: "bg_7yq1c3vd",
      description: "Lint everything",
      agent: "general",
      model: sonnet,
      status: "queued",
      startedAt: NOW,
      toolCalls: 0,
      queuedBecause: "5 tasks on anthropic/claude-sonnet-4 are running (concurrency 5)",
    });
    return formatTaskList(
      [planned, cleaning, picking, linting],
      NOW,
      (t) => (t.id === cleaning.id ? "bash rm -rf build" : undefined),
      (t) => (t.id === picking.id ? DB_QUESTION : undefined),
    );
  },
  // docs/questions-and-permissions.md
  "questions.denied": () =>
    `User has answered your questions: "Which database should I use?"="${NO_ONE_CAN_ANSWER}". You can now continue with the user's answers in mind.`,
  "questions.notWaiting": () => QUESTION_MESSAGES.notWaiting({ ...planFix, id: "bg_…" } as BackgroundTask, undefined),
  // docs/worktrees.md
  "worktree.ended": () => worktreeLines("bg_2pwd4veh", worktree as never, "ended").join("\n"),
  // docs/tui.md
  "tui.notTaken": () => WORKTREE_TOASTS.notTaken("offshoot/bg_2pwd4veh", conflict),
  "tui.discardedFreed": () => WORKTREE_TOASTS.discarded("offshoot/bg_2pwd4veh", true),
  "tui.discardedKept": () => WORKTREE_TOASTS.discarded("offshoot/bg_2pwd4veh", false),
  // docs/remote.md
  "remote.noDirectory": () => REMOTE.noDirectory("box", "/srv/app"),
  "remote.refusedBranch": () =>
    REMOTE.refusedBranch("box", "git's checks refused the objects of its branch (error: object 079b74: hasDotgit: contains '.git')"),
  // README and docs/options.md
  "options.badOption": () => parseOptions({ concurrency: "five" }).warnings[0]!,
  "options.writableRelative": () => parseOptions({ sandboxWritable: ["cache"] }).warnings[0]!,
  "options.writableCheckout": () => parseOptions({ sandboxWritable: ["~/work"] }, { home: "/home/you", checkout: "/home/you/work/app" }).warnings[0]!,
  "options.writableRisk": () => writableRisk(["~/.npm"]),
  "options.loaded": () => loadedLine("<directory>", ["background_task", "background_output", "background_cancel", "background_list", "background_take"]),
};

// ─── reading the docs ───

const PAGES = ["README.md", ...fs.readdirSync(path.join(REPO_ROOT, "docs")).map((f) => `docs/${f}`)].filter((p) => p.endsWith(".md"));
const read = (page: string) => fs.readFileSync(path.join(REPO_ROOT, page), "utf8");

interface Quote {
  page: string;
  line: number;
  name: string;
  text: string;
  /** an inline `code` span (its line breaks are spaces), not a fenced block */
  inline: boolean;
}

const MARKER = "<!-- reply: ";

/** Every marked quote of a page: the fenced block or the inline code span right after its marker. */
function quotesOf(page: string): Quote[] {
  const text = read(page);
  const out: Quote[] = [];
  for (let at = text.indexOf(MARKER); at >= 0; at = text.indexOf(MARKER, at + 1)) {
    if (text[at - 1] === "`") continue; // (the marker itself, quoted in prose)
    const end = text.indexOf(" -->", at);
    const name = text.slice(at + MARKER.length, end);
    const line = text.slice(0, at).split("\n").length;
    const rest = text.slice(end + 4);
    const lead = rest.length - rest.trimStart().length;
    if (rest.trimStart().startsWith("```")) {
      // the block's lines up to its closing fence, less the opening fence's indentation (a block in a list item)
      const fence = end + 4 + lead;
      const lines = text.slice(fence).split("\n");
      const indent = fence - (text.lastIndexOf("\n", fence) + 1);
      const close = lines.findIndex((l, i) => i > 0 && l.trim() === "```");
      const body = lines.slice(1, close).map((l) => l.slice(Math.min(indent, l.length - l.trimStart().length)));
      out.push({ page, line, name, text: body.join("\n"), inline: false });
    } else {
      const open = text.indexOf("`", end);
      const close = text.indexOf("`", open + 1);
      out.push({ page, line, name, text: text.slice(open + 1, close), inline: true });
    }
  }
  return out;
}

/** Whether `text` is `quote` with each `…` of the quote standing for any text (leftmost pieces first: no regex). */
function matchesQuote(text: string, quote: string): boolean {
  const pieces = quote.split("…");
  if (pieces.length === 1) return text === quote;
  const first = pieces[0]!;
  const last = pieces[pieces.length - 1]!;
  if (!text.startsWith(first) || !text.endsWith(last) || first.length + last.length > text.length) return false;
  let at = first.length;
  for (const piece of pieces.slice(1, -1)) {
    const found = text.indexOf(piece, at);
    if (found < 0 || found + piece.length > text.length - last.length) return false;
    at = found + piece.length;
  }
  return true;
}

const oneSpaced = (s: string) => s.split(/\s+/).join(" ");

/** The plain fenced blocks (no language) of a page that no marker names, by line. */
function unmarkedBlocks(page: string): number[] {
  const lines = read(page).split("\n");
  const out: number[] = [];
  let open = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (!line.startsWith("```")) continue;
    if (open) {
      open = false;
      continue;
    }
    open = true;
    if (line !== "```") continue;
    const before = lines[i - 1]?.trim() ?? "";
    if (!before.startsWith(MARKER) && !before.startsWith("<!-- shown: ")) out.push(i + 1);
  }
  return out;
}

describe("what the docs quote is what the code says", () => {
  const quotes = PAGES.flatMap(quotesOf);

  it.each(quotes.map((q) => [`${q.page}:${q.line} ${q.name}`, q] as const))("%s", async (_, quote) => {
    const render = QUOTES[quote.name];
    expect(render, `no rendering for the reply "${quote.name}" in test/unit/docs.test.ts`).toBeDefined();
    const said = await render!();
    const [text, doc] = quote.inline ? [oneSpaced(said), oneSpaced(quote.text)] : [said, quote.text];
    expect(matchesQuote(text, doc), `the doc says:\n${doc}\n\nthe code says:\n${text}`).toBe(true);
  });

  it("every rendering is quoted somewhere (a reply the docs stopped quoting leaves its entry too)", () => {
    const used = new Set(quotes.map((q) => q.name));
    expect(Object.keys(QUOTES).filter((name) => !used.has(name))).toEqual([]);
  });

  it("every plain fenced block is marked: a reply checked here, or shown (a screen, a demo's output)", () => {
    expect(PAGES.flatMap((page) => unmarkedBlocks(page).map((line) => `${page}:${line}`))).toEqual([]);
  });

  it("the wildcard: … stands for any text, the rest is literal", () => {
    expect(matchesQuote("Took task bg_1: 2 files", "Took task …: 2 files")).toBe(true);
    expect(matchesQuote("Took task bg_1: 2 files", "Took task …: 3 files")).toBe(false);
    expect(matchesQuote("a … b", "a … b")).toBe(true);
    expect(matchesQuote("ab", "a…b…")).toBe(true);
    expect(matchesQuote("ab", "ab…b")).toBe(false);
  });
});

describe("the README is a front door", () => {
  const lines = read("README.md").replace(/\n$/, "").split("\n");

  it("at most 150 lines, none over 160 characters", () => {
    expect(lines.length).toBeLessThanOrEqual(150);
    expect(lines.map((l, i) => [i + 1, [...l].length] as const).filter(([, n]) => n > 160)).toEqual([]);
  });

  it("links the pages a newcomer needs, and the license", () => {
    for (const link of ["docs/options.md", "docs/development.md", "docs/measurements.md", "LICENSE"]) {
      expect(lines.join("\n")).toContain(`](${link})`);
      expect(fs.existsSync(path.join(REPO_ROOT, link))).toBe(true);
    }
  });
});

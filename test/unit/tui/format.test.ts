import { describe, expect, test } from "vitest";
import { TaskStore } from "../../../src/tui/model.js";
import {
  backgroundTotal,
  backgroundTotalText,
  badgeText,
  childBadgeText,
  combinedCostText,
  childLine,
  clip,
  narrowLine,
  sidebarLines,
  receiptDetail,
  receiptHint,
  receiptText,
  taskOptionDescription,
  taskOptionTitle,
} from "../../../src/tui/format.js";
import { formatElapsed } from "../../../src/format.js";
import { childInfo } from "./fake-api.js";

const NOW = 200_000;

function scenario() {
  const s = new TaskStore(() => NOW);
  s.upsertSession(childInfo("ses_fix", { description: "Fix the flaky tests", startedAt: NOW - 72_000 }));
  s.partUpdated({
    type: "tool",
    sessionID: "ses_fix",
    tool: "bash",
    state: { status: "running", input: { command: "npm test" }, time: { start: NOW - 1000 } },
  });
  s.messageUpdated({ id: "m1", sessionID: "ses_fix", role: "assistant", tokens: { input: 12_000, output: 300, reasoning: 0 }, cost: 0.0312 });
  s.upsertSession(childInfo("ses_lint", { description: "Lint", startedAt: NOW - 5_000 }));
  s.permissionAsked({ id: "per_1", sessionID: "ses_lint", permission: "bash", patterns: ["rm -rf build"] });
  s.upsertSession(childInfo("ses_done", { description: "Write docs", status: "completed", startedAt: NOW - 100_000, completedAt: NOW - 50_000 }));
  s.upsertSession(childInfo("ses_err", { description: "Migrate", status: "error", error: "model failed", startedAt: NOW - 30_000, completedAt: NOW - 20_000 }));
  return s;
}

describe("formatting", () => {
  test("elapsed times", () => {
    expect(formatElapsed(0)).toBe("0s");
    expect(formatElapsed(45_900)).toBe("45s");
    expect(formatElapsed(187_000)).toBe("3m07s");
    expect(formatElapsed(3_720_000)).toBe("1h02m");
    expect(formatElapsed(-5)).toBe("0s");
  });

  test("clip keeps short text and cuts long text with an ellipsis", () => {
    expect(clip("abc", 5)).toBe("abc");
    expect(clip("abcdef", 4)).toBe("abc…");
    expect(Array.from(clip("⧗⧗⧗⧗⧗⧗", 3))).toHaveLength(3);
  });
});

describe("sidebar section", () => {
  test("active tasks with status, elapsed time, last tool and usage; the waiting one first and marked; finished folded", () => {
    const lines = sidebarLines(scenario().tasksOf("ses_parent"), NOW, { expanded: false }).map((l) => l.text);
    expect(lines).toEqual([
      "all tasks: 12k tok · $0.03",
      "session $0.00 + tasks $0.03 = $0.03",
      "⚠ Lint",
      "  asks bash: rm -rf build",
      "  running 5s",
      "● Fix the flaky tests",
      "  running 1m12s · bash npm test",
      "  12k tok · $0.03",
      "▶ 2 finished",
    ]);
    for (const l of lines) expect(Array.from(l).length).toBeLessThanOrEqual(36);
  });

  test("the fold line opens to the finished tasks, newest end first", () => {
    const lines = sidebarLines(scenario().tasksOf("ses_parent"), NOW, { expanded: true });
    const texts = lines.map((l) => l.text);
    expect(texts.slice(texts.indexOf("▼ 2 finished"))).toEqual([
      "▼ 2 finished",
      "✗ Migrate",
      "  error after 10s: model failed",
      "✓ Write docs",
      "  completed after 50s",
    ]);
    expect(lines.find((l) => l.fold)?.text).toBe("▼ 2 finished");
  });

  test("nothing for a session without tasks (the server half absent shows nothing)", () => {
    expect(sidebarLines([], NOW, { expanded: true })).toEqual([]);
    expect(badgeText([])).toBe("");
    expect(narrowLine([], NOW, 100)).toBe("");
  });
});

describe("badge and narrow line", () => {
  test("counts running tasks and says when one waits", () => {
    const s = scenario();
    expect(badgeText(s.tasksOf("ses_parent"))).toBe("⧗ 2 bg tasks · ⚠ 1 waiting");
    s.permissionReplied({ sessionID: "ses_lint", requestID: "per_1" });
    s.upsertSession(childInfo("ses_lint", { description: "Lint", status: "cancelled" }));
    expect(badgeText(s.tasksOf("ses_parent"))).toBe("⧗ 1 bg task");
  });

  test("inside a child, the badge names the task's state", () => {
    const s = scenario();
    expect(childBadgeText(s.task("ses_fix")!, NOW)).toBe("bg task ● running 1m12s");
    expect(childBadgeText(s.task("ses_lint")!, NOW)).toBe("bg task ● running 5s · ⚠ permission");
  });

  test("the narrow line names the running tasks and fits the width", () => {
    const s = scenario();
    expect(narrowLine(s.tasksOf("ses_parent"), NOW, 200)).toBe(
      "⧗ 2 bg tasks · ⚠ 1 waiting: Lint (⚠ bash) · Fix the flaky tests (bash 1m12s) · all tasks: 12k tok · $0.03 · /tasks",
    );
    expect(Array.from(narrowLine(s.tasksOf("ses_parent"), NOW, 40))).toHaveLength(40);
    // too narrow for everything: the task names are cut, the total and the /tasks hint stay
    expect(narrowLine(s.tasksOf("ses_parent"), NOW, 70)).toBe("⧗ 2 bg tasks · ⚠ 1 waiting: Lin… · all tasks: 12k tok · $0.03 · /tasks");
  });

  test("the background total sums every task's usage, finished ones included; the combined line adds the session's own cost", () => {
    const s = scenario();
    s.messageUpdated({
      id: "m2",
      sessionID: "ses_done",
      role: "assistant",
      tokens: { input: 1_000_000, output: 500_000, reasoning: 0, cache: { read: 2_000_000, write: 0 } },
      cost: 5.97,
    });
    const tasks = s.tasksOf("ses_parent");
    // cache reads are kept apart: charged tokens as background_list counts them, then what was read from the cache
    expect(backgroundTotal(tasks)).toEqual({ tokens: 1_512_300, cacheRead: 2_000_000, cost: 6.0012 });
    const lines = sidebarLines(tasks, NOW, { expanded: false, ownCost: 0.4 }).map((l) => l.text);
    // too long for the sidebar's width: the cache reads go on a line of their own, nothing is cut
    expect(lines.slice(0, 3)).toEqual(["all tasks: 1.5M tok · $6.00", "  + 2.0M cached", "session $0.40 + tasks $6.00 = $6.40"]);
    expect(backgroundTotalText(tasks)).toBe("all tasks: 1.5M tok + 2.0M cached · $6.00");
    // nothing cost anything: no combined line; no usage at all: no total either
    expect(combinedCostText(0, [])).toBe("");
    expect(sidebarLines([s.task("ses_lint")!], NOW, { expanded: false, ownCost: 0 }).map((l) => l.text)[0]).toBe("⚠ Lint");
  });

  test("list entries", () => {
    const s = scenario();
    expect(taskOptionTitle(s.task("ses_lint")!)).toBe("⚠ Lint");
    expect(taskOptionDescription(s.task("ses_lint")!, NOW)).toBe("waits for bash: rm -rf build");
    expect(taskOptionDescription(s.task("ses_fix")!, NOW)).toBe("running 1m12s · bash npm test · 12k tok · $0.03");
    expect(taskOptionTitle(s.task("ses_done")!)).toBe("✓ Write docs");
    s.upsertSession(childInfo("ses_m", { description: "On another model", model: "mock/other-model#high", startedAt: NOW - 1_000 }));
    expect(taskOptionDescription(s.task("ses_m")!, NOW)).toBe("running 1s · mock/other-model#high");
    expect(sidebarLines([s.task("ses_m")!], NOW, { expanded: false }).map((l) => l.text)).toEqual([
      "● On another model",
      "  running 1s",
      "  mock/other-model#high",
    ]);
  });
});

describe("other statuses", () => {
  test("a queued task counts as running work and says it is queued; an unknown status shows as ended", () => {
    const s = new TaskStore(() => NOW);
    s.upsertSession(childInfo("ses_q", { description: "Waits for a slot", status: "queued", startedAt: NOW - 3_000 }));
    s.upsertSession(childInfo("ses_x", { description: "From the future", status: "hibernating", startedAt: NOW - 3_000, completedAt: NOW }));
    expect(badgeText(s.tasksOf("ses_parent"))).toBe("⧗ 1 bg task");
    expect(sidebarLines(s.tasksOf("ses_parent"), NOW, { expanded: true }).map((l) => l.text)).toEqual([
      "◷ Waits for a slot",
      "  queued 3s",
      "▼ 1 finished",
      "• From the future",
      "  hibernating after 3s",
    ]);
  });
});

describe("inside a child session", () => {
  test("the line names the task, what it does and the /tasks key", () => {
    const s = scenario();
    expect(childLine(s.task("ses_fix")!, NOW, "ctrl+x o", 200)).toBe('bg task "Fix the flaky tests" · running 1m12s · bash npm test · ctrl+x o tasks');
    expect(childLine(s.task("ses_lint")!, NOW, "ctrl+x o", 200)).toBe('bg task "Lint" · ⚠ waits for bash: rm -rf build · ctrl+x o tasks');
  });
});

describe("fork receipt and cache reads apart", () => {
  function forks() {
    const s = new TaskStore(() => NOW);
    s.upsertSession(
      childInfo("ses_native", { description: "Native", forked: true, startedAt: NOW - 5_000, receipt: { kind: "native", read: 15_500, input: 15_600 } }),
    );
    s.messageUpdated({
      id: "m1",
      sessionID: "ses_native",
      role: "assistant",
      tokens: { input: 100, output: 40, reasoning: 0, cache: { read: 15_500, write: 0 } },
      cost: 0,
    });
    s.upsertSession(
      childInfo("ses_miss", {
        description: "Missed",
        forked: true,
        startedAt: NOW - 5_000,
        receipt: { kind: "native", read: 0, input: 15_600, miss: "the model or variant changed: the child ran on mock/other-model" },
      }),
    );
    s.upsertSession(
      childInfo("ses_text", {
        description: "Text",
        forked: true,
        status: "completed",
        startedAt: NOW - 9_000,
        completedAt: NOW - 1_000,
        receipt: { kind: "text", read: 2_100, input: 5_300, copy: 3_000 },
      }),
    );
    s.upsertSession(childInfo("ses_new", { description: "Not yet", forked: true, startedAt: NOW - 1_000 }));
    s.upsertSession(childInfo("ses_plain", { description: "Plain", startedAt: NOW - 1_000, receipt: { kind: "bogus", read: "x" } }));
    return s;
  }

  test("each fork shows its first request's cache share; a flagged one is a warning with its likely cause; a plain task shows none", () => {
    const s = forks();
    expect(receiptText(s.task("ses_native")!)).toBe("fork cache 15.5k of 15.6k (99%)");
    expect(receiptDetail(s.task("ses_native")!)).toBe("native fork: its first request read your context from the cache");
    expect(receiptText(s.task("ses_miss")!)).toBe("⚠ fork cache 0 of 15.6k (0%)");
    expect(receiptDetail(s.task("ses_miss")!)).toBe("likely cause: the model or variant changed: the child ran on mock/other-model");
    expect(receiptDetail(s.task("ses_text")!)).toBe("text fork: only the system prompt and tools could be cached; the context copy (~3.0k tok) was new");
    expect(receiptText(s.task("ses_new")!)).toBe("fork cache: not measured yet");
    // the /tasks dialog cuts long descriptions: a few words there, the whole meaning in the toast
    expect(["ses_native", "ses_miss", "ses_text", "ses_new"].map((id) => receiptHint(s.task(id)!))).toEqual([
      "your context, cached",
      "⚠ pick: likely cause",
      "system+tools only",
      "measured after its first request",
    ]);
    expect(receiptText(s.task("ses_plain")!)).toBeUndefined();
    // the /tasks list: usage with cache reads apart, then the receipt
    expect(taskOptionDescription(s.task("ses_native")!, NOW)).toBe("running 5s · 140 tok + 16k cached · fork cache 15.5k of 15.6k (99%)");
    const lines = sidebarLines(s.tasksOf("ses_parent"), NOW, { expanded: true });
    expect(lines.map((l) => l.text)).toContain("  fork cache 15.5k of 15.6k (99%)");
    expect(lines.find((l) => l.text.includes("⚠ fork cache"))?.tone).toBe("warning");
    expect(lines.map((l) => l.text)).toContain("  fork cache 2.1k of 5.3k (40%)");
    expect(lines[0]!.text).toBe("all tasks: 140 tok + 16k cached");
  });
});

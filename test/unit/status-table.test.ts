/**
 * One table test: every status walked through every place that reads one, against the meaning
 * written out here (not read from src/task-state.ts). The TUI's sidebar, badge, bottom line and
 * /tasks (section and actions); the server's list totals and filter, cancel (one and `all: true`),
 * take, discard (the agent's), the edges (finish, continue, resume), retention and the wake. A new
 * status fails here until its row below says what it means.
 */
import { describe, expect, test } from "vitest";
import { TASK_STATUSES, type BackgroundTask, type TaskStatus, meaningOf } from "../../src/task-record.js";
import { TaskStore } from "../../src/tui/model.js";
import { createTasksDialog } from "../../src/tui/dialog.js";
import { Loader } from "../../src/tui/loader.js";
import { badgeText, narrowLine, sidebarLines } from "../../src/tui/format.js";
import { transition } from "../../src/manager/task/transitions.js";
import { isSettled } from "../../src/store/retention.js";
import { cancelTasks } from "../../src/manager/requests/cancel.js";
import { takeTask } from "../../src/manager/requests/take.js";
import { discardTask } from "../../src/worktree/discard.js";
import { formatTaskList } from "../../src/tools/background-list.js";
import { notEnded, stillWorking } from "../../src/manager/parent/step.js";
import type { TaskEntry } from "../../src/manager/task/registry.js";
import { childInfo, fakeApi } from "./tui/fake-api.js";

interface Meaning {
  /** TUI: above the sidebar's fold, counted by the badge and the bottom line */
  shown: boolean;
  /** TUI: marked ⚠ as waiting for a person (with no permission or question) */
  waiting: boolean;
  section: string;
  /** /tasks: the actions of an ended-or-not worktree task with changes */
  actions: string[];
  /** background_list({ status }) lists it under */
  listedAs: TaskStatus;
  cancel: boolean;
  take: "taken" | "refused";
  discard: "cancel first" | "refused" | "discarded";
  settled: boolean;
  /** the wake waits for it / the parent is still to hear of its end */
  wakeWaits: boolean;
  notEnded: boolean;
  edges: { finish: boolean; continue: boolean; resume: boolean };
  followUp: "steer" | "continue" | "new run";
}

const OPEN = ["Open child session", "Cancel task"];
const ENDED = ["Open child session", "Take changes", "Discard worktree and branch", "Show result"];
const ROWS: Record<TaskStatus, Meaning> = {
  queued: {
    shown: true,
    waiting: false,
    section: "Running",
    actions: OPEN,
    listedAs: "queued",
    cancel: true,
    take: "refused",
    discard: "cancel first",
    settled: false,
    wakeWaits: true,
    notEnded: true,
    edges: { finish: true, continue: false, resume: false },
    followUp: "steer",
  },
  running: {
    shown: true,
    waiting: false,
    section: "Running",
    actions: [...OPEN, "Send a message"],
    listedAs: "running",
    cancel: true,
    take: "refused",
    discard: "cancel first",
    settled: false,
    wakeWaits: true,
    notEnded: true,
    edges: { finish: true, continue: false, resume: false },
    followUp: "steer",
  },
  resumed: {
    shown: true,
    waiting: false,
    section: "Running",
    actions: [...OPEN, "Send a message"],
    listedAs: "running",
    cancel: true,
    take: "refused",
    discard: "cancel first",
    settled: false,
    wakeWaits: true,
    notEnded: true,
    edges: { finish: true, continue: false, resume: false },
    followUp: "steer",
  },
  paused: {
    shown: true,
    waiting: true,
    section: "Waiting for you",
    actions: [...OPEN, "Continue", "Raise the session's budget"],
    listedAs: "paused",
    cancel: true,
    take: "refused",
    discard: "refused",
    settled: false,
    wakeWaits: false,
    notEnded: true,
    edges: { finish: true, continue: true, resume: false },
    followUp: "continue",
  },
  completed: {
    shown: false,
    waiting: false,
    section: "Finished",
    actions: ENDED,
    listedAs: "completed",
    cancel: false,
    take: "taken",
    discard: "discarded",
    settled: true,
    wakeWaits: false,
    notEnded: false,
    edges: { finish: false, continue: false, resume: true },
    followUp: "new run",
  },
  error: {
    shown: false,
    waiting: false,
    section: "Finished",
    actions: ENDED,
    listedAs: "error",
    cancel: false,
    take: "taken",
    discard: "discarded",
    settled: true,
    wakeWaits: false,
    notEnded: false,
    edges: { finish: false, continue: false, resume: true },
    followUp: "new run",
  },
  cancelled: {
    shown: false,
    waiting: false,
    section: "Finished",
    actions: ENDED,
    listedAs: "cancelled",
    cancel: false,
    take: "taken",
    discard: "discarded",
    settled: true,
    wakeWaits: false,
    notEnded: false,
    edges: { finish: false, continue: false, resume: true },
    followUp: "new run",
  },
  interrupted: {
    shown: false,
    waiting: false,
    section: "Finished",
    actions: [...ENDED, "Continue"],
    listedAs: "interrupted",
    cancel: false,
    take: "taken",
    discard: "discarded",
    settled: true,
    wakeWaits: false,
    notEnded: false,
    edges: { finish: false, continue: true, resume: true },
    followUp: "new run",
  },
};

const NOW = 100_000;
const WORKTREE = { branch: "offshoot/bg_t", directory: "/nonexistent/wt", changes: "1 file +1 -0" };

function taskIn(status: TaskStatus): BackgroundTask {
  const open = meaningOf(status).open;
  return {
    id: "bg_table",
    sessionID: "",
    parentSessionID: "ses_parent",
    callID: "call_1",
    description: "table",
    agent: "general",
    isForked: false,
    ownerPid: 1,
    status,
    run: 1,
    notifiedRun: open ? 0 : 1,
    reportedRun: 0,
    createdAt: 10_000,
    startedAt: 20_000,
    toolCalls: 0,
    ...(open ? {} : { completedAt: 30_000 }),
    worktree: {
      repo: "/nonexistent/repo",
      path: "/nonexistent/wt",
      branch: "offshoot/bg_table",
      base: "0".repeat(40),
      changes: { summary: "1 file +1 -0", files: ["a.txt"] },
    },
  } as unknown as BackgroundTask;
}

function entryOf(task: BackgroundTask): TaskEntry {
  return { task, runtime: { wrappingUp: false } } as unknown as TaskEntry;
}

describe.each(TASK_STATUSES.map((s) => [s, ROWS[s]] as const))("%s", (status, row) => {
  test("the TUI: sidebar, badge, bottom line, /tasks", () => {
    const f = fakeApi();
    const store = new TaskStore(() => NOW);
    store.upsertSession(childInfo("ses_t", { description: "Table", status, startedAt: NOW - 5_000, worktree: WORKTREE }));
    const tasks = store.tasksOf("ses_parent");
    const lines = sidebarLines(tasks, NOW, { expanded: false }).map((l) => l.text);
    expect(lines.some((l) => l.endsWith(" Table"))).toBe(row.shown);
    expect(lines.includes("▶ 1 finished")).toBe(!row.shown);
    expect(badgeText(tasks)).toBe(row.shown ? `⧗ 1 bg task${row.waiting ? " · ⚠ 1 waiting" : ""}` : "");
    expect(narrowLine(tasks, NOW, 200) !== "").toBe(row.shown);
    f.route = { name: "session", params: { sessionID: "ses_parent" } };
    const dialog = createTasksDialog({ api: f.api, store, loader: new Loader(f.api, store), now: () => NOW });
    dialog.openList();
    expect(f.select().options.find((o) => o.value === "ses_t")?.category).toBe(row.section);
    dialog.openTask("ses_t");
    const actions = f
      .select()
      .options.filter((o) => !["worktree", "receipt", "back"].includes(o.value))
      .map((o) => o.title);
    expect(actions.sort()).toEqual([...row.actions].sort());
  });

  test("the server: list, cancel, take, discard, edges, retention, wake", async () => {
    const task = taskIn(status);
    expect(formatTaskList([task], NOW)).toContain(`1 task: 1 ${status}`);
    expect(meaningOf(status).listedAs).toBe(row.listedAs);
    expect(meaningOf(status).followUp).toBe(row.followUp);

    const calls: string[] = [];
    const host = {
      client: {} as never,
      holdRequests: <T>(_session: string, work: Promise<T>) => work,
      entryOf: (t: BackgroundTask) => entryOf(t),
      dispatch: async () => true,
      finish: async () => void calls.push("finished"),
    };
    const { cancelled } = await cancelTasks(host, [taskIn(status)]);
    expect(cancelled.length === 1).toBe(row.cancel);

    const took = await takeTask(host, taskIn(status));
    // an allowed take reaches git (here: a repository that does not exist)
    expect("error" in took && took.error.startsWith("could not take task") ? "taken" : "refused").toBe(row.take);

    const cancels: string[] = [];
    const discarded = await discardTask({ cancel: async () => (cancels.push("cancel"), ["not here"]), record: async () => {} }, taskIn(status));
    const discard = cancels.length ? "cancel first" : "error" in discarded && discarded.error.startsWith("removing the worktree") ? "discarded" : "refused";
    expect(discard).toBe(row.discard);

    const ending = { status: "cancelled" as const, error: "x", endedAt: NOW };
    expect("next" in transition(task, "finish", { ending }, NOW)).toBe(row.edges.finish);
    expect("next" in transition({ ...task, sessionID: "ses_c" }, "continue", { prompt: "go on" }, NOW)).toBe(row.edges.continue);
    expect("next" in transition(task, "resume", { callID: "c2", agent: "general" }, NOW)).toBe(row.edges.resume);

    expect(isSettled(task)).toBe(row.settled);
    expect(stillWorking(entryOf(task))).toBe(row.wakeWaits);
    expect(notEnded(entryOf(task))).toBe(row.notEnded);
  });
});

test("a status the TUI does not know (a newer server half) reads as ended", () => {
  expect(meaningOf("archived")).toMatchObject({ open: false, moving: false, section: "Finished", icon: "•" });
});

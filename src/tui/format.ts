/**
 * What a person reads: the text of the sidebar section, the prompt badge, the one-line summary
 * for narrow terminals and the /tasks list. Pure functions of tasks and the clock.
 */
import { isMoving, isOpen, meaningOf, permissionText, type TaskStatus } from "./meta.js";
import type { LastAction, Task, Usage } from "./model.js";
import { cacheShare, formatElapsed, formatTokens, formatTokensFine } from "../format.js";

export type Tone = "text" | "muted" | "success" | "warning" | "error" | "accent";

export interface Line {
  text: string;
  tone: Tone;
  /** Set on the "finished" fold line: clicking it toggles the fold. */
  fold?: boolean;
}

/** The icon of a status (`•` for one this TUI does not know). */
export function statusIcon(status: TaskStatus): string {
  return meaningOf(status).icon;
}

/**
 * `12k tok + 150k cached · $6.00`: tokens charged in full, then those read from the cache apart (the
 * server's "charged in full" and "read from cache"; token counts read as in ../format.ts).
 */
export function formatUsage(u: Usage | undefined): string | undefined {
  if (!u) return undefined;
  const tokens = `${formatTokens(u.tokens)} tok${u.cacheRead > 0 ? ` + ${formatTokens(u.cacheRead)} cached` : ""}`;
  return u.cost > 0 ? `${tokens} · $${u.cost.toFixed(2)}` : tokens;
}

/**
 * A forked task's receipt in the TUI's narrow lines: `fork cache 15.5k of 15.6k (99%)`, with `⚠`
 * before a flagged native fork; `fork cache: not measured yet` before its first request finished.
 * Undefined for a task that is not a fork.
 */
export function receiptText(t: Task): string | undefined {
  if (!t.meta.forked) return undefined;
  const r = t.meta.receipt;
  if (!r) return isOpen(t.meta.status) ? "fork cache: not measured yet" : "fork cache: not measured";
  return `${r.miss ? "⚠ " : ""}fork cache ${formatTokensFine(r.read)} of ${formatTokensFine(r.input)} (${cacheShare(r)}%)`;
}

/**
 * A receipt's few words for the /tasks dialog, which cuts long descriptions (its whole meaning,
 * receiptDetail, is the toast when picked): `your context, cached`, `⚠ pick: likely cause`,
 * `system+tools only` (a text fork), `nothing shared` (a text fork on another model).
 */
export function receiptHint(t: Task): string {
  const r = t.meta.receipt;
  if (!t.meta.forked || !r) return "measured after its first request";
  if (r.kind === "text") return r.miss ? "nothing shared" : "system+tools only";
  return r.differs ? "⚠ pick: what differed" : r.miss ? "⚠ pick: likely cause" : "your context, cached";
}

/** What a receipt means: the likely reason of a flagged native fork, what a text fork could share, or that a native fork hit. */
export function receiptDetail(t: Task): string | undefined {
  const r = t.meta.receipt;
  if (!t.meta.forked || !r) return undefined;
  if (r.kind === "text") {
    const shared = r.miss ? `nothing could be cached (${r.miss})` : "only the system prompt and tools could be cached";
    return `text fork: ${shared}; the context copy${r.copy ? ` (~${formatTokens(r.copy)} tok)` : ""} was new`;
  }
  if (r.differs) return `native fork, but ${r.differs}`;
  return r.miss ? `likely cause: ${r.miss}` : "native fork: its first request read your context from the cache";
}

/** Cut to `width` characters (by code point), with an ellipsis. */
export function clip(text: string, width: number): string {
  const chars = Array.from(text);
  if (chars.length <= width) return text;
  if (width <= 1) return chars.slice(0, Math.max(0, width)).join("");
  return chars.slice(0, width - 1).join("") + "…";
}

/** Elapsed time of a task: until now while active, until its end once finished. */
export function elapsedOf(t: Task, now: number): number {
  const start = t.meta.startedAt || t.seenAt;
  const end = isMoving(t.meta.status) ? now : (t.meta.completedAt ?? now);
  return end - start;
}

/** The permission the task's child waits for, as the server half names it too (task-state.ts): `bash: rm -rf build`. */
export function waitingPermission(t: Task): string | undefined {
  return t.permission ? permissionText(t.permission) : undefined;
}

/** The question the child waits to have answered: `"Which database?"` (`… (+1 more)` when it asked several). */
export function questionText(t: Task): string | undefined {
  const q = t.question;
  if (!q || q.questions.length === 0) return undefined;
  const more = q.questions.length - 1;
  return `"${q.questions[0]!.question}"${more > 0 ? ` (+${more} more)` : ""}`;
}

/** Whether the task waits for a person: a permission, an answer, or (paused by the budget) a raise or a continue. */
export function isWaiting(t: Task): boolean {
  return Boolean(t.permission || t.question || meaningOf(t.meta.status).waitsForPerson);
}

/** The reason a task waiting for a person stopped (the server half's, as published). */
function heldReason(t: Task): string {
  return t.meta.error ?? "the session's background budget is reached";
}

/**
 * What a waiting task wants, with its verb: `waits for bash: rm -rf build` / `asks "Which database?"` /
 * `waits for you: paused after its step: …` (raise the budget, continue or cancel it in /tasks).
 */
export function waitingText(t: Task): string | undefined {
  const permission = waitingPermission(t);
  if (permission) return `waits for ${permission}`;
  const question = questionText(t);
  if (question) return `asks ${question}`;
  return meaningOf(t.meta.status).waitsForPerson ? `waits for you: ${heldReason(t)}` : undefined;
}

/** `running 1m12s · bash npm test` / `completed in 2m03s` / `error: boom`. */
export function statusText(t: Task, now: number): string {
  const elapsed = formatElapsed(elapsedOf(t, now));
  const s = t.meta.status;
  if (isMoving(s)) {
    const tool = t.lastTool ? ` · ${t.lastTool.tool}${t.lastTool.detail ? ` ${t.lastTool.detail}` : ""}` : "";
    return `${s} ${elapsed}${tool}`;
  }
  if (meaningOf(s).end === "failure" && t.meta.error) return `error after ${elapsed}: ${t.meta.error}`;
  if (meaningOf(s).waitsForPerson) return `${s} after ${elapsed}: ${heldReason(t)}`;
  return `${s} after ${elapsed}`;
}

export const SIDEBAR_WIDTH = 36;

/** Tokens and cost of the session's tasks together (every run of each); undefined while none reported any. */
export function backgroundTotal(tasks: Task[]): Usage | undefined {
  let total: Usage | undefined;
  for (const t of tasks)
    if (t.usage)
      total = {
        tokens: (total?.tokens ?? 0) + t.usage.tokens,
        cacheRead: (total?.cacheRead ?? 0) + t.usage.cacheRead,
        cost: (total?.cost ?? 0) + t.usage.cost,
      };
  return total;
}

/** `all tasks: 1.5M tok · $6.00`, or "" while no task reported usage. */
export function backgroundTotalText(tasks: Task[]): string {
  const total = backgroundTotal(tasks);
  return total ? `all tasks: ${formatUsage(total)}` : "";
}

/**
 * The total in the sidebar: one line when it fits `width`, else the cache reads on a line of their own
 * (`all tasks: 1.5M tok · $6.00` / `  + 2.0M cached`), so neither count is cut off.
 */
export function backgroundTotalLines(tasks: Task[], width: number): string[] {
  const total = backgroundTotal(tasks);
  if (!total) return [];
  const whole = `all tasks: ${formatUsage(total)}`;
  if (Array.from(whole).length <= width || total.cacheRead <= 0) return [whole];
  return [`all tasks: ${formatUsage({ ...total, cacheRead: 0 })}`, `  + ${formatTokens(total.cacheRead)} cached`];
}

/**
 * The session's own cost plus its tasks' (OpenCode's own total leaves the child sessions out):
 * `session $0.40 + tasks $6.00 = $6.40`, or "" while neither cost anything.
 */
export function combinedCostText(ownCost: number, tasks: Task[]): string {
  const tasksCost = backgroundTotal(tasks)?.cost ?? 0;
  if (ownCost <= 0 && tasksCost <= 0) return "";
  return `session $${ownCost.toFixed(2)} + tasks $${tasksCost.toFixed(2)} = $${(ownCost + tasksCost).toFixed(2)}`;
}

/**
 * The sidebar section: a title line, each task whose run has not ended (2–3 lines; one that waits
 * for a person first, marked ⚠), then the finished ones behind a fold line. Empty when the session has no tasks (the section is then not drawn).
 */
export function sidebarLines(tasks: Task[], now: number, opts: { expanded: boolean; width?: number; ownCost?: number }): Line[] {
  if (tasks.length === 0) return [];
  const w = opts.width ?? SIDEBAR_WIDTH;
  const out: Line[] = [];
  // what the background work cost, and the session's whole spend (its own plus its tasks')
  for (const text of backgroundTotalLines(tasks, w)) out.push({ text: clip(text, w), tone: "text" });
  const combined = combinedCostText(opts.ownCost ?? 0, tasks);
  if (combined) out.push({ text: clip(combined, w), tone: "text" });
  const open = tasks.filter((t) => isOpen(t.meta.status));
  const finished = tasks.filter((t) => !isOpen(t.meta.status));
  for (const t of open) {
    const asks = waitingPermission(t) ?? questionText(t);
    const waiting = isWaiting(t);
    out.push({ text: clip(`${waiting ? "⚠" : statusIcon(t.meta.status)} ${t.meta.description}`, w), tone: waiting ? "warning" : "text" });
    if (asks) out.push({ text: clip(`  asks ${asks}`, w), tone: "warning" });
    else if (waiting) out.push({ text: clip(`  waits for you: see /tasks`, w), tone: "warning" });
    out.push({ text: clip(`  ${statusText(t, now)}`, w), tone: "muted" });
    // the model it runs on (as published by the server half), and what it used so far
    if (t.meta.model) out.push({ text: clip(`  ${t.meta.model}`, w), tone: "muted" });
    const branch = worktreeText(t);
    if (branch) out.push({ text: clip(`  ${branch}`, w), tone: "muted" });
    const usage = formatUsage(t.usage);
    if (usage) out.push({ text: clip(`  ${usage}`, w), tone: "muted" });
    pushReceipt(out, t, w);
  }
  if (finished.length > 0) {
    out.push({ text: `${opts.expanded ? "▼" : "▶"} ${finished.length} finished`, tone: "muted", fold: true });
    if (opts.expanded) {
      for (const t of finished) {
        out.push({ text: clip(`${statusIcon(t.meta.status)} ${t.meta.description}`, w), tone: meaningOf(t.meta.status).tone });
        const usage = formatUsage(t.usage);
        out.push({ text: clip(`  ${statusText(t, now)}${usage ? ` · ${usage}` : ""}`, w), tone: "muted" });
        const branch = worktreeText(t);
        if (branch) out.push({ text: clip(`  ${branch}`, w), tone: "muted" });
        pushReceipt(out, t, w);
      }
    }
  }
  return out;
}

/** A forked task's receipt line in the sidebar (a warning when flagged). */
function pushReceipt(out: Line[], t: Task, w: number): void {
  const receipt = receiptText(t);
  if (receipt) out.push({ text: clip(`  ${receipt}`, w), tone: t.meta.receipt?.miss ? "warning" : "muted" });
}

/**
 * Next to the prompt: `⧗ 2 bg tasks · ⚠ 1 waiting` ("" when none is open): the tasks whose run has
 * not ended (queued, running, paused), and how many of them wait for a person.
 */
export function badgeText(tasks: Task[]): string {
  const active = tasks.filter((t) => isOpen(t.meta.status));
  if (active.length === 0) return "";
  const waiting = active.filter(isWaiting).length;
  const base = `⧗ ${active.length} bg task${active.length === 1 ? "" : "s"}`;
  return waiting > 0 ? `${base} · ⚠ ${waiting} waiting` : base;
}

/** Inside a child session: which task this is (the badge there). */
export function childBadgeText(t: Task, now: number): string {
  const waiting = t.permission ? " · ⚠ permission" : t.question ? " · ⚠ question" : "";
  return `bg task ${statusIcon(t.meta.status)} ${t.meta.status} ${formatElapsed(elapsedOf(t, now))}${waiting}`;
}

/**
 * One line for terminals too narrow for the sidebar:
 * `⧗ 2 bg tasks: Fix tests (bash 1m12s) · Lint (⚠ bash) · all tasks: 12k tok · /tasks`.
 */
export function narrowLine(tasks: Task[], now: number, width: number): string {
  const active = tasks.filter((t) => isOpen(t.meta.status));
  if (active.length === 0) return "";
  const items = active.map((t) => {
    const what = t.permission
      ? `⚠ ${t.permission.permission}`
      : t.question
        ? "⚠ question"
        : meaningOf(t.meta.status).waitsForPerson
          ? `⚠ ${t.meta.status}`
          : `${t.lastTool ? `${t.lastTool.tool} ` : ""}${formatElapsed(elapsedOf(t, now))}`;
    return `${clip(t.meta.description, 24)} (${what})`;
  });
  // the total and the /tasks hint stay whole: the task names give way first
  const total = backgroundTotalText(tasks);
  const tail = `${total ? ` · ${total}` : ""} · /tasks`;
  const w = Math.max(10, width);
  const head = `${badgeText(tasks)}: ${items.join(" · ")}`;
  const room = w - Array.from(tail).length;
  return room >= 12 ? clip(head, room) + tail : clip(head + tail, w);
}

/**
 * Inside a task's child session (where the host shows neither the sidebar nor a prompt): which
 * task this is and how to get around. `keyText` is how the /tasks key is written (`ctrl+x o`).
 */
export function childLine(t: Task, now: number, keyText: string, width: number): string {
  const waiting = waitingText(t);
  const state = waiting ? `⚠ ${waiting}` : statusText(t, now);
  return clip(`bg task "${clip(t.meta.description, 40)}" · ${state} · ${keyText} tasks`, Math.max(10, width));
}

/** One option of the /tasks list. */
export function taskOptionTitle(t: Task): string {
  const icon = isWaiting(t) ? "⚠" : statusIcon(t.meta.status);
  return `${icon} ${t.meta.description}`;
}

/**
 * The list's line of a task: what it waits for, or its status. An action of /tasks on it that is
 * under way, was refused or was not confirmed comes first (the status alone would not say it).
 */
export function taskOptionDescription(t: Task, now: number): string {
  const waiting = waitingText(t);
  const usage = formatUsage(t.usage);
  const action = t.lastAction && t.lastAction.state !== "done" ? lastActionText(t.lastAction) : undefined;
  return [action, waiting ?? statusText(t, now), worktreeText(t), t.meta.model, usage, receiptText(t)].filter(Boolean).join(" · ");
}

const ACTION_ICONS: Record<LastAction["state"], string> = { pending: "…", done: "✓", refused: "✗", unconfirmed: "⚠" };

/** A /tasks action and its outcome, short: `✓ Budget raised` / `✗ NOT cancelled` / `… Cancelling`. */
export function lastActionTitle(a: LastAction): string {
  return `${ACTION_ICONS[a.state]} ${a.title}`;
}

/** The same with what the server answered or why it failed: `✗ NOT cancelled: task bg_x has already ended (completed)`. */
export function lastActionText(a: LastAction): string {
  return `${lastActionTitle(a)}${a.detail ? `: ${a.detail}` : ""}`;
}

/** A worktree task's branch: `⎇ offshoot/bg_… 1 file +1 -0 · sandboxed · directory freed · overlaps bg_x on a.ts` / `⎇ offshoot/bg_… (no changes, removed)` (`/tasks` puts the containment and the freed directory in the row's description). */
export function worktreeText(t: Task, withContainment = true): string | undefined {
  const w = t.meta.worktree;
  if (!w) return undefined;
  // (a task on a remote: where it runs, first)
  const on = t.meta.remote ? ` · on ${t.meta.remote}` : "";
  if (w.removed) return `⎇ ${w.branch}${on} (${w.removed === "no changes" ? "no changes" : w.removed}, removed)`;
  return `⎇ ${w.branch}${on}${w.changes ? ` ${w.changes}` : ""}${withContainment && w.containment ? ` · ${w.containment}` : ""}${withContainment && w.freed && !t.meta.remote ? " · directory freed" : ""}${w.overlaps ? ` · overlaps ${w.overlaps}` : ""}`;
}

/** The take's confirmation, first: the files of the branch that run on their own in the checkout, one a line. */
export function runsAloneWarning(runs: readonly string[]): string {
  return [
    `⚠ This branch changes ${runs.length === 1 ? "a file" : `${runs.length} files`} that run on their own in your checkout (OpenCode, git, your shell, editor or package manager runs ${runs.length === 1 ? "it" : "them"} without being asked). An agent cannot take it; you can, once you have read ${runs.length === 1 ? "it" : "them"}:`,
    ...runs.map((r) => `- ${r}`),
  ].join("\n");
}

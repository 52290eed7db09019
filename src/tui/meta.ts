/**
 * The contract with the server half: every background child session carries
 * `metadata.offshoot` (see docs/tui.md). This file reads it defensively: anything malformed
 * yields `undefined`, never a throw, so a TUI never breaks on a session it does not understand.
 */

import { parsePermission, parseQuestionAsked } from "../child-waits.js";
import {
  isMoving,
  isOpen,
  isWorking,
  meaningOf,
  permissionText,
  type PermissionWait,
  type ForkReceipt,
  type PublishedTaskState,
  type PublishedWorktree,
  type QuestionWait,
  type RequestAnswer,
  TASK_STATUSES,
  type TaskStatus as KnownTaskStatus,
} from "../task-state.js";

export { type KnownTaskStatus, parsePermission, permissionText, type PermissionWait, type QuestionWait, TASK_STATUSES };
/** A status this TUI does not know (a newer server half) is kept and shown as it is, as ended. */
export type TaskStatus = KnownTaskStatus | (string & {});

/** What the TUI reads: the published state, tolerant of a newer server half (unknown status, no ownerPid). */
export type OffshootMeta = Omit<PublishedTaskState, "status" | "ownerPid"> & { status: TaskStatus; ownerPid?: number };

const str = (v: unknown): string | undefined => (typeof v === "string" && v.length > 0 ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);

/** A question request (`question.asked` properties, or `metadata.offshoot.question`): the server half's own rule (../child-waits.ts). */
export const parseQuestion = parseQuestionAsked;

/** A worktree task's branch (`metadata.offshoot.worktree`). */
export function parseWorktree(v: unknown): PublishedWorktree | undefined {
  if (!v || typeof v !== "object") return undefined;
  const o = v as Record<string, unknown>;
  const branch = str(o.branch);
  const directory = str(o.directory);
  if (!branch || !directory) return undefined;
  return {
    branch,
    directory,
    changes: str(o.changes),
    removed: str(o.removed),
    overlaps: str(o.overlaps),
    containment: str(o.containment),
    ...(o.freed === true ? { freed: true } : {}),
    ...(Array.isArray(o.runs) ? { runs: o.runs.filter((r): r is string => typeof r === "string").slice(0, 20) } : {}),
  };
}

/** A fork receipt (`metadata.offshoot.receipt`): numbers that are not, or a kind this TUI does not know, yield undefined. */
export function parseReceipt(v: unknown): ForkReceipt | undefined {
  if (!v || typeof v !== "object") return undefined;
  const o = v as Record<string, unknown>;
  const read = num(o.read);
  const input = num(o.input);
  if ((o.kind !== "native" && o.kind !== "text") || read === undefined || input === undefined || read < 0 || input < 0) return undefined;
  const copy = num(o.copy);
  const miss = str(o.miss);
  const differs = str(o.differs);
  return {
    kind: o.kind,
    read,
    input,
    ...(copy !== undefined && copy > 0 ? { copy } : {}),
    ...(miss ? { miss: miss.slice(0, 1000) } : {}),
    ...(differs ? { differs: differs.slice(0, 1000) } : {}),
  };
}

/** The server half's answer to the last TUI request (`metadata.offshoot.answered`). */
export function parseAnswer(v: unknown): RequestAnswer | undefined {
  if (!v || typeof v !== "object") return undefined;
  const o = v as Record<string, unknown>;
  const id = str(o.id);
  return id ? { id, error: str(o.error), message: str(o.message) } : undefined;
}

/** `metadata.offshoot` of a session, or undefined when it is not one of our tasks. */
export function parseOffshootMeta(metadata: unknown): OffshootMeta | undefined {
  if (!metadata || typeof metadata !== "object") return undefined;
  const raw = (metadata as Record<string, unknown>).offshoot;
  if (!raw || typeof raw !== "object") return undefined;
  const o = raw as Record<string, unknown>;
  if (o.v !== 1) return undefined;
  const taskId = str(o.taskId);
  const parentSessionID = str(o.parentSessionID);
  const status = str(o.status);
  if (!taskId || !parentSessionID || !status) return undefined;
  return {
    v: 1,
    taskId,
    parentSessionID,
    description: str(o.description) ?? taskId,
    forked: o.forked === true,
    agent: str(o.agent) ?? "",
    model: str(o.model),
    status,
    startedAt: num(o.startedAt) ?? 0,
    completedAt: num(o.completedAt),
    error: str(o.error),
    permission: parsePermission(o.permission),
    question: parseQuestion(o.question),
    worktree: parseWorktree(o.worktree),
    receipt: parseReceipt(o.receipt),
    answered: parseAnswer(o.answered),
    ...(str(o.remote) ? { remote: str(o.remote)!.slice(0, 40) } : {}),
  };
}

export { isMoving, isOpen, isWorking, meaningOf };

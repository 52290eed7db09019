// Whether a process of this machine still runs, asked with kill(pid, 0) (no signal is sent). The one
// answer every caller reads: the store's lock, the sweep of dead writers' temp files, a take's journal
// and the task owners at start-up.

/**
 * - "alive": it runs (kill succeeded), or it runs as another user (EPERM: it exists, we may not signal it);
 * - "dead": no such process (ESRCH);
 * - "unknown": not a pid one process can have (not a positive 32-bit integer), or kill failed otherwise.
 */
export type ProcessState = "alive" | "dead" | "unknown";

export function processState(pid: number): ProcessState {
  if (!Number.isInteger(pid) || pid <= 0 || pid > 0x7fffffff) return "unknown";
  try {
    process.kill(pid, 0);
    return "alive";
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === "ESRCH" ? "dead" : code === "EPERM" ? "alive" : "unknown";
  }
}

/** processState is "alive": what is dead or unknown is not known to run. */
export function isProcessAlive(pid: number): boolean {
  return processState(pid) === "alive";
}

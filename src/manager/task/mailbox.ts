// One mailbox per task (its runtime holds it): the task's jobs, the work that reads or writes its
// child and waits on the server, run one at a time, in the order they were posted. The jobs: a
// completion check (completion.ts decides; check.ts reads), a message sent into the
// run (steer.ts), the creation of a queued task's child (launch/queued.ts) and a
// queued task's start (launch/queued.ts). So a check never judges a run from messages read
// while a steer is being stored, and a steer never overtakes the queued prompt it follows.
//
// A job never waits for a job of its own task (it would wait for itself): what a job changes of its
// task goes through task/runner.ts at once, not through the mailbox. Work that spans tasks has its own
// place: the queue's fill (queue.ts), the parent's notices and wake (notices.ts), the order in which
// queued tasks' children are created (launch/queued.ts), the task file's writes (save).

import { SerialQueue } from "../../serial-queue.js";

/** A task's serial queue (`post`, `idle`), plus jobs shared by key. */
export class Mailbox extends SerialQueue {
  /** jobs posted with a key and not done yet: the same key shares them */
  private readonly open = new Map<string, Promise<unknown>>();

  /** As `post`, but a job of the same `key` posted and not done yet is shared instead (one completion check at a time). */
  postOnce(key: string, job: () => Promise<void>): Promise<void> {
    const open = this.open.get(key) as Promise<void> | undefined;
    if (open) return open;
    const done = this.post(job).finally(() => this.open.delete(key));
    this.open.set(key, done);
    return done;
  }
}

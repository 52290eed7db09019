// Work that must not overlap, run one job at a time in the order posted: a task's mailbox
// (manager/mailbox.ts) is one queue; the takes of one repository (manager/take.ts) and the
// `git worktree add`s of one repository (worktree/worktree.ts) are one queue per repository.

export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();

  /** Runs `job` after every job posted before it; a failed job does not stop the next. */
  post<T>(job: () => Promise<T>): Promise<T> {
    const done = this.tail.then(job);
    this.tail = done.then(
      () => undefined,
      () => undefined,
    );
    return done;
  }

  /** Settles once every job posted so far is done (a new post makes a new one: whenIdle compares them). */
  get idle(): Promise<unknown> {
    return this.tail;
  }
}

/** One SerialQueue per key, dropped once its jobs are done (so the map holds only keys with work). */
export class KeyedSerialQueue {
  private readonly queues = new Map<string, SerialQueue>();

  /** Runs `job` after every job posted before it with the same `key`; other keys run alongside. */
  post<T>(key: string, job: () => Promise<T>): Promise<T> {
    let queue = this.queues.get(key);
    if (!queue) this.queues.set(key, (queue = new SerialQueue()));
    const done = queue.post(job);
    const idle = queue.idle;
    void idle.then(() => {
      if (this.queues.get(key) === queue && queue.idle === idle) this.queues.delete(key);
    });
    return done;
  }

  /** How many keys have work posted and not done (for tests: the map does not grow). */
  get size(): number {
    return this.queues.size;
  }
}

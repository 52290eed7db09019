import { describe, expect, it } from "vitest";
import { KeyedSerialQueue } from "../../src/serial-queue.js";

/** A job that records its start and end, and ends when `release` is called. */
function gated(log: string[], name: string) {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  return {
    job: async () => {
      log.push(`${name} start`);
      await gate;
      log.push(`${name} end`);
      return name;
    },
    release: () => release(),
  };
}

describe("KeyedSerialQueue", () => {
  it("runs the jobs of one key one after another, in order, and another key's alongside", async () => {
    const queue = new KeyedSerialQueue();
    const log: string[] = [];
    const [a1, a2, b1] = [gated(log, "a1"), gated(log, "a2"), gated(log, "b1")];
    const done = [queue.post("a", a1.job), queue.post("a", a2.job), queue.post("b", b1.job)];
    await new Promise((r) => setImmediate(r));
    expect(log).toEqual(["a1 start", "b1 start"]);
    a2.release(); // not started: it waits for a1
    b1.release();
    await done[2];
    expect(log).toEqual(["a1 start", "b1 start", "b1 end"]);
    a1.release();
    expect(await Promise.all(done)).toEqual(["a1", "a2", "b1"]);
    expect(log).toEqual(["a1 start", "b1 start", "b1 end", "a1 end", "a2 start", "a2 end"]);
  });

  it("runs the next job after a failed one, and forgets a key once its jobs are done", async () => {
    const queue = new KeyedSerialQueue();
    const failed = queue.post("repo", () => Promise.reject(new Error("boom")));
    const next = queue.post("repo", async () => "ran");
    await expect(failed).rejects.toThrow("boom");
    expect(await next).toBe("ran");
    await new Promise((r) => setImmediate(r));
    expect(queue.size).toBe(0);
  });
});

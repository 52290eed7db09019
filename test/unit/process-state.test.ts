import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { isProcessAlive, processState } from "../../src/process-state.js";

describe("processState", () => {
  it("says this process is alive", () => {
    expect(processState(process.pid)).toBe("alive");
    expect(isProcessAlive(process.pid)).toBe(true);
  });

  it("says a child that has exited (and been reaped) is dead", () => {
    const pid = spawnSync("true").pid!;
    expect(processState(pid)).toBe("dead");
    expect(isProcessAlive(pid)).toBe(false);
  });

  it("counts pid 1 as alive, whether or not we may signal it (EPERM means it exists)", () => {
    expect(processState(1)).toBe("alive");
  });

  it("answers unknown, never alive, for what no process can be: 0 (our group), negatives (a group), fractions, beyond 32 bits", () => {
    for (const pid of [0, -1, -process.pid, 1.5, Number.NaN, 2 ** 31, 2 ** 40]) {
      expect(processState(pid)).toBe("unknown");
      expect(isProcessAlive(pid)).toBe(false);
    }
  });
});

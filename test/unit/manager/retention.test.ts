// What a long-running server keeps of a task once it ended and its parent was told: its record, and
// none of the run's bookkeeping (issue 32: memory per task). bench/memory.ts measures it on the real
// server; this pins the rule.
import { describe, expect, it } from "vitest";
import { toolContext, useHarness } from "./setup.js";

const h = useHarness();

describe("an ended task, once its parent was told", () => {
  it("keeps its record and lets go of the run's answer copy, usage per message and judged messages; a resume starts fresh", async () => {
    const parent = h.fake.addParent();
    await h.tools.task.execute({ description: "x", prompt: "first", agent: "general" }, toolContext(parent));
    const task = h.manager.tasksOf(parent)[0]!;
    h.fake.answer(task.sessionID, { text: "a long answer ".repeat(500) });
    await h.fake.settle();
    expect(task.status).toBe("completed");
    h.fake.goIdle(parent); // the parent's turn ends: notice + wake
    await h.fake.settle();
    expect(task.notifiedRun).toBe(task.run);
    // the notice went out with the answer's first lines
    expect(h.fake.userTexts(parent).some((t) => t.includes("a long answer"))).toBe(true);

    const { runtime } = h.manager.registry.get(task.id)!;
    expect(runtime.answer).toBeUndefined();
    expect(runtime.usageByMessage.size).toBe(0);
    expect(runtime.guard.judged.size).toBe(0);
    // the record stays, usage included (read whole from the child when the run ended)
    expect(h.manager.get(task.id)?.usage?.output).toBeGreaterThan(0);
    // the full answer is still there for the parent: background_output reads it from the child
    const output = h.text(await h.tools.output.execute({ task_id: task.id }, toolContext(parent)));
    expect(output).toContain("a long answer");
  });
});

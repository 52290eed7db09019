// Under a one-shot `opencode run` (the process ends once its session is idle, aborting its children on
// the way out), against the fake server: a resume waits for the run it starts exactly as a launch does,
// and an abort nobody of ours asked for is the run ending (interrupted), not a cancel from outside.
// The real `opencode run`: test/e2e/scenarios/restart.e2e.test.ts.
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { INTERRUPTED_REASON } from "../../../src/manager/task/completion.js";
import { taskService } from "../../../src/manager/service.js";
import type { TaskManager } from "../../../src/manager/task-manager.js";
import { createBackgroundTaskTool } from "../../../src/tools/background-task.js";
import { DESCRIPTION, REPLIES } from "../../../src/tools/background-task.txt.js";
import { type Harness, createHarness, managerOn, toolContext } from "./setup.js";

let h: Harness;
let run: TaskManager;
afterEach(async () => {
  await run.dispose();
  await h.cleanup();
});

async function oneShotRun() {
  h = await createHarness();
  run = managerOn(h.fake, join(h.dir, "run-tasks.json"), { oneShotRun: true });
  await run.ready();
  return createBackgroundTaskTool(taskService(run));
}

/** A launch under the run (its call waits for the task), once its child exists. */
async function launched(tool: ReturnType<typeof createBackgroundTaskTool>, parent: string, description: string) {
  const launch = tool.execute({ description, prompt: `do ${description}`, agent: "general" }, toolContext(parent));
  const task = await vi.waitFor(() => {
    const made = run.tasksOf(parent)[0];
    if (!made?.sessionID) throw new Error("not launched yet");
    return made;
  });
  return { launch, task };
}

const textOf = (reply: unknown) => (typeof reply === "string" ? reply : (reply as { output: string }).output);

/** Whether the promise has settled once the fake server's events are handled. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => (done = true));
  await h.fake.settle();
  return done;
}

describe("under opencode run", () => {
  it("a resume waits for the run it starts, as the tool's text says: its answer is the call's reply, and the run is told once", async () => {
    expect(DESCRIPTION).toContain("the call waits for the task instead and returns its result; so does a resume that sets a task going");
    const tool = await oneShotRun();
    const parent = h.fake.addParent();
    const { launch, task } = await launched(tool, parent, "one shot");
    expect(await settled(launch)).toBe(false);
    h.fake.answer(task.sessionID, { text: "FIRST_ANSWER" });
    expect(textOf(await launch)).toContain(`${REPLIES.oneShotRunWaited}`);

    const resume = tool.execute({ resume: task.id, prompt: "second job" }, toolContext(parent));
    await vi.waitFor(() => expect(task.status).toBe("resumed"));
    // the run it started is still going: the call has not returned (the session stays busy, the run alive)
    expect(await settled(resume)).toBe(false);
    h.fake.answer(task.sessionID, { text: "SECOND_ANSWER" });
    const text = textOf(await resume);
    expect(text).toContain(REPLIES.oneShotRunWaited);
    expect(text).toContain("SECOND_ANSWER");
    expect(task).toMatchObject({ status: "completed", run: 2, notifiedRun: 2 });
  });

  it("a resume that starts nothing returns at once (an unknown task)", async () => {
    const tool = await oneShotRun();
    const parent = h.fake.addParent();
    expect(textOf(await tool.execute({ resume: "bg_00000000", prompt: "again" }, toolContext(parent)))).toMatch(/^Error: /);
  });

  it("a child aborted by the run's end is interrupted (resume it to continue), not cancelled from outside", async () => {
    const tool = await oneShotRun();
    const parent = h.fake.addParent();
    const { launch, task } = await launched(tool, parent, "cut off");
    // OpenCode aborting its sessions on the way out; the abort's events come before the plugin's dispose
    await h.fake.client.session.abort({ path: { id: task.sessionID } });
    await h.fake.settle();
    expect(task).toMatchObject({ status: "interrupted", error: INTERRUPTED_REASON });
    await launch;
  });
});

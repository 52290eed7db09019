import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ToolContext } from "@opencode-ai/plugin";
import type { Event } from "@opencode-ai/sdk/v2";
import { TaskManager } from "../../../src/manager/task-manager.js";
import { taskService } from "../../../src/manager/service.js";
import { DEFAULT_OPTIONS, type PluginOptions } from "../../../src/options.js";
import type { BackgroundTask } from "../../../src/manager/types.js";
import { createBackgroundCancelTool } from "../../../src/tools/background-cancel.js";
import { createBackgroundListTool } from "../../../src/tools/background-list.js";
import { createBackgroundOutputTool } from "../../../src/tools/background-output.js";
import { createBackgroundTaskTool } from "../../../src/tools/background-task.js";
import { FakeOpencode } from "./fake-opencode.js";

let callCounter = 0;

export function toolContext(sessionID: string, overrides: Partial<ToolContext> = {}): ToolContext & { metadataCalls: unknown[] } {
  const metadataCalls: unknown[] = [];
  return {
    sessionID,
    messageID: "msg_parent_turn",
    callID: `call_unit_${++callCounter}`,
    agent: "build",
    directory: "/home/dev/project",
    worktree: "/home/dev/project",
    abort: new AbortController().signal,
    metadata: (input: unknown) => void metadataCalls.push(input),
    ask: async () => {},
    extra: { model: { id: "mock-model", providerID: "mock" } },
    metadataCalls,
    ...overrides,
  } as ToolContext & { metadataCalls: unknown[] };
}

export type Harness = Awaited<ReturnType<typeof createHarness>>;

/** A manager wired to the fake server, with its tools, in a temp data directory. */
export async function createHarness(options: { dir?: string; now?: () => number; options?: Partial<PluginOptions> } = {}) {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), "offshoot-unit-"));
  const fake = new FakeOpencode();
  const storePath = join(dir, "tasks.json");
  const manager = new TaskManager({
    client: fake.client,
    storePath,
    reconcileIntervalMs: 60_000,
    now: options.now,
    options: { ...DEFAULT_OPTIONS, ...options.options },
  });
  fake.sink = (event: Event) => manager.handleEvent(event);
  await manager.ready();
  const tools = {
    task: createBackgroundTaskTool(taskService(manager)),
    output: createBackgroundOutputTool(taskService(manager)),
    cancel: createBackgroundCancelTool(taskService(manager)),
    list: createBackgroundListTool(taskService(manager)),
  };
  const text = (result: unknown) => (typeof result === "string" ? result : (result as { output: string }).output);
  /** Launches a task from `parent` the way an agent would, and returns it. */
  const launch = async (parent: string, description = "job", extra: Record<string, unknown> = {}) => {
    await tools.task.execute({ description, prompt: `do ${description}`, agent: "general", ...extra }, toolContext(parent));
    return manager.tasksOf(parent).find((t) => t.description === description)!;
  };
  return {
    launch,
    dir,
    fake,
    manager,
    storePath,
    tools,
    text,
    async cleanup() {
      await manager.dispose();
      if (!options.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A task record as a stopped process left it in the task file (running, of a dead process by default). */
export function savedTask(overrides: Partial<BackgroundTask> & { ownerPid: number }): BackgroundTask {
  return {
    id: "bg_saved001",
    sessionID: "ses_missing",
    parentSessionID: "ses_parent",
    callID: "call_1",
    description: "saved",
    agent: "general",
    isForked: false,
    status: "running",
    run: 1,
    notifiedRun: 0,
    reportedRun: 0,
    createdAt: 1,
    startedAt: 1,
    toolCalls: 0,
    ...overrides,
  };
}

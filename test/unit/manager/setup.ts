import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ToolContext } from "@opencode-ai/plugin";
import { afterEach, beforeEach } from "vitest";
import type { Event } from "@opencode-ai/sdk/v2";
import { type ManagerOptions, TaskManager } from "../../../src/manager/task-manager.js";
import { saveStore } from "../../legacy-task-file.js";
import type { TaskEntry, TaskRuntime } from "../../../src/manager/task/registry.js";
import { taskService } from "../../../src/manager/service.js";
import { DEFAULT_OPTIONS, type PluginOptions } from "../../../src/options.js";
import type { BackgroundTask, TaskFields } from "../../../src/task-record.js";
import { createBackgroundCancelTool } from "../../../src/tools/background-cancel.js";
import { createBackgroundListTool } from "../../../src/tools/background-list.js";
import { createBackgroundTakeTool } from "../../../src/tools/background-take.js";
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

export type ManagerSetup = Partial<Omit<ManagerOptions, "client" | "legacyTaskFile" | "options">> & { options?: Partial<PluginOptions> };

/** Connects the fake server to `manager`: its events reach the manager's hook, and `fake.settle()` waits until the manager is idle. */
export function wire(fake: FakeOpencode, manager: TaskManager): TaskManager {
  fake.sink = (event: Event) => manager.handleEvent(event);
  fake.idle = () => manager.whenIdle();
  return manager;
}

/** A manager on the fake server over the task file at `storePath`, wired to it (not started: `ready()` starts it). */
export function managerOn(fake: FakeOpencode, storePath: string, setup: ManagerSetup = {}): TaskManager {
  const { options, ...rest } = setup;
  return wire(
    fake,
    new TaskManager({ client: fake.client, legacyTaskFile: storePath, reconcileIntervalMs: 60_000, ...rest, options: { ...DEFAULT_OPTIONS, ...options } }),
  );
}

/**
 * OpenCode starting again on a task file (in a new temp directory) that holds `tasks`, as a stopped
 * process left it: the manager, wired to the fake server but not started, and its cleanup.
 */
export async function restartOn(fake: FakeOpencode, tasks: BackgroundTask[], setup: ManagerSetup = {}) {
  const dir = mkdtempSync(join(tmpdir(), "offshoot-restart-"));
  const storePath = join(dir, "tasks.json");
  await saveStore(storePath, tasks);
  const manager = managerOn(fake, storePath, setup);
  return {
    manager,
    dir,
    storePath,
    async cleanup() {
      await manager.dispose();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export type Harness = Awaited<ReturnType<typeof createHarness>>;

/** A manager wired to the fake server, with its tools, in a temp data directory. */
export async function createHarness(options: { dir?: string; now?: () => number; options?: Partial<PluginOptions> } = {}) {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), "offshoot-unit-"));
  const fake = new FakeOpencode();
  const storePath = join(dir, "tasks.json");
  const manager = managerOn(fake, storePath, { now: options.now, options: options.options });
  await manager.ready();
  const tools = {
    task: createBackgroundTaskTool(taskService(manager)),
    output: createBackgroundOutputTool(taskService(manager)),
    cancel: createBackgroundCancelTool(taskService(manager)),
    list: createBackgroundListTool(taskService(manager)),
    take: createBackgroundTakeTool(taskService(manager)),
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

/** One harness per test of the enclosing file or describe block: made before each test, cleaned up after it. */
export function useHarness(options: Parameters<typeof createHarness>[0] = {}): Harness {
  const current = {} as Harness;
  beforeEach(async () => void Object.assign(current, await createHarness(options)));
  afterEach(() => current.cleanup());
  return current;
}

/** The notices the plugin stored in the parent's conversation. */
export const noticesIn = (fake: FakeOpencode, parent: string): string[] => fake.userTexts(parent).filter((t) => t.startsWith("[background task"));

/** The prompts that woke the parent (a model turn). */
export const wakesOf = (fake: FakeOpencode, parent: string) => fake.callsOf("session.promptAsync").filter((c) => c.options.path.id === parent);

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

/**
 * A test arranging a state by hand (a record an older version saved, a worktree given to an ended
 * task, a record changed under a save): the record's own fields, writable. The plugin itself changes
 * a task only through its step, and its types say so.
 */
export const arrange = (task: BackgroundTask): TaskFields => task as TaskFields;

/** The same for a task's runtime (a wait the child is in, a call already counted). */
export const arrangeRuntime = (entry: TaskEntry): TaskRuntime => entry.runtime as TaskRuntime;

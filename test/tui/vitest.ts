/** Vitest glue for the TUI scenarios (kept apart so scripts can import the harness without vitest). */
import { afterAll, beforeAll, beforeEach } from "vitest";
import {
  events,
  printServerLogOnFailure,
  startOpencode,
  startScriptedModel,
  type EventCollector,
  type OpencodeServer,
  type ScriptedModel,
  type ScriptedModelOptions,
  type StartOptions,
} from "../e2e/harness/index.js";
import { openParent, stopScenario, type TuiSession } from "./harness.js";
import { tmuxAvailable } from "./tmux.js";

/** On a failed test, print the tail of the TUI's own log (plugin load errors land there). */
export function printTuiLogOnFailure(get: () => TuiSession | undefined, maxChars = 8_000): void {
  beforeEach((ctx) => {
    ctx.onTestFailed(() => {
      const log = get()?.log() ?? "";
      if (log) process.stderr.write(`\n----- TUI log (tail) -----\n${log.slice(-maxChars)}\n`);
    });
  });
}

/** What a TUI scenario runs against; its parts are there once the file's `beforeAll` has run. */
export interface TuiScenario {
  model: ScriptedModel;
  server: OpencodeServer;
  tui: TuiSession;
  /** The parent session the TUI shows. */
  parentID: string;
  /** The server's events, subscribed before the TUI opened (only with `events: true`). */
  ev: EventCollector;
}

export interface TuiScenarioOptions {
  /** The parent session's title: the TUI is open on it once it shows it. */
  title: string;
  /** `startOpencode`'s options but the model (plugins with their options, config, files). */
  opencode: Omit<StartOptions, "model">;
  /** The scripted model's options (e.g. a prefix cache). */
  model?: ScriptedModelOptions;
  /** `openParent`'s options (the TUI plugin's options in tui.json, the terminal's size). */
  tui?: NonNullable<Parameters<typeof openParent>[2]>;
  /** Subscribe to the server's events (`scenario.ev`) before the TUI opens. */
  events?: boolean;
  /**
   * The model's rules. Called once the server is up and before the TUI opens (nothing has asked the
   * model anything yet), so the rules may read `scenario.server` (its project directory).
   */
  script?: (model: ScriptedModel, scenario: TuiScenario) => void;
}

/**
 * Call at the top level of a TUI scenario file. In its `beforeAll` it checks for tmux, starts the
 * scripted model, the real server and the TUI on a new parent session; its `afterAll` stops them
 * (whatever of them did start). A failed test prints the server's and the TUI's logs. The returned
 * object is live: read its parts inside hooks and tests (before the `beforeAll` ran, reading one
 * throws).
 */
export function useTuiScenario(opts: TuiScenarioOptions): TuiScenario {
  const parts: Partial<TuiScenario> = {};
  const part = <K extends keyof TuiScenario>(key: K): TuiScenario[K] => {
    const value = parts[key];
    if (value === undefined) {
      throw new Error(key === "ev" && !opts.events ? "scenario.ev: pass events: true to useTuiScenario" : `scenario.${key} read before the scenario started`);
    }
    return value as TuiScenario[K];
  };
  const scenario: TuiScenario = {
    get model() {
      return part("model");
    },
    get server() {
      return part("server");
    },
    get tui() {
      return part("tui");
    },
    get parentID() {
      return part("parentID");
    },
    get ev() {
      return part("ev");
    },
  };

  printServerLogOnFailure(() => ({ server: parts.server, model: parts.model }));
  printTuiLogOnFailure(() => parts.tui);

  beforeAll(async () => {
    if (!tmuxAvailable()) throw new Error("tmux is required for the TUI scenarios (apt-get install tmux; .ci/run installs it)");
    parts.model = await startScriptedModel(opts.model);
    parts.server = await startOpencode({ ...opts.opencode, model: parts.model });
    opts.script?.(parts.model, scenario);
    if (opts.events) parts.ev = await events(parts.server.client);
    ({ parentID: parts.parentID, tui: parts.tui } = await openParent(parts.server, opts.title, opts.tui));
  }, 90_000);

  afterAll(() => stopScenario(parts));

  return scenario;
}

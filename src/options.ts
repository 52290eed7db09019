// The plugin's options, as given in opencode.json: `"plugin": [["opencode-offshoot", { ... }]]`.
// One typed object with exported defaults, parsed field by field: a bad field is logged and replaced
// by its default; a bad option never fails the plugin.

import { homedir } from "node:os";
import { isAbsolute, join, resolve, sep } from "node:path";
import { tool } from "./host/tool.js";
import { cacheRefusal, expandHome } from "./worktree/sandbox/prepare.js";
import { NATIVE_FORK_MAX_TOKENS } from "./native/decide.js";
import { MAX_TASK_TOKENS, SESSION_BUDGET_COST, SESSION_BUDGET_TOKENS } from "./constants.js";
import { hostPatternError } from "./worktree/sandbox/hosts.js";

const z = tool.schema;

export const DEFAULT_OPTIONS = {
  /** running tasks per provider/model at once; more wait in a FIFO queue (status `queued`) */
  concurrency: 5,
  /** a task still running after this many seconds is stopped (child aborted), status `error` */
  taskTimeoutSeconds: 1800,
  /** a child that makes more tool calls than this in one run is stopped */
  maxToolCalls: 1000,
  /** a child that repeats the same tool call (same input), or gets an empty answer from its model, this many times in a row is stopped */
  repeatLimit: 20,
  /** the largest inherited context (estimated tokens) a native fork takes; above it a fork is a text copy; 0 turns native forks off */
  nativeForkMaxTokens: NATIVE_FORK_MAX_TOKENS,
  /** a task whose child used more tokens charged in full (uncached input, output, reasoning, cache writes; every run) is stopped; 0 turns the cap off */
  maxTaskTokens: MAX_TASK_TOKENS,
  /** a task whose child cost more dollars than this (when the provider reports cost; every run) is stopped; 0 (the default) turns the cap off */
  maxTaskCost: 0,
  /** the budget of one parent session's background work, over all of its tasks, in tokens charged in full; at 100% no task starts and running ones pause; 0 turns it off */
  sessionBudgetTokens: SESSION_BUDGET_TOKENS,
  /** the same budget in dollars (when the provider reports cost); 0 turns it off */
  sessionBudgetCost: SESSION_BUDGET_COST,
  /** ended tasks whose parent was told are kept this many days, then leave the plugin's store (their child sessions stay) */
  historyDays: 30,
  /** at most this many ended tasks are kept per project (the oldest told-about ones leave first) */
  historyMax: 2000,
  /** the names the five tools are offered under: "auto" (the design's, `background_task`…, unless another plugin registers one of them: then `offshoot_task`…), "background" or "offshoot" (fixed) */
  toolNames: "auto" as "auto" | "background" | "offshoot",
  /** more tools whose result is the user's own words, kept whole in a text fork like a user message (next to `question` and `*ask_user_questions`) */
  userAnswerTools: [] as readonly string[],
  /** where no OS sandbox can run, a worktree task still starts, contained only by the text-level checks (weaker: a script it writes can reach your checkout); off: such a launch is refused with the reason and the fix */
  allowUnsandboxedWorktrees: false as boolean,
  /** directories of yours a sandboxed worktree child may write (`~/` is your home; those that do not exist are left out): none by default (tasks have caches of their own); what it writes there, your next build may run */
  sandboxWritable: [] as readonly string[],
  /** hosts a sandboxed worktree child's commands may reach, through the plugin's proxy (`registry.npmjs.org`, `*.example.com`, `host:8443`); none by default: no network */
  sandboxNetwork: [] as readonly string[],
  /** variables passed into a worktree child's sandbox although their names say they hold a secret (*KEY*, *SECRET*, *TOKEN*, *PASSWORD*…) */
  sandboxPassEnv: [] as readonly string[],
  /** a shell command run in every new worktree before its child's first step (in its sandbox), e.g. "npm ci --offline"; empty: none. A failure fails the launch with its output */
  worktreeSetup: "" as string,
  /** the set-up command is killed (with every process it started) after this many seconds, and the launch fails */
  worktreeSetupTimeoutSeconds: 300,
  /** other OpenCode servers (running this plugin) a worktree task can run on, by name: background_task's `remote` (docs/remote.md) */
  remotes: {} as Readonly<Record<string, RemoteOptions>>,
} as const;

/**
 * One remote (docs/remote.md): B's `opencode serve`, the name of the variable holding its password
 * (never the password itself), B's clone of the project, the git remote both clones share, and how
 * many tasks run there at once.
 */
export interface RemoteOptions {
  /** `https://…`, or `http://` to a loopback address only (an ssh tunnel) */
  readonly url: string;
  /** the environment variable that holds B's password (OPENCODE_SERVER_PASSWORD there); read at each use, never stored */
  readonly passwordEnv: string;
  /** OpenCode's server user on B (OPENCODE_SERVER_USERNAME there); default "opencode" */
  readonly username?: string;
  /** the absolute path of B's clone of this project, on B */
  readonly directory: string;
  /** the git remote both clones share, by its name (the same name in both: "origin" by default) */
  readonly gitRemote: string;
  /** tasks of this parent process running on B at once; a launch past it is refused */
  readonly concurrency: number;
  /** true: a task runs on B even when B reports no OS sandbox (text-level checks only), as allowUnsandboxedWorktrees does here */
  readonly allowUnsandboxed: boolean;
}

/** What a child's question (its `question` tool) meets: "ask" waits for a person, "deny" tells the child at once that nobody can answer. */
export type QuestionPolicy = "ask" | "deny";

/** `questions` unset: "deny" under `opencode run` (nobody sees a child's question there), else "ask". */
export type PluginOptions = {
  -readonly [K in Exclude<keyof typeof DEFAULT_OPTIONS, "remotes">]: (typeof DEFAULT_OPTIONS)[K] extends readonly string[]
    ? readonly string[]
    : (typeof DEFAULT_OPTIONS)[K] extends boolean
      ? boolean
      : (typeof DEFAULT_OPTIONS)[K] extends string
        ? string
        : number;
} & { questions?: QuestionPolicy; remotes: Readonly<Record<string, RemoteOptions>> };
/** An option with a default and one field (every one but `questions`, whose default depends on the run mode, and `remotes`, checked entry by entry). */
type DefaultedOption = Exclude<keyof typeof DEFAULT_OPTIONS, "remotes">;

const FIELDS = {
  concurrency: z.number().int().min(1).max(1000),
  taskTimeoutSeconds: z
    .number()
    .int()
    .min(1)
    .max(7 * 24 * 3600),
  maxToolCalls: z.number().int().min(1).max(1_000_000),
  repeatLimit: z.number().int().min(2).max(100_000),
  nativeForkMaxTokens: z.number().int().min(0).max(100_000_000),
  maxTaskTokens: z.number().int().min(0).max(1_000_000_000_000),
  maxTaskCost: z.number().min(0).max(1_000_000),
  sessionBudgetTokens: z.number().int().min(0).max(1_000_000_000_000),
  sessionBudgetCost: z.number().min(0).max(1_000_000),
  questions: z.enum(["ask", "deny"]),
  historyDays: z.number().int().min(1).max(36_500),
  historyMax: z.number().int().min(1).max(1_000_000),
  userAnswerTools: z.array(z.string().min(1).max(200)).max(100),
  toolNames: z.enum(["auto", "background", "offshoot"]),
  allowUnsandboxedWorktrees: z.boolean(),
  sandboxWritable: z.array(z.string().min(1).max(4096)).max(50),
  sandboxNetwork: z
    .array(
      z
        .string()
        .min(1)
        .max(300)
        .refine((pattern) => !hostPatternError(pattern)),
    )
    .max(100),
  sandboxPassEnv: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,199}$/)).max(100),
  worktreeSetup: z.string().max(4000),
  worktreeSetupTimeoutSeconds: z
    .number()
    .int()
    .min(1)
    .max(24 * 3600),
  remotes: z.record(z.string(), z.unknown()),
} satisfies Record<keyof PluginOptions, unknown>;

/** What each option must be, for the warning. */
const EXPECTED: Record<keyof PluginOptions, string> = {
  concurrency: "a whole number from 1 to 1000",
  taskTimeoutSeconds: "a whole number of seconds from 1 to 604800",
  maxToolCalls: "a whole number from 1 to 1000000",
  repeatLimit: "a whole number from 2 to 100000",
  nativeForkMaxTokens: "a whole number of tokens from 0 to 100000000",
  maxTaskTokens: "a whole number of tokens from 0 (no cap) to 1000000000000",
  maxTaskCost: "a number of dollars from 0 (no cap) to 1000000",
  sessionBudgetTokens: "a whole number of tokens from 0 (no budget) to 1000000000000",
  sessionBudgetCost: "a number of dollars from 0 (no budget) to 1000000",
  questions: 'either "ask" or "deny"',
  historyDays: "a whole number of days from 1 to 36500",
  historyMax: "a whole number of tasks from 1 to 1000000",
  userAnswerTools: 'a list of at most 100 tool names, like ["my_server_ask_user"]',
  toolNames: 'one of "auto", "background" or "offshoot"',
  allowUnsandboxedWorktrees: "true or false",
  sandboxWritable: 'a list of at most 50 absolute directories (or ~/…), like ["~/.npm"]',
  sandboxNetwork: 'a list of at most 100 host names, "*.name" for its subdomains, with ":port" where not 80 or 443, like ["registry.npmjs.org"]',
  sandboxPassEnv: 'a list of at most 100 variable names, like ["NPM_TOKEN"]',
  worktreeSetup: 'a shell command of at most 4000 characters, like "npm ci --offline"',
  worktreeSetupTimeoutSeconds: "a whole number of seconds from 1 to 86400",
  remotes: 'an object of named remotes, like { "box": { "url": "https://box.example:4096", "passwordEnv": "BOX_PASSWORD", "directory": "/srv/project" } }',
};

/** The one log line about the directories of yours a sandboxed child may write. */
export function writableRisk(dirs: readonly string[]): string {
  return `offshoot: option "sandboxWritable" lets every sandboxed worktree task write ${dirs.join(", ")}: what a task writes there is code your own next build or install may run (a package, a compiled object). Tasks have caches of their own without it.`;
}

/** Where the options apply, for the checks of `sandboxWritable`: the home directory, and the checkout of this instance (OpenCode's worktree). */
export interface OptionsContext {
  home?: string;
  checkout?: string;
}

/**
 * The entries of `sandboxWritable` a sandboxed child may write, and a warning for each one left out:
 * a relative one (it would mean nothing sure), and one that holds the home directory or holds or lies
 * inside the checkout or its `.git` (sandbox/prepare.ts cacheRefusal; the entries as written here,
 * their real paths again when a sandbox is made).
 */
function checkWritable(entries: readonly string[], context: OptionsContext): { kept: string[]; warnings: string[] } {
  const home = resolve(context.home || process.env.HOME || homedir());
  const checkout = context.checkout ? resolve(context.checkout) : undefined;
  const guarded = { home, checkout, gitDir: checkout && checkout !== sep ? join(checkout, ".git") : undefined };
  const kept: string[] = [];
  const warnings: string[] = [];
  for (const entry of entries) {
    const path = expandHome(entry, home);
    const why = isAbsolute(path)
      ? cacheRefusal(resolve(path), guarded)?.concat(", which a sandboxed child must not write")
      : "it is not an absolute path (write /abs/path or ~/path)";
    if (why) warnings.push(`offshoot: option "sandboxWritable": ${JSON.stringify(entry)} left out: ${why}.`);
    else kept.push(entry);
  }
  return { kept, warnings };
}

export function parseOptions(raw: unknown, context: OptionsContext = {}): { options: PluginOptions; warnings: string[] } {
  const { options, warnings } = parseFields(raw);
  const writable = checkWritable(options.sandboxWritable, context);
  // (said once, at start: a shared cache is a door back to the host, as the docs say)
  const risk = writable.kept.length ? [writableRisk(writable.kept)] : [];
  return { options: { ...options, sandboxWritable: writable.kept }, warnings: [...warnings, ...writable.warnings, ...risk] };
}

/** Each option given, checked against its field: a bad one is warned of and its default kept. */
function parseFields(raw: unknown): { options: PluginOptions; warnings: string[] } {
  const options: PluginOptions = { ...DEFAULT_OPTIONS };
  const warnings: string[] = [];
  if (raw === undefined || raw === null) return { options, warnings };
  if (typeof raw !== "object" || Array.isArray(raw)) {
    warnings.push(`offshoot: the plugin options must be an object like { "concurrency": 5 }; got ${describe(raw)}. Using the defaults.`);
    return { options, warnings };
  }
  for (const [key, value] of Object.entries(raw)) {
    if (!(key in FIELDS)) {
      warnings.push(`offshoot: unknown option "${key}" ignored. Known options: ${Object.keys(FIELDS).join(", ")}.`);
      continue;
    }
    if (key === "remotes") {
      const parsed = parseRemotes(value);
      options.remotes = parsed.remotes;
      warnings.push(...parsed.warnings);
      continue;
    }
    if (key === "questions") {
      const parsed = FIELDS.questions.safeParse(value);
      if (parsed.success) options.questions = parsed.data;
      else
        warnings.push(
          `offshoot: option "questions" must be ${EXPECTED.questions}; got ${describe(value)}. Using the default ("deny" under opencode run, else "ask").`,
        );
      continue;
    }
    const name = key as DefaultedOption;
    const parsed = FIELDS[name].safeParse(value);
    if (parsed.success) (options as Record<keyof PluginOptions, unknown>)[name] = parsed.data;
    else
      warnings.push(
        `offshoot: option "${name}" must be ${EXPECTED[name]}; got ${describe(value)}. Using the default, ${JSON.stringify(DEFAULT_OPTIONS[name])}.`,
      );
  }
  return { options, warnings };
}

function describe(value: unknown): string {
  if (typeof value === "string") return `the string ${JSON.stringify(value.slice(0, 40))}`;
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `${typeof value} ${String(value)}`;
}

/** A remote's name: what the task file, notices and replies hold of it. */
const REMOTE_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,199}$/;
const GIT_REMOTE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** Whether a host name (of a URL) is this machine's loopback: 127.0.0.0/8, ::1, localhost. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  return host === "localhost" || host === "::1" || /^127(\.\d{1,3}){3}$/.test(host);
}

/** Why a remote's URL is refused, or undefined: https, or http to a loopback address (an ssh tunnel); no credentials in it. */
export function remoteUrlError(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "it is not a URL";
  }
  if (parsed.username || parsed.password) return "it holds credentials (put the password in the variable passwordEnv names)";
  if (parsed.protocol === "https:") return undefined;
  if (parsed.protocol !== "http:") return `its scheme is ${parsed.protocol.replace(/:$/, "")}: only https (or http to a loopback address)`;
  if (!isLoopbackHost(parsed.hostname)) return "http is accepted only to a loopback address (an ssh tunnel): the password would cross the network in the clear";
  return undefined;
}

/** The option `remotes`, entry by entry: a bad entry is left out with a warning that names the field (never a password). */
function parseRemotes(raw: unknown): { remotes: Record<string, RemoteOptions>; warnings: string[] } {
  const remotes: Record<string, RemoteOptions> = {};
  const warnings: string[] = [];
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) {
    warnings.push(`offshoot: option "remotes" must be ${EXPECTED.remotes}; got ${describe(raw)}. No remote is used.`);
    return { remotes, warnings };
  }
  for (const [name, entry] of Object.entries(raw as Record<string, unknown>)) {
    const refuse = (why: string) => warnings.push(`offshoot: option "remotes": the remote ${JSON.stringify(name.slice(0, 40))} is left out: ${why}.`);
    if (!REMOTE_NAME.test(name)) {
      refuse("its name must be 1 to 40 letters, digits, - or _");
      continue;
    }
    if (!entry || typeof entry !== "object" || Array.isArray(entry)) {
      refuse("it must be an object with url, passwordEnv and directory");
      continue;
    }
    const o = entry as Record<string, unknown>;
    const known = ["url", "passwordEnv", "username", "directory", "gitRemote", "concurrency", "allowUnsandboxed"];
    const unknown = Object.keys(o).filter((k) => !known.includes(k));
    if (unknown.length) {
      refuse(`it has unknown fields (${unknown.map((k) => JSON.stringify(k.slice(0, 40))).join(", ")}); known: ${known.join(", ")}`);
      continue;
    }
    const urlWhy = typeof o.url === "string" ? remoteUrlError(o.url) : "it has no url";
    if (urlWhy) {
      refuse(`its url: ${urlWhy}`);
      continue;
    }
    if (typeof o.passwordEnv !== "string" || !ENV_NAME.test(o.passwordEnv)) {
      refuse('its passwordEnv must name an environment variable (the password itself never goes in the options), like "BOX_PASSWORD"');
      continue;
    }
    if (typeof o.directory !== "string" || !isAbsolute(o.directory) || o.directory.length > 4096) {
      refuse("its directory must be the absolute path of the project's clone on that server");
      continue;
    }
    if (o.username !== undefined && (typeof o.username !== "string" || !o.username || o.username.length > 200 || o.username.includes(":"))) {
      refuse("its username must be a word without ':'");
      continue;
    }
    if (o.gitRemote !== undefined && (typeof o.gitRemote !== "string" || !GIT_REMOTE_NAME.test(o.gitRemote))) {
      refuse('its gitRemote must be the name of a git remote, like "origin"');
      continue;
    }
    if (o.concurrency !== undefined && !(typeof o.concurrency === "number" && Number.isInteger(o.concurrency) && o.concurrency >= 1 && o.concurrency <= 1000)) {
      refuse("its concurrency must be a whole number from 1 to 1000");
      continue;
    }
    if (o.allowUnsandboxed !== undefined && typeof o.allowUnsandboxed !== "boolean") {
      refuse("its allowUnsandboxed must be true or false");
      continue;
    }
    remotes[name] = {
      url: o.url as string,
      passwordEnv: o.passwordEnv,
      ...(o.username !== undefined ? { username: o.username as string } : {}),
      directory: o.directory,
      gitRemote: (o.gitRemote as string | undefined) ?? "origin",
      concurrency: (o.concurrency as number | undefined) ?? 2,
      allowUnsandboxed: (o.allowUnsandboxed as boolean | undefined) ?? false,
    };
  }
  return { remotes, warnings };
}

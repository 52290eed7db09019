/**
 * opencode-offshoot TUI demo: watch a forked background task in the REAL OpenCode TUI.
 *
 *   npm run demo:tui        (= npm run build && tsx scripts/demo-tui.ts)
 *
 * Starts a scripted model and a real `opencode serve` (isolated temp HOME, offline) with the
 * server half (dist/index.js), then opens the OpenCode TUI in THIS terminal, attached to it,
 * with the TUI half (dist/tui.js) listed in the project's tui.json. The parent session asks for
 * a forked background audit; the child runs for about a minute (two slow shell commands and a
 * file read), then answers; the parent is notified and woken.
 *
 * While it runs: the sidebar's "Background tasks" section and the `⧗ 1 bg task` badge show it;
 * type /tasks (or ctrl+x o) to list it, open its child, cancel it or read its result; in the
 * child, ctrl+x o then "Back to the parent session". Quit the TUI with ctrl+c: everything stops.
 * OFFSHOOT_DIST / OFFSHOOT_TUI_DIST select other builds of the two halves.
 */
import { spawn } from "node:child_process";
import { DIST_PLUGIN, OPENCODE_BIN, startOpencode } from "../test/e2e/harness/opencode.js";
import { isToolFollowUp, lastUserText, startScriptedModel, toolResults } from "../test/e2e/harness/scripted-model.js";
import { DIST_TUI, tuiEnv, writeTuiConfig } from "../test/tui/harness.js";

const RATE_LIMITER = `// A token-bucket rate limiter.
export class RateLimiter {
  private tokens: number;
  private last = Date.now();
  constructor(private rate: number, private burst: number) {
    this.tokens = burst;
  }
  tryTake(): boolean {
    const now = Date.now();
    // TODO: clock going backwards makes elapsed negative
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.rate);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}
`;

const ASK = "Audit src/rate-limiter.ts in the background while we keep talking.";
const KEY = "DEMO-AUDIT";

async function main() {
  if (!process.stdin.isTTY || !process.stdout.isTTY) {
    console.error("demo:tui opens the OpenCode TUI in this terminal: run it in an interactive terminal.");
    process.exit(1);
  }
  // a simulated prefix cache, prompt tokens estimated from the prompt: the fork receipt reads as a provider would report it
  const model = await startScriptedModel({ promptTokens: "estimate", prefixCache: true });
  const file = "src/rate-limiter.ts";
  let server: Awaited<ReturnType<typeof startOpencode>> | undefined;
  try {
    server = await startOpencode({ plugins: [DIST_PLUGIN], model, files: { [file]: RATE_LIMITER } });
  } catch (error) {
    await model.close();
    throw error;
  }
  const path = `${server.directory}/${file}`;

  // The parent: reads the file, then forks a background audit and answers at once.
  model.script({
    name: "parent-read",
    match: (r) => lastUserText(r) === ASK && !isToolFollowUp(r),
    reply: { toolCalls: [{ name: "read", arguments: { filePath: path } }] },
  });
  model.script({
    name: "parent-launch",
    match: (r) => lastUserText(r) === ASK && isToolFollowUp(r) && !toolResults(r, { sinceLastUser: true }).some((t) => t.name === "background_task"),
    reply: {
      toolCalls: [
        {
          name: "background_task",
          arguments: {
            description: "Audit the rate limiter",
            agent: "general",
            fork: true,
            prompt: `${KEY}: audit ${file}: run the checks, read it again, report the clock-skew bug with a fix.`,
          },
        },
      ],
    },
  });
  model.script({
    name: "parent-after-launch",
    match: (r) => lastUserText(r) === ASK && toolResults(r, { sinceLastUser: true }).some((t) => t.name === "background_task"),
    reply: { text: "The audit runs in the background (see the sidebar, or /tasks). I will tell you when it is done.", chunkDelayMs: 30 },
  });
  // The child: two slow checks and a read, about a minute in all, then its answer.
  const steps = [
    { name: "bash", arguments: { command: "sleep 25 && echo 'checks: 12 passed'", description: "Run the rate limiter checks" } },
    { name: "read", arguments: { filePath: path } },
    { name: "bash", arguments: { command: "sleep 30 && echo 'skew probe: elapsed went negative'", description: "Probe clock skew" } },
  ];
  model.script({
    name: "child",
    match: (r) => lastUserText(r).includes(KEY),
    reply: (r) => {
      const done = toolResults(r, { sinceLastUser: true }).length;
      const step = steps[done];
      if (step) return { toolCalls: [step], delayMs: 800 };
      return {
        text: "Audit done. `tryTake` trusts Date.now(): when the clock goes backwards, elapsed is negative and tokens drain. Fix: clamp elapsed at 0 (Math.max(0, now - last)) and add a test with a fake clock.",
        chunkDelayMs: 40,
      };
    },
  });

  const parent = (await server.client.session.create({ body: { title: "Rate limiter work" } })).data!;
  writeTuiConfig(server.directory, DIST_TUI);
  await server.client.session.promptAsync({ path: { id: parent.id }, body: { parts: [{ type: "text", text: ASK }] } });

  const tui = spawn(OPENCODE_BIN, ["attach", server.url, "--dir", server.directory, "--session", parent.id], {
    cwd: server.directory,
    env: { ...tuiEnv(server), TERM: process.env.TERM ?? "xterm-256color" },
    stdio: "inherit",
  });
  const code = await new Promise<number>((resolve) => tui.once("exit", (c) => resolve(c ?? 0)));
  await server.stop();
  await model.close();
  process.exit(code);
}

main().catch((error) => {
  console.error(`demo:tui failed: ${(error as Error).stack ?? error}`);
  process.exit(1);
});

/**
 * Beside oh-my-opencode 4.19.4 (which registers its own background_output and background_cancel), the
 * real TUI says that this plugin's tools stepped aside to offshoot_*, naming the other plugin: /tasks
 * keeps it on its last line (the TUI half also shows it once as a toast, which the next toast can
 * replace: oh-my-opencode's MCP servers show theirs here). The TUI half reads what the instance offers,
 * here after the server half restarted it to offer the new names, before the TUI attached.
 */
import { describe, expect, test } from "vitest";
import { DIST_PLUGIN, installOtherPlugins } from "../e2e/harness/index.js";
import { useTuiScenario } from "./vitest.js";

const { omo } = await installOtherPlugins();

const scenario = useTuiScenario({ title: "Names beside oh-my-opencode", opencode: { plugins: [DIST_PLUGIN, omo], startTimeoutMs: 120_000 } });

describe("the TUI beside oh-my-opencode", () => {
  test("/tasks says the tools are offshoot_* here and why, naming oh-my-opencode", async () => {
    const { tui } = scenario;
    // (the TUI half reads the instance a second after it started: /tasks is opened again until it shows the line)
    let screen = "";
    for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
      tui.keys("C-x", "o");
      screen = await tui.waitFor((s) => s.includes("Filter tasks"), { what: "/tasks open" });
      if (screen.includes("Tools here: offshoot_*")) break;
      tui.keys("Escape");
      await tui.waitFor((s) => !s.includes("Filter tasks"), { what: "/tasks closed" });
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(screen).toMatch(/Tools here: offshoot_\* +beside oh-my-opencode/);
    // Enter on it: all of it
    tui.keys("Up");
    await tui.waitFor((s) => s.includes("Tools here"), { what: "the line" });
    tui.keys("Enter");
    const alert = await tui.waitFor((s) => s.includes("Tool names"), { what: "the whole of it" });
    const words = alert
      .split("\n")
      .map((line) => line.slice(60, 150).trim())
      .filter(Boolean)
      .join(" ");
    expect(words).toContain("another plugin (oh-my-opencode) registers background_output, background_cancel, and OpenCode offers only one tool of a name");
    expect(words).toContain("offshoot_task, offshoot_output, offshoot_cancel, offshoot_list, offshoot_take here");
  });
});

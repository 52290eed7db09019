import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { DEFAULT_TOOL_NAMES, OWN_TOOL_NAMES, otherToolName, withToolNames } from "../../../src/tool-names.js";
import { otherPlugins, pluginsAfter, takenNames } from "../../../src/coexist/plugins.js";
import { notOurs } from "../../../src/coexist/tool-names.txt.js";
import { requestRewriter } from "../../../src/coexist/request-rewriters.js";
import { decideFork } from "../../../src/native/decide.js";
import { namedTools } from "../../../src/tools/named.js";
import { tool } from "../../../src/host/tool.js";

describe("withToolNames: our texts name the tools as they are offered", () => {
  it("renames each of the five design names, whole words only", () => {
    const text =
      'Result: background_output({ task_id: "bg_1" }). Cancel with background_cancel; list: background_list. Take: background_take. Start: background_task.';
    expect(withToolNames(text, OWN_TOOL_NAMES)).toBe(
      'Result: offshoot_output({ task_id: "bg_1" }). Cancel with offshoot_cancel; list: offshoot_list. Take: offshoot_take. Start: offshoot_task.',
    );
  });

  it("leaves words that only contain a name, and other background_ words, as they are", () => {
    const text = "background_tasks my_background_task background_outputs background_job xbackground_list";
    expect(withToolNames(text, OWN_TOOL_NAMES)).toBe(text);
  });

  it("keeps another plugin's tool named as it is, without the braces, under any names", () => {
    const text = `read it with ${otherToolName("background_output")}, not with background_output`;
    expect(withToolNames(text, OWN_TOOL_NAMES)).toBe("read it with background_output, not with offshoot_output");
    expect(withToolNames(text, DEFAULT_TOOL_NAMES)).toBe("read it with background_output, not with background_output");
  });

  it("returns a text without any name unchanged, and the default names unchanged", () => {
    expect(withToolNames("nothing here", OWN_TOOL_NAMES)).toBe("nothing here");
    expect(withToolNames("background_task({ fork: true })", DEFAULT_TOOL_NAMES)).toBe("background_task({ fork: true })");
  });

  it("handles a name at the very start and end of the text and many names in a row", () => {
    const many = Array.from({ length: 10_000 }, () => "background_list").join(" ");
    const out = withToolNames(many, OWN_TOOL_NAMES);
    expect(out.split(" ").every((word) => word === "offshoot_list")).toBe(true);
  });
});

describe("takenNames: which design names another plugin registers", () => {
  const ours = Object.values(DEFAULT_TOOL_NAMES);
  it("a design name offered twice is taken (oh-my-opencode's background_output and background_cancel)", () => {
    const ids = ["bash", ...ours, "background_output", "background_cancel", "task"];
    expect(takenNames(ids, DEFAULT_TOOL_NAMES)).toEqual(["background_output", "background_cancel"]);
  });
  it("nothing is taken where each name is offered once", () => {
    expect(takenNames(["bash", ...ours], DEFAULT_TOOL_NAMES)).toEqual([]);
  });
  it("while ours are our own, any design name offered is another plugin's", () => {
    const ids = ["bash", ...Object.values(OWN_TOOL_NAMES), "background_output", "background_cancel"];
    expect(takenNames(ids, OWN_TOOL_NAMES)).toEqual(["background_output", "background_cancel"]);
    expect(takenNames(["bash", ...Object.values(OWN_TOOL_NAMES)], OWN_TOOL_NAMES)).toEqual([]);
  });
});

describe("otherPlugins: the plugins listed beside ours, by the names people know", () => {
  it("reads a file:// spec's package name, a name@version spec's name, and leaves ours out", () => {
    const root = mkdtempSync(join(tmpdir(), "offshoot-plugins-"));
    const omo = join(root, "node_modules", "oh-my-opencode");
    mkdirSync(join(omo, "dist"), { recursive: true });
    writeFileSync(join(omo, "package.json"), JSON.stringify({ name: "oh-my-opencode", version: "4.19.4" }));
    const mine = join(root, "offshoot");
    mkdirSync(join(mine, "dist"), { recursive: true });
    writeFileSync(join(mine, "package.json"), JSON.stringify({ name: "opencode-offshoot" }));
    const specs = [
      pathToFileURL(join(omo, "dist", "index.js")).href,
      pathToFileURL(join(mine, "dist", "index.js")).href,
      "@tarquinen/opencode-dcp@3.1.14",
      ["some-plugin@1.0.0", { option: true }],
    ];
    expect(otherPlugins(specs, "opencode-offshoot")).toEqual(["oh-my-opencode", "@tarquinen/opencode-dcp", "some-plugin"]);
    // the plugins whose hooks run after ours
    expect(pluginsAfter(specs, "opencode-offshoot")).toEqual(["@tarquinen/opencode-dcp", "some-plugin"]);
    expect(pluginsAfter(specs.slice(0, 1), "opencode-offshoot")).toEqual([]);
  });
});

describe("the reply about an id that is none of ours says whose it could be", () => {
  it("names the other plugin and its own tool, and ours as offered", () => {
    const text = withToolNames(notOurs("bg_1a2b3c4d", ["oh-my-opencode"], ["background_output", "background_cancel"]), OWN_TOOL_NAMES);
    expect(text).toContain("another plugin (oh-my-opencode)");
    expect(text).toContain("that plugin's own background_output or background_cancel");
    expect(text).toContain("not with this plugin's offshoot_output");
    expect(text).toContain("offshoot_list lists them");
  });
});

describe("a plugin that rewrites each request makes a fork a text fork, with the reason", () => {
  it("DCP beside ours: text fork naming it", () => {
    const rewriter = requestRewriter(["oh-my-opencode", "@tarquinen/opencode-dcp"]);
    expect(rewriter?.name).toBe("@tarquinen/opencode-dcp");
    const decision = decideFork({ callerAgent: "build", callerModel: { providerID: "p", modelID: "m" }, estimatedTokens: 100, haveMessages: true, rewriter });
    expect(decision).toEqual({ native: false, reason: expect.stringContaining("the plugin @tarquinen/opencode-dcp is loaded") });
  });
  it("no such plugin: native", () => {
    const decision = decideFork({
      callerAgent: "build",
      callerModel: { providerID: "p", modelID: "m" },
      estimatedTokens: 100,
      haveMessages: true,
      rewriter: requestRewriter(["oh-my-opencode"]),
    });
    expect(decision).toEqual({ native: true });
  });
});

describe("namedTools: the tools as handed to OpenCode", () => {
  const args = { task_id: tool.schema.string().describe("the id background_task returned") };
  const def = tool({ description: "Reads a task (see background_list).", args, execute: async () => 'done: background_take({ task_id: "x" })' });
  const defs = { task: def, output: def, cancel: def, list: def, take: def };

  it("keys, descriptions, argument descriptions and replies name the offered tools", async () => {
    const tools = namedTools(defs, OWN_TOOL_NAMES);
    expect(Object.keys(tools)).toEqual(Object.values(OWN_TOOL_NAMES));
    const output = tools.offshoot_output!;
    expect(output.description).toBe("Reads a task (see offshoot_list).");
    expect((output.args as typeof args).task_id.description).toBe("the id offshoot_task returned");
    expect(await output.execute({ task_id: "x" }, {} as never)).toBe('done: offshoot_take({ task_id: "x" })');
  });

  it("under the design's names everything is as written, the same schema objects", () => {
    const tools = namedTools(defs, DEFAULT_TOOL_NAMES);
    expect(tools.background_output!.description).toBe(def.description);
    expect((tools.background_output!.args as typeof args).task_id).toBe(args.task_id);
  });

  it("two instances get the same renamed schema objects (a native child's tools are its parent's)", () => {
    const a = namedTools(defs, OWN_TOOL_NAMES).offshoot_list!.args as typeof args;
    const b = namedTools(defs, OWN_TOOL_NAMES).offshoot_list!.args as typeof args;
    expect(a.task_id).toBe(b.task_id);
  });
});

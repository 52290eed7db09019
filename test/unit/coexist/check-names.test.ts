import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { type ToolNamesOption, besideUs, checkToolNames, startNames } from "../../../src/coexist/tool-names.js";
import { DEFAULT_TOOL_NAMES, OWN_TOOL_NAMES, setToolNames, toolNames } from "../../../src/tool-names.js";
import type { Client } from "../../../src/host/client.js";

const OURS = Object.values(DEFAULT_TOOL_NAMES);
const OMO = ["background_output", "background_cancel"];

/** The instance as the client shows it, per directory: its tool ids, its plugin list, its busy sessions; what the plugin did. */
function fakeClient(instances: Record<string, { ids: string[]; plugin: string[] }>, busy: Record<string, unknown> = {}) {
  const disposed: string[] = [];
  const logs: string[] = [];
  const client = {
    tool: { ids: async ({ query }: { query: { directory: string } }) => ({ data: instances[query.directory]!.ids }) },
    config: { get: async ({ query }: { query: { directory: string } }) => ({ data: { plugin: instances[query.directory]!.plugin } }) },
    session: { status: async () => ({ data: busy }) },
    instance: { dispose: async ({ query }: { query: { directory: string } }) => (disposed.push(query.directory), { data: true }) },
    app: { log: async ({ body }: { body: { message: string } }) => (logs.push(body.message), { data: true }) },
  } as unknown as Client;
  return { client, disposed, logs };
}

const store = () => fs.mkdtempSync(path.join(os.tmpdir(), "offshoot-names-"));
const input = (client: Client, directory: string, storeDir: string, option: ToolNamesOption = "auto", oneShotRun = false) => ({
  client,
  directory,
  storeDir,
  option,
  ourName: "opencode-offshoot",
  oneShotRun,
});

beforeEach(() => {
  delete (globalThis as Record<symbol, unknown>)[Symbol.for("opencode-offshoot.coexist")];
  setToolNames(DEFAULT_TOOL_NAMES);
});

describe("checkToolNames: which names the instance offers ours under", () => {
  it("beside a plugin with two of the design's names: all five step aside, the decision is kept, the instance restarts once", async () => {
    const f = fakeClient({ "/a": { ids: ["bash", ...OURS, ...OMO], plugin: ["oh-my-opencode@4.19.4", "opencode-offshoot"] } });
    const dir = store();
    expect(await checkToolNames(input(f.client, "/a", dir))).toBe(true);
    expect(toolNames()).toEqual(OWN_TOOL_NAMES);
    expect(f.disposed).toEqual(["/a"]);
    expect(JSON.parse(fs.readFileSync(path.join(dir, "tool-names.json"), "utf8"))).toEqual({
      v: 1,
      names: "offshoot",
      taken: OMO,
      plugins: ["oh-my-opencode"],
    });
    expect(f.logs.filter((l) => l.includes("step aside"))).toHaveLength(1);
    // the restarted instance offers ours: nothing more to do; the next start reads the decision
    f.client.tool.ids = (async () => ({ data: ["bash", ...Object.values(OWN_TOOL_NAMES), ...OMO] })) as never;
    expect(await checkToolNames(input(f.client, "/a", dir))).toBe(false);
    expect(f.disposed).toEqual(["/a"]);
    setToolNames(DEFAULT_TOOL_NAMES);
    expect(startNames("auto", dir)).toEqual(OWN_TOOL_NAMES);
  });

  it("nothing else has the names: the design's stay, nothing written, no restart", async () => {
    const f = fakeClient({ "/a": { ids: ["bash", ...OURS], plugin: ["opencode-offshoot"] } });
    const dir = store();
    expect(await checkToolNames(input(f.client, "/a", dir))).toBe(false);
    expect(toolNames()).toEqual(DEFAULT_TOOL_NAMES);
    expect(fs.existsSync(path.join(dir, "tool-names.json"))).toBe(false);
    expect(f.disposed).toEqual([]);
  });

  it("a session at work, or opencode run: decided for the next start, this instance keeps its names", async () => {
    for (const [busy, oneShot] of [
      [{ ses_1: { type: "busy" } }, false],
      [{}, true],
    ] as const) {
      delete (globalThis as Record<symbol, unknown>)[Symbol.for("opencode-offshoot.coexist")];
      const f = fakeClient({ "/a": { ids: [...OURS, ...OMO], plugin: ["oh-my-opencode"] } }, busy);
      const dir = store();
      expect(await checkToolNames(input(f.client, "/a", dir, "auto", oneShot))).toBe(false);
      expect(toolNames()).toEqual(DEFAULT_TOOL_NAMES);
      expect(f.disposed).toEqual([]);
      expect(f.logs.some((l) => l.includes("from OpenCode's next start"))).toBe(true);
      expect(startNames("auto", dir)).toEqual(OWN_TOOL_NAMES);
      setToolNames(DEFAULT_TOOL_NAMES);
    }
  });

  it("one set of names per process: a second project without the other plugin keeps ours aside (its texts name them so)", async () => {
    const f = fakeClient({
      "/a": { ids: [...Object.values(OWN_TOOL_NAMES), ...OMO], plugin: ["oh-my-opencode"] },
      "/b": { ids: [...Object.values(OWN_TOOL_NAMES)], plugin: [] },
    });
    setToolNames(OWN_TOOL_NAMES);
    expect(await checkToolNames(input(f.client, "/a", store()))).toBe(false);
    expect(await checkToolNames(input(f.client, "/b", store()))).toBe(false);
    expect(toolNames()).toEqual(OWN_TOOL_NAMES);
    expect(f.disposed).toEqual([]);
    expect(besideUs()).toEqual({ taken: OMO, plugins: ["oh-my-opencode"] });
  });

  it("the other plugin removed: the design's names come back at the next start", async () => {
    const dir = store();
    fs.writeFileSync(path.join(dir, "tool-names.json"), JSON.stringify({ v: 1, names: "offshoot", taken: OMO, plugins: ["oh-my-opencode"] }));
    expect(startNames("auto", dir)).toEqual(OWN_TOOL_NAMES);
    const f = fakeClient({ "/a": { ids: ["bash", ...Object.values(OWN_TOOL_NAMES)], plugin: ["opencode-offshoot"] } });
    expect(await checkToolNames(input(f.client, "/a", dir))).toBe(true);
    expect(toolNames()).toEqual(DEFAULT_TOOL_NAMES);
    expect(f.logs.some((l) => l.includes("are offered as background_task"))).toBe(true);
  });

  it('the option fixes the names: "background" warns that the other plugin shadows ours; "offshoot" stays', async () => {
    const f = fakeClient({ "/a": { ids: [...OURS, ...OMO], plugin: ["oh-my-opencode"] } });
    expect(startNames("background", store())).toEqual(DEFAULT_TOOL_NAMES);
    expect(await checkToolNames(input(f.client, "/a", store(), "background"))).toBe(false);
    expect(f.logs.some((l) => l.includes('"toolNames": "background" keeps this plugin\'s tools under those names'))).toBe(true);
    expect(startNames("offshoot", store())).toEqual(OWN_TOOL_NAMES);
    expect(f.disposed).toEqual([]);
  });
});

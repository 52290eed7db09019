import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { watchToolNames } from "../../../src/tui/names.js";
import type { ToolNamesNote } from "../../../src/tui/dialog.js";
import { fakeApi } from "./fake-api.js";

const OMO_IDS = ["bash", "offshoot_task", "offshoot_output", "offshoot_cancel", "offshoot_list", "offshoot_take", "background_output", "background_cancel"];

describe("the TUI half says once that the tools stepped aside", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("a second after its start: one toast and the /tasks line, naming the other plugin", async () => {
    const f = fakeApi();
    f.replies["tool.ids"] = OMO_IDS;
    f.replies["config.get"] = { plugin: ["oh-my-opencode@4.19.4", "opencode-offshoot"] };
    const notes: ToolNamesNote[] = [];
    watchToolNames(f.api, (note) => notes.push(note));
    expect(f.calls).toEqual([]);
    await vi.advanceTimersByTimeAsync(1000);
    await vi.advanceTimersByTimeAsync(10);
    expect(f.toasts).toEqual([
      expect.objectContaining({
        message:
          "another plugin (oh-my-opencode) registers background_output, background_cancel: background tasks are offshoot_task, offshoot_output, offshoot_cancel, offshoot_list, offshoot_take now.",
      }),
    ]);
    expect(notes).toEqual([expect.objectContaining({ title: "Tools here: offshoot_*", why: "beside oh-my-opencode" })]);
    // an instance's restart later: read again, said no more
    f.emit("server.instance.disposed", {});
    await vi.advanceTimersByTimeAsync(1000);
    await vi.advanceTimersByTimeAsync(10);
    expect(f.toasts).toHaveLength(1);
    expect(notes).toHaveLength(1);
  });

  it("under the design's names: nothing; after the restart that renames them: said", async () => {
    const f = fakeApi();
    f.replies["tool.ids"] = ["bash", "background_task", "background_output", "background_cancel", "background_list", "background_take", "background_output"];
    const notes: ToolNamesNote[] = [];
    watchToolNames(f.api, (note) => notes.push(note));
    await vi.advanceTimersByTimeAsync(1000);
    await vi.advanceTimersByTimeAsync(10);
    expect(f.toasts).toEqual([]);
    f.replies["tool.ids"] = OMO_IDS;
    f.emit("server.instance.disposed", {});
    await vi.advanceTimersByTimeAsync(1000);
    await vi.advanceTimersByTimeAsync(10);
    expect(f.toasts).toHaveLength(1);
    expect(notes[0]!.why).toBe("beside another plugin");
  });
});

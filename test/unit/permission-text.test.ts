// The permission a child waits for reads the same in the list, the watchdog's reason and the TUI.
import { describe, expect, test } from "vitest";
import { permissionText } from "../../src/task-state.js";
import { waitingPermission } from "../../src/tui/format.js";
import type { Task } from "../../src/tui/model.js";

describe("a permission a child waits for, one text in both halves", () => {
  test("its patterns after the permission, the catch-all * left out", () => {
    expect(permissionText({ permission: "bash", patterns: ["rm -rf build", "*"] })).toBe("bash: rm -rf build");
    expect(permissionText({ permission: "edit", patterns: ["src/a.ts", "src/b.ts"] })).toBe("edit: src/a.ts, src/b.ts");
    expect(permissionText({ permission: "webfetch", patterns: ["*"] })).toBe("webfetch");
  });
  test("the TUI names it as the server half does", () => {
    const permission = { id: "per_1", permission: "bash", patterns: ["rm -rf build", "*"] };
    expect(waitingPermission({ permission } as unknown as Task)).toBe(permissionText(permission));
  });
});

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { NativeForkRegistry } from "../../../src/native/registry.js";
import { ForkStore, forksDir } from "../../../src/native/store.js";

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "offshoot-forks-"));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const messages = [{ info: { id: "m1", sessionID: "ses_p", role: "user" }, parts: [] }];

describe("fork files", () => {
  it("live beside the task file in forks/, one per child, mode 0600, and round-trip", async () => {
    expect(forksDir("/d/opencode/plugins/offshoot/proj.json")).toBe("/d/opencode/plugins/offshoot/forks/proj");
    const store = new ForkStore(path.join(dir, "forks"));
    await store.write({ childSessionID: "ses_c", parentSessionID: "ses_p", rootSessionID: "ses_p", createdAt: 5 }, JSON.stringify(messages));
    const file = path.join(dir, "forks", "ses_c.json");
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(path.join(dir, "forks"))).toEqual(["ses_c.json"]);
    const read = await store.read("ses_c");
    expect(read).toMatchObject({ version: 1, childSessionID: "ses_c", rootSessionID: "ses_p", messages });
    await store.remove("ses_c");
    expect(await store.read("ses_c")).toBeUndefined();
  });

  it("does not follow a symlink planted at a fork file's name, and refuses ids that are not file names", async () => {
    const store = new ForkStore(path.join(dir, "forks"));
    fs.mkdirSync(path.join(dir, "forks"));
    const target = path.join(dir, "secret.json");
    fs.writeFileSync(target, JSON.stringify({ version: 1, childSessionID: "ses_c", rootSessionID: "x", messages: [] }));
    fs.symlinkSync(target, path.join(dir, "forks", "ses_c.json"));
    expect(await store.read("ses_c")).toBeUndefined();
    await store.write({ childSessionID: "ses_c", parentSessionID: "ses_p", rootSessionID: "ses_p", createdAt: 1 }, "[]");
    // the link was replaced by a file; its target is untouched
    expect(fs.lstatSync(path.join(dir, "forks", "ses_c.json")).isSymbolicLink()).toBe(false);
    expect(JSON.parse(fs.readFileSync(target, "utf8")).rootSessionID).toBe("x");
    expect(store.pathOf("../escape")).toBeUndefined();
    await expect(store.write({ childSessionID: "../escape", parentSessionID: "p", rootSessionID: "p", createdAt: 1 }, "[]")).rejects.toThrow();
  });

  it("a registry finds forks launched here and, after a restart, from their files; forget removes the file", async () => {
    const store = new ForkStore(path.join(dir, "forks"));
    const first = new NativeForkRegistry(store);
    first.register("ses_c", "ses_p", JSON.stringify(messages));
    expect((await first.find("ses_c"))?.rootSessionID).toBe("ses_p");
    expect(await first.find("ses_other")).toBeUndefined();
    await first.persist("ses_c", "ses_p", "ses_p", JSON.stringify(messages), 1);

    const restarted = new NativeForkRegistry(store);
    expect((await restarted.find("ses_c"))?.messages()).toEqual(messages);
    await restarted.forget("ses_c");
    expect(await new NativeForkRegistry(store).find("ses_c")).toBeUndefined();
  });
});

describe("sweep of fork files", () => {
  it("removes the files of sessions the server says are gone, keeps the others and the unknown", async () => {
    const { sweepForkFiles } = await import("../../../src/native/sweep.js");
    const store = new ForkStore(path.join(dir, "forks"));
    for (const id of ["ses_alive", "ses_gone", "ses_unknown"]) {
      await store.write({ childSessionID: id, parentSessionID: "ses_p", rootSessionID: "ses_p", createdAt: 1 }, "[]");
    }
    fs.writeFileSync(path.join(dir, "forks", "notes.txt"), "not a fork file");
    const answers: Record<string, boolean | undefined> = { ses_alive: true, ses_gone: false, ses_unknown: undefined };
    const removed = await sweepForkFiles(store, async (id) => answers[id]);
    expect(removed).toEqual(["ses_gone"]);
    expect(fs.readdirSync(path.join(dir, "forks")).sort()).toEqual(["notes.txt", "ses_alive.json", "ses_unknown.json"]);
    // no directory yet: nothing to do, nothing thrown
    expect(await sweepForkFiles(new ForkStore(path.join(dir, "none")), async () => false)).toEqual([]);
  });
});

import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { NativeForkRegistry } from "../../../src/native/registry.js";
import { takeSnapshot } from "../../../src/native/snapshot.js";
import { ForkStore, SEGMENT_GRACE_MS, forksDir, legacyForksDir } from "../../../src/native/store.js";
import { maintainForkFiles, sweepForkFiles } from "../../../src/native/sweep.js";

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "offshoot-forks-"));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const messages = [{ info: { id: "m1", sessionID: "ses_p", role: "user" }, parts: [] }];
const parts = (ms: readonly unknown[]) => ms.map((m) => JSON.stringify(m));
const fork = (child: string, parent = "ses_p") => ({ childSessionID: child, parentSessionID: parent, rootSessionID: parent, createdAt: 1 });
/** Bytes stored under a directory (files only). */
function bytesUnder(d: string): number {
  if (!fs.existsSync(d)) return 0;
  return fs
    .readdirSync(d, { withFileTypes: true })
    .reduce((n, e) => n + (e.isDirectory() ? bytesUnder(path.join(d, e.name)) : fs.statSync(path.join(d, e.name)).size), 0);
}
/** A parent conversation of `count` messages of about `size` characters each. */
function conversation(count: number, size = 10_000) {
  return Array.from({ length: count }, (_, i) => ({
    info: { id: `msg_${i}`, sessionID: "ses_p", role: i % 2 ? "assistant" : "user" },
    parts: [{ type: "text", text: `${i} `.padEnd(size, "x") }],
  }));
}

describe("fork files", () => {
  it("live in the project's store directory, a manifest per child and shared segments, mode 0600, and round-trip", async () => {
    expect(forksDir("/d/opencode/plugins/offshoot/proj.json")).toBe("/d/opencode/plugins/offshoot/proj/forks");
    expect(legacyForksDir("/d/opencode/plugins/offshoot/proj.json")).toBe("/d/opencode/plugins/offshoot/forks/proj");
    const store = new ForkStore(path.join(dir, "forks"));
    await store.write(fork("ses_c"), parts(messages));
    const file = path.join(dir, "forks", "ses_c.json");
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(path.join(dir, "forks")).sort()).toEqual(["segments", "ses_c.json"]);
    for (const f of fs.readdirSync(store.segmentsDir)) expect(fs.statSync(path.join(store.segmentsDir, f)).mode & 0o777).toBe(0o600);
    const read = await store.read("ses_c");
    expect(read).toMatchObject({ childSessionID: "ses_c", rootSessionID: "ses_p", messages });
    await store.remove("ses_c");
    expect(await store.read("ses_c")).toBeUndefined();
  });

  it("ten forks of one 1 MB parent, taken as it grows, store about one copy of it; each reads back whole", async () => {
    const store = new ForkStore(path.join(dir, "forks"));
    const full = conversation(100);
    const size = JSON.stringify(full).length;
    for (let k = 1; k <= 10; k++) await store.write(fork(`ses_c${k}`), parts(full.slice(0, k * 10)));
    // and two forks of the same turn (the same snapshot)
    await store.write(fork("ses_same"), parts(full));
    expect(bytesUnder(path.join(dir, "forks"))).toBeLessThan(size * 1.1);
    expect(fs.readdirSync(store.segmentsDir)).toHaveLength(10);
    for (let k = 1; k <= 10; k++) expect((await store.read(`ses_c${k}`))!.messages).toEqual(full.slice(0, k * 10));
    expect((await store.read("ses_same"))!.messages).toEqual(full);
  });

  it("a segment no kept fork names is removed by the sweep (not a fresh one, which may be a fork being written)", async () => {
    const store = new ForkStore(path.join(dir, "forks"));
    const full = conversation(4, 100);
    await store.write(fork("ses_a"), parts(full.slice(0, 2)));
    await store.write(fork("ses_b"), parts(full));
    expect(fs.readdirSync(store.segmentsDir)).toHaveLength(2);
    await store.remove("ses_b");
    expect(await store.removeUnusedSegments()).toBe(0); // too fresh
    expect(await store.removeUnusedSegments(Date.now() + SEGMENT_GRACE_MS + 1)).toBe(1);
    expect((await store.read("ses_a"))!.messages).toEqual(full.slice(0, 2));
    await store.remove("ses_a");
    expect(await store.removeUnusedSegments(Date.now() + SEGMENT_GRACE_MS + 1)).toBe(1);
    expect(fs.readdirSync(store.segmentsDir)).toEqual([]);
  });

  it("does not follow a symlink planted at a fork file's name, and refuses ids that are not file names", async () => {
    const store = new ForkStore(path.join(dir, "forks"));
    fs.mkdirSync(path.join(dir, "forks"));
    const target = path.join(dir, "secret.json");
    fs.writeFileSync(target, JSON.stringify({ version: 2, childSessionID: "ses_c", parentSessionID: "p", rootSessionID: "x", createdAt: 1, segments: [] }));
    fs.symlinkSync(target, path.join(dir, "forks", "ses_c.json"));
    expect(await store.read("ses_c")).toBeUndefined();
    await store.write(fork("ses_c"), []);
    // the link was replaced by a file; its target is untouched
    expect(fs.lstatSync(path.join(dir, "forks", "ses_c.json")).isSymbolicLink()).toBe(false);
    expect(JSON.parse(fs.readFileSync(target, "utf8")).rootSessionID).toBe("x");
    expect(store.pathOf("../escape")).toBeUndefined();
    await expect(store.write(fork("../escape"), [])).rejects.toThrow();
  });

  it("a registry finds forks launched here and, after a restart, from their files; forget removes the manifest", async () => {
    const store = new ForkStore(path.join(dir, "forks"));
    const first = new NativeForkRegistry(store);
    const snapshot = takeSnapshot(messages as never);
    expect(snapshot.json).toBe(JSON.stringify(messages));
    first.register("ses_c", "ses_p", snapshot);
    expect((await first.find("ses_c"))?.rootSessionID).toBe("ses_p");
    expect(await first.find("ses_other")).toBeUndefined();
    await first.persist("ses_c", "ses_p", "ses_p", snapshot, 1);

    const restarted = new NativeForkRegistry(new ForkStore(path.join(dir, "forks")));
    expect((await restarted.find("ses_c"))?.messages()).toEqual(messages);
    await restarted.forget("ses_c");
    expect(await new NativeForkRegistry(store).find("ses_c")).toBeUndefined();
  });
});

describe("the snapshot of a native launch", () => {
  it("is serialised on first use, once, never when the tool call takes it; its file is written from that copy", async () => {
    let serialised = 0;
    const counted = messages.map((m) => ({ ...(m as object), toJSON: () => (serialised++, m) }));
    const snapshot = takeSnapshot(counted as never);
    const registry = new NativeForkRegistry(new ForkStore(path.join(dir, "forks")));
    registry.register("ses_lazy", "ses_p", snapshot);
    expect(serialised).toBe(0);
    expect(snapshot.count).toBe(messages.length);
    expect((await registry.find("ses_lazy"))?.messages()).toEqual(messages);
    expect(serialised).toBe(messages.length);
    await registry.persist("ses_lazy", "ses_p", "ses_p", snapshot, 1);
    expect(serialised).toBe(messages.length);
    const restarted = new NativeForkRegistry(new ForkStore(path.join(dir, "forks")));
    expect((await restarted.find("ses_lazy"))?.messages()).toEqual(messages);
  });

  it("stays in memory while its file is being written, however many forks launch meanwhile", async () => {
    const registry = new NativeForkRegistry(new ForkStore(path.join(dir, "forks")));
    registry.register("ses_first", "ses_p", takeSnapshot(messages as never));
    const writing = registry.persist("ses_first", "ses_p", "ses_p", takeSnapshot(messages as never), 1);
    for (let i = 0; i < 8; i++) registry.register(`ses_more${i}`, "ses_p", takeSnapshot(messages as never));
    expect((await registry.find("ses_first"))?.messages()).toEqual(messages);
    await writing;
    // written: it may leave memory now, and is read back from its file
    for (let i = 0; i < 8; i++) await registry.find(`ses_more${i}`);
    expect((await registry.find("ses_first"))?.messages()).toEqual(messages);
  });
});

describe("version 1 fork files", () => {
  function writeV1(d: string, child: string, ms: unknown[]) {
    fs.mkdirSync(d, { recursive: true });
    fs.writeFileSync(
      path.join(d, `${child}.json`),
      JSON.stringify({ version: 1, childSessionID: child, parentSessionID: "ses_p", rootSessionID: "ses_root", createdAt: 7, messages: ms }),
      { mode: 0o600 },
    );
  }

  it("are read until moved, then moved in once: nothing lost, the old directory gone, forks of one parent shared", async () => {
    const legacy = path.join(dir, "forks-v1");
    const full = conversation(20, 1000);
    writeV1(legacy, "ses_one", full.slice(0, 10));
    writeV1(legacy, "ses_two", full);
    const store = new ForkStore(path.join(dir, "forks"), legacy);
    expect((await store.read("ses_two"))?.messages).toEqual(full);
    const logs: string[] = [];
    await maintainForkFiles(
      store,
      [],
      async () => true,
      (m) => logs.push(m),
    );
    expect(logs).toEqual([]);
    expect(fs.existsSync(legacy)).toBe(false);
    expect(await store.read("ses_one")).toMatchObject({ rootSessionID: "ses_root", parentSessionID: "ses_p", createdAt: 7, messages: full.slice(0, 10) });
    expect((await store.read("ses_two"))?.messages).toEqual(full);
    expect(bytesUnder(path.join(dir, "forks"))).toBeLessThan(JSON.stringify(full).length * 1.1);
  });

  it("one that cannot be moved is left as it was, and the log says so", async () => {
    const legacy = path.join(dir, "forks-v1");
    writeV1(legacy, "ses_ok", conversation(2, 10));
    fs.writeFileSync(path.join(legacy, "ses_bad.json"), "{ not json");
    const store = new ForkStore(path.join(dir, "forks"), legacy);
    const logs: string[] = [];
    await maintainForkFiles(
      store,
      [],
      async () => true,
      (m) => logs.push(m),
    );
    expect(logs.join("\n")).toContain("could not move 1 old fork file");
    expect(fs.readFileSync(path.join(legacy, "ses_bad.json"), "utf8")).toBe("{ not json");
    expect(fs.existsSync(path.join(legacy, "ses_ok.json"))).toBe(false);
    expect((await store.read("ses_ok"))?.messages).toHaveLength(2);
  });
});

describe("sweep of fork files", () => {
  it("removes the files of sessions the server says are gone, and of tasks retention dropped; keeps the others and the unknown", async () => {
    const store = new ForkStore(path.join(dir, "forks"));
    for (const id of ["ses_alive", "ses_gone", "ses_unknown", "ses_dropped"]) await store.write(fork(id), []);
    fs.writeFileSync(path.join(dir, "forks", "notes.txt"), "not a fork file");
    const answers: Record<string, boolean | undefined> = { ses_alive: true, ses_gone: false, ses_unknown: undefined, ses_dropped: true };
    expect(await sweepForkFiles(store, async (id) => answers[id])).toEqual(["ses_gone"]);
    await maintainForkFiles(
      store,
      ["ses_dropped"],
      async (id) => answers[id],
      () => {},
    );
    expect(fs.readdirSync(path.join(dir, "forks")).sort()).toEqual(["notes.txt", "ses_alive.json", "ses_unknown.json"]);
    // no directory yet: nothing to do, nothing thrown
    expect(await sweepForkFiles(new ForkStore(path.join(dir, "none")), async () => false)).toEqual([]);
  });
});

describe("temp files of fork writers", () => {
  it("a writer killed mid-write leaves forks/<child>.json.<pid>.<hex>.tmp: the upkeep removes a dead writer's, keeps a live one's", async () => {
    const deadPid = spawnSync("true").pid!;
    const store = new ForkStore(path.join(dir, "forks"));
    await store.write(fork("ses_kept"), parts(messages));
    const names = {
      dead: `ses_cut.json.${deadPid}.0a1b2c3d.tmp`,
      live: `ses_busy.json.${process.pid}.0a1b2c3d.tmp`,
      deadSegment: `${"a".repeat(64)}.json.${deadPid}.deadbeef.tmp`,
    };
    fs.writeFileSync(path.join(dir, "forks", names.dead), '{"version":2,');
    fs.writeFileSync(path.join(dir, "forks", names.live), '{"version":2,');
    fs.writeFileSync(path.join(dir, "forks", "segments", names.deadSegment), "[");
    await maintainForkFiles(
      store,
      [],
      async () => true,
      () => {},
    );
    expect(fs.readdirSync(path.join(dir, "forks")).sort()).toEqual([names.live, "segments", "ses_kept.json"].sort());
    expect(fs.readdirSync(path.join(dir, "forks", "segments")).some((n) => n.endsWith(".tmp"))).toBe(false);
    expect((await store.read("ses_kept"))?.messages).toEqual(messages);
  });
});

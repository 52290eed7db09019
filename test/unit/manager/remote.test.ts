// The pure parts of a task on another machine (docs/remote.md): the option `remotes`, the relay's
// requests and answers as B reads them, and what A reads of B's published state and does next.
import { describe, expect, it } from "vitest";
import { followStep, readRemoteState } from "../../../src/manager/remote/follow.js";
import { parseOptions, remoteUrlError } from "../../../src/options.js";
import { RELAY_KEY, baseRefOf, branchRefOf, parseRelayRequest, relayAnswerOf } from "../../../src/remote-protocol.js";

const SHA = "a".repeat(40);
const launch = {
  kind: "launch",
  id: "launch_1",
  taskId: "bg_abcd1234",
  description: "Edit on B",
  prompt: "do it",
  agent: "general",
  base: SHA,
  parentHead: SHA,
  gitRemote: "origin",
  requireSandbox: true,
};
const relay = (request: unknown) => ({ [RELAY_KEY]: { v: 1, request } });

describe("the option remotes", () => {
  const box = { url: "https://box.example:4096", passwordEnv: "BOX_PASSWORD", directory: "/srv/app" };

  it("an entry gets its defaults, and its password stays a variable's name", () => {
    const { options, warnings } = parseOptions({ remotes: { box } });
    expect(warnings).toEqual([]);
    expect(options.remotes.box).toEqual({ ...box, gitRemote: "origin", concurrency: 2, allowUnsandboxed: false });
  });

  it("http only to a loopback address, never credentials in the URL", () => {
    expect(remoteUrlError("http://127.0.0.1:4096")).toBeUndefined();
    expect(remoteUrlError("http://[::1]:4096")).toBeUndefined();
    expect(remoteUrlError("http://localhost:4096")).toBeUndefined();
    expect(remoteUrlError("http://box.example:4096")).toContain("only to a loopback address");
    expect(remoteUrlError("https://opencode:secret@box.example")).toContain("holds credentials");
    expect(remoteUrlError("ftp://box.example")).toContain("scheme is ftp");
  });

  it("a bad entry is left out with a warning that names the field, never a password; the others stay", () => {
    const { options, warnings } = parseOptions({
      remotes: {
        box,
        leaky: { ...box, url: "https://opencode:hunter2@box.example" },
        relative: { ...box, directory: "srv/app" },
        "bad name!": box,
        extra: { ...box, password: "hunter2" },
      },
    });
    expect(Object.keys(options.remotes)).toEqual(["box"]);
    expect(warnings).toHaveLength(4);
    expect(warnings.join("\n")).not.toContain("hunter2");
    expect(warnings.join("\n")).toContain('unknown fields ("password")');
  });
});

describe("the relay's requests as B reads them", () => {
  it("a launch is read with every field checked", () => {
    expect(parseRelayRequest(relay(launch))).toEqual(launch);
    expect(parseRelayRequest(relay({ ...launch, base: "HEAD" }))).toBeUndefined();
    expect(parseRelayRequest(relay({ ...launch, taskId: "../../etc" }))).toBeUndefined();
    expect(parseRelayRequest(relay({ ...launch, gitRemote: "-uevil" }))).toBeUndefined();
    expect(parseRelayRequest(relay({ ...launch, requireSandbox: "no" }))).toBeUndefined();
    expect(parseRelayRequest(relay({ ...launch, kind: "shell" }))).toBeUndefined();
  });

  it("the other kinds, and an answer read only for its own request", () => {
    expect(parseRelayRequest(relay({ kind: "cancel", id: "c1", taskId: "bg_abcd1234", reason: "r" }))).toEqual({
      kind: "cancel",
      id: "c1",
      taskId: "bg_abcd1234",
      reason: "r",
    });
    expect(parseRelayRequest(relay({ kind: "discard", id: "d1", taskId: "bg_abcd1234" }))?.kind).toBe("discard");
    // A's budget pauses a task there and a person's Continue sends it on: a reason, a prompt, each required
    expect(parseRelayRequest(relay({ kind: "pause", id: "p1", taskId: "bg_abcd1234", reason: "paused: budget reached" }))).toEqual({
      kind: "pause",
      id: "p1",
      taskId: "bg_abcd1234",
      reason: "paused: budget reached",
    });
    expect(parseRelayRequest(relay({ kind: "pause", id: "p1", taskId: "bg_abcd1234" }))).toBeUndefined();
    expect(parseRelayRequest(relay({ kind: "continue", id: "k1", taskId: "bg_abcd1234", prompt: "go on" }))).toEqual({
      kind: "continue",
      id: "k1",
      taskId: "bg_abcd1234",
      prompt: "go on",
    });
    expect(parseRelayRequest(relay({ kind: "continue", id: "k1", taskId: "bg_abcd1234", prompt: "" }))).toBeUndefined();
    const answered = {
      [RELAY_KEY]: { v: 1, answered: { id: "c1", ok: "done", task: { id: "bg_abcd1234", session: "ses_1", directory: "/w", run: 1, status: "running" } } },
    };
    expect(relayAnswerOf(answered, "c1")?.task?.session).toBe("ses_1");
    expect(relayAnswerOf(answered, "c2")).toBeUndefined();
  });

  it("the refs a task uses on the shared remote are branches (a forge may refuse others)", () => {
    expect(baseRefOf("bg_abcd1234")).toBe("refs/heads/offshoot/bg_abcd1234-base");
    expect(branchRefOf("bg_abcd1234")).toBe("refs/heads/offshoot/bg_abcd1234");
  });
});

describe("following B's published state", () => {
  const task = { remote: { name: "b", relay: "r", session: "s", root: "/srv", directory: "/w", run: 2 } };
  const state = (offshoot: Record<string, unknown>) => readRemoteState({ offshoot: { v: 1, ...offshoot } })!;

  it("a run ends here only once B says it ended, committed that run and pushed its branch", () => {
    expect(followStep(task, state({ status: "running", run: 2 }))).toEqual({ kind: "wait" });
    // an earlier run's end (before the resume reached B) is waited past
    expect(followStep(task, state({ status: "completed", run: 1, worktree: { wrapped: 1, pushed: SHA } }))).toEqual({ kind: "wait" });
    // ended, but its commit and push are still under way there
    expect(followStep(task, state({ status: "completed", run: 2, worktree: { wrapped: 1 } }))).toEqual({ kind: "wait" });
    expect(followStep(task, state({ status: "completed", run: 2, worktree: { wrapped: 2, pushed: SHA } }))).toEqual({ kind: "fetch" });
    expect(followStep(task, state({ status: "interrupted", run: 2, worktree: { wrapped: 2, pushError: "rejected" } }))).toEqual({
      kind: "push",
      why: "rejected",
    });
    expect(followStep(task, state({ status: "completed", run: 2, worktree: { removed: "no changes" } }))).toEqual({ kind: "end" });
  });

  it("what B publishes is read defensively", () => {
    expect(readRemoteState({ offshoot: { v: 2, status: "running" } })).toBeUndefined();
    expect(readRemoteState({ nothing: true })).toBeUndefined();
    const read = state({ status: "running", usage: { input: 1, output: 2 }, toolCalls: -3, lastTool: "x".repeat(500) });
    expect(read.usage).toBeUndefined(); // (incomplete: not taken)
    expect(read.toolCalls).toBeUndefined();
    expect(read.lastTool).toHaveLength(200);
  });
});

import { describe, expect, it } from "vitest";
import { createNativeForkHooks } from "../../../src/native/hooks.js";
import type { NativeFork, NativeForkLookup } from "../../../src/native/registry.js";

const msg = (sessionID: string, id: string, role: "user" | "assistant", extra: Record<string, unknown> = {}) =>
  ({ info: { id, sessionID, role, time: { created: 1 }, ...extra }, parts: [{ id: `${id}-p`, sessionID, messageID: id, type: "text", text: id }] }) as any;

function lookupOf(forks: Record<string, NativeFork>): NativeForkLookup {
  return { find: async (id) => forks[id] };
}

const inherited = [msg("ses_parent", "m1", "user"), msg("ses_parent", "m2", "assistant", { finish: "tool-calls" })];
const forks = { ses_child: { rootSessionID: "ses_parent", messages: () => JSON.parse(JSON.stringify(inherited)) } };

describe("native fork hooks", () => {
  it("prepends the parent's messages to a native child's, in place, as copies", async () => {
    const logs: string[] = [];
    const hooks = createNativeForkHooks(lookupOf(forks), (m) => logs.push(m));
    const own = msg("ses_child", "c1", "user");
    const output = { messages: [own] };
    const array = output.messages;
    await hooks["experimental.chat.messages.transform"]({}, output);
    expect(output.messages).toBe(array);
    expect(output.messages.map((m: any) => m.info.id)).toEqual(["m1", "m2", "c1"]);
    // a later hook changing what it was handed does not change the snapshot
    (output.messages[0] as any).parts[0].text = "changed";
    expect(inherited[0].parts[0].text).toBe("m1");
    expect(logs).toEqual([]);
  });

  it("leaves other sessions alone, and a child that has a finished compaction of its own", async () => {
    const hooks = createNativeForkHooks(lookupOf(forks), () => {});
    const other = { messages: [msg("ses_other", "o1", "user")] };
    await hooks["experimental.chat.messages.transform"]({}, other);
    expect(other.messages).toHaveLength(1);

    const compacted = {
      messages: [msg("ses_child", "k1", "user"), msg("ses_child", "k2", "assistant", { summary: true, finish: "stop" }), msg("ses_child", "c2", "user")],
    };
    await hooks["experimental.chat.messages.transform"]({}, compacted);
    expect(compacted.messages.map((m: any) => m.info.id)).toEqual(["k1", "k2", "c2"]);

    // a summary that failed (error) or is still running does not count: the context is still needed
    const failed = {
      messages: [msg("ses_child", "k1", "user"), msg("ses_child", "k2", "assistant", { summary: true, error: { name: "X" } }), msg("ses_child", "c3", "user")],
    };
    await hooks["experimental.chat.messages.transform"]({}, failed);
    expect(failed.messages.map((m: any) => m.info.id)).toEqual(["m1", "m2", "k1", "k2", "c3"]);
  });

  it("keys the prompt cache and the affinity headers to the fork's root", async () => {
    const hooks = createNativeForkHooks(lookupOf(forks), () => {});
    const params = { options: { promptCacheKey: "ses_child", other: 1 } as Record<string, unknown> };
    await hooks["chat.params"]({ sessionID: "ses_child" }, params);
    expect(params.options).toEqual({ promptCacheKey: "ses_parent", other: 1 });

    const headers = { headers: { "session-id": "ses_child", keep: "x" } as Record<string, string> };
    await hooks["chat.headers"]({ sessionID: "ses_child", model: { providerID: "anthropic" } }, headers);
    expect(headers.headers).toEqual({ "session-id": "ses_parent", keep: "x", "x-session-affinity": "ses_parent", "X-Session-Id": "ses_parent" });

    const opencode = { headers: {} as Record<string, string> };
    await hooks["chat.headers"]({ sessionID: "ses_child", model: { providerID: "opencode" } }, opencode);
    expect(opencode.headers).toEqual({ "x-opencode-session": "ses_parent" });

    const untouched = { options: { promptCacheKey: "ses_other" } as Record<string, unknown> };
    await hooks["chat.params"]({ sessionID: "ses_other" }, untouched);
    expect(untouched.options.promptCacheKey).toBe("ses_other");
  });

  it("never throws out of a hook: a failing lookup is logged and the request goes on unchanged", async () => {
    const logs: string[] = [];
    const hooks = createNativeForkHooks(
      {
        find: async () => {
          throw new Error("disk gone");
        },
      },
      (m) => logs.push(m),
    );
    const output = { messages: [msg("ses_child", "c1", "user")] };
    await hooks["experimental.chat.messages.transform"]({}, output);
    await hooks["chat.params"]({ sessionID: "ses_child" }, { options: {} });
    await hooks["chat.headers"]({ sessionID: "ses_child" }, { headers: {} });
    expect(output.messages).toHaveLength(1);
    expect(logs).toHaveLength(3);
    expect(logs[0]).toContain("disk gone");
  });
});

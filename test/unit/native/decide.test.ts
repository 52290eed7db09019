import { describe, expect, it } from "vitest";
import { NATIVE_FORK_MAX_TOKENS, decideFork, nativeTokenCap } from "../../../src/native/decide.js";
import { forkLine } from "../../../src/native/describe.js";
import { estimateTokens } from "../../../src/native/snapshot.js";

const model = { providerID: "mock", modelID: "m" };
const base = { callerAgent: "build", callerModel: model, contextLimit: 200_000, estimatedTokens: 10_000, haveMessages: true };

describe("native or text fork", () => {
  it("is native for the caller's own agent (named or not) and a context that leaves room", () => {
    expect(decideFork(base)).toEqual({ native: true });
    expect(decideFork({ ...base, requestedAgent: "build" })).toEqual({ native: true });
  });

  it("falls back to a text fork for another agent, an unknown model, no messages, or a context over the cap", () => {
    expect(decideFork({ ...base, requestedAgent: "general" })).toEqual({ native: false, reason: "agent general is not yours (build)" });
    expect(decideFork({ ...base, callerModel: undefined }).native).toBe(false);
    expect(decideFork({ ...base, haveMessages: false }).native).toBe(false);
    const over = decideFork({ ...base, estimatedTokens: 130_000 });
    expect(over).toEqual({ native: false, reason: "your context (~130000 tokens) is over the native fork cap of 120000 tokens" });
    expect(decideFork({ ...base, estimatedTokens: 130_000, maxTokens: 500_000, contextLimit: 1_000_000 }).native).toBe(true);
    // 0 turns native forks off, even for an (estimated) empty context
    expect(decideFork({ ...base, estimatedTokens: 0, maxTokens: 0 }).native).toBe(false);
  });

  it("keeps room for the child's work: 30% of the window, at least 16k tokens, never over the option", () => {
    expect(nativeTokenCap(200_000)).toBe(120_000);
    expect(nativeTokenCap(100_000)).toBe(70_000);
    expect(nativeTokenCap(20_000)).toBe(4_000);
    expect(nativeTokenCap(1_000_000, 300_000)).toBe(300_000);
    expect(nativeTokenCap(undefined)).toBe(NATIVE_FORK_MAX_TOKENS);
  });

  it("estimates the inherited tokens from the last finished step plus what came after it", () => {
    const parts = (text: string) => [{ type: "text", text }];
    const messages = [
      { info: { role: "user" }, parts: parts("hi") },
      {
        info: { role: "assistant", finish: "tool-calls", tokens: { input: 1000, output: 50, reasoning: 0, cache: { read: 4000, write: 0 } } },
        parts: parts("x"),
      },
      { info: { role: "user" }, parts: parts("y".repeat(4000)) },
    ] as any;
    const after = Math.ceil(JSON.stringify(messages[2].parts).length / 4);
    expect(estimateTokens(messages)).toBe(5050 + after);
    // no finished step yet: chars / 4 of everything
    expect(estimateTokens([messages[0]])).toBe(Math.ceil(JSON.stringify([messages[0]]).length / 4));
  });

  it("describes the fork in one line", () => {
    expect(forkLine({ kind: "native", messages: 3, estimatedTokens: 10, rootSessionID: "ses_p" })).toBe("native: shares your prompt cache");
    expect(forkLine({ kind: "text", keptMessages: 5, totalMessages: 6, chars: 2001, fromCompaction: false })).toBe("context copy: 5 of 6 messages, 2001 chars");
  });
});

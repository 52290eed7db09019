import { describe, expect, it } from "vitest";
import { NATIVE_FORK_MAX_TOKENS } from "../../../src/native/decide.js";
import { DEFAULT_OPTIONS, parseOptions } from "../../../src/options.js";

describe("plugin option nativeForkMaxTokens", () => {
  it("defaults to the native cap and takes a whole number of tokens, 0 included", () => {
    expect(DEFAULT_OPTIONS.nativeForkMaxTokens).toBe(NATIVE_FORK_MAX_TOKENS);
    expect(parseOptions({ nativeForkMaxTokens: 80_000 })).toEqual({ options: { ...DEFAULT_OPTIONS, nativeForkMaxTokens: 80_000 }, warnings: [] });
    expect(parseOptions({ nativeForkMaxTokens: 0 }).options.nativeForkMaxTokens).toBe(0);
  });

  it("a bad value is logged and the default kept", () => {
    const { options, warnings } = parseOptions({ nativeForkMaxTokens: "lots" });
    expect(options.nativeForkMaxTokens).toBe(NATIVE_FORK_MAX_TOKENS);
    expect(warnings).toEqual([
      `offshoot: option "nativeForkMaxTokens" must be a whole number of tokens from 0 to 100000000; got the string "lots". Using the default, ${NATIVE_FORK_MAX_TOKENS}.`,
    ]);
  });
});

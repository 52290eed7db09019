import { describe, expect, it } from "vitest";
import {
  describeDifference,
  expectSystem,
  firstDifference,
  sawSystem,
  sentSystem,
  setPluginsAfterOurs,
  systemDifference,
} from "../../../src/native/request-check.js";

/** One request's system prompt through the hooks: ours sees `mine`, later plugins add `later`, then it is sent. */
function request(sessionID: string, mine: string[], later: string[] = []): void {
  const system = [...mine];
  sawSystem(sessionID, system);
  system.push(...later);
  sentSystem(sessionID);
}

describe("the check of a native child's first request against its parent's system prompt as sent", () => {
  it("finds nothing when the child's system prompt is the parent's", () => {
    request("p1", ["You are opencode.", "env: /repo"]);
    expectSystem("c1", "p1");
    request("c1", ["You are opencode.", "env: /repo"]);
    expect(systemDifference("c1")).toBeUndefined();
  });

  it("names the first differing character and the plugins listed after ours when they made it", () => {
    setPluginsAfterOurs(["per-session-note"]);
    request("p2", ["You are opencode."], ["note: p2"]);
    expectSystem("c2", "p2");
    request("c2", ["You are opencode."], ["note: c2"]);
    const parent = "You are opencode.\nnote: p2";
    expect(systemDifference("c2")).toContain(
      `differed from your request's at character ${parent.length - 2} of ${parent.length} (yours: "de. note: p2", the child's: "de. note: c2")`,
    );
    expect(systemDifference("c2")).toContain("changed after this plugin by a plugin listed after it (per-session-note)");
  });

  it("says it was already different where ours saw it", () => {
    request("p3", ["You are opencode. A"]);
    expectSystem("c3", "p3");
    request("c3", ["You are opencode. B"]);
    expect(systemDifference("c3")).toContain("at character 18 of 19");
    expect(systemDifference("c3")).toContain("it was already different when this plugin saw it");
  });

  it("checks only the child's first request, and nothing for a parent it never saw", () => {
    request("p4", ["same"]);
    expectSystem("c4", "p4");
    request("c4", ["same"]);
    request("c4", ["changed later"]);
    expect(systemDifference("c4")).toBeUndefined();
    expectSystem("c5", "never-seen");
    request("c5", ["anything"]);
    expect(systemDifference("c5")).toBeUndefined();
  });
});

describe("firstDifference and describeDifference", () => {
  it("equal texts: -1; a prefix: at its end; else the first differing index", () => {
    expect(firstDifference("abc", "abc")).toBe(-1);
    expect(firstDifference("abc", "abcd")).toBe(3);
    expect(firstDifference("abXd", "abYd")).toBe(2);
    expect(firstDifference("", "")).toBe(-1);
  });
  it("shows a short one-line excerpt of both around the difference", () => {
    const text = describeDifference(`${"x".repeat(100)}A\nrest`, `${"x".repeat(100)}B\nrest`, 100, []);
    expect(text).toBe(
      `the system prompt differed from your request's at character 100 of 106 (yours: "xxxxxxxxxxA rest", the child's: "xxxxxxxxxxB rest"); changed after this plugin by a plugin listed after it`,
    );
  });
});

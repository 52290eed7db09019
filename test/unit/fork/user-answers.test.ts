// The user's own words survive a fork (issue 23): a result of a tool that carries what the user
// wrote (OpenCode's `question`, `ask_user_questions` under any MCP prefix, names from the option
// userAnswerTools) is kept whole like a user message, whatever its tier; everything around it is
// processed exactly as before.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FORK_CHAR_BUDGET, FORK_TIER3_LIMIT } from "../../../src/fork/constants.js";
import { buildForkContext, processMessagesForFork } from "../../../src/fork/index.js";
import { isUserAnswerTool } from "../../../src/fork/tools.js";
import type { ForkPart, SessionMessage } from "../../../src/fork/types.js";
import { DEFAULT_OPTIONS, parseOptions } from "../../../src/options.js";
import { History, sized } from "./builders.js";

const has = (text: string, piece: string) => text.includes(piece);

/** What OpenCode 1.18.33's `question` tool returns (see /work/shared/opencode-facts.md). */
function questionOutput(question: string, answer: string): string {
  return `User has answered your questions: "${question}"="${answer}". You can now continue with the user's answers in mind.`;
}

const QUESTION = "How should the migration treat the existing tables?";
const QUESTION_INPUT = {
  questions: [
    {
      question: QUESTION,
      header: "Migration",
      options: [
        { label: "Keep", description: "keep them" },
        { label: "Drop", description: "drop them" },
      ],
    },
  ],
};

/** A custom answer of about `size` chars ending with the user's hard rule. */
function customAnswer(size: number): string {
  const rule = " …and never touch the billing schema";
  return `Keep them, but ${sized(Math.max(0, size - rule.length - 15), "rename old columns carefully; ")}${rule}`;
}

/** The scenario: the answer early, twenty ordinary results after it, then the fork request. */
function scenario(answer: string, tool = "question"): History {
  const h = new History();
  h.user("TASK: migrate the database layer");
  h.assistant([h.tool({ tool, input: QUESTION_INPUT, output: questionOutput(QUESTION, answer) })]);
  for (let i = 0; i < 20; i++) {
    h.assistant([h.tool({ tool: "read", input: { filePath: `/p/src/f${i}.ts` }, output: `R${i} ${sized(2_000)}` })]);
  }
  h.assistant(["Done reading."]);
  h.user("Fork a task to write the migration");
  return h;
}

describe("the issue's scenario: a 1.5 KB custom answer, twenty results later", () => {
  it("the child sees the whole answer, rule included; the preamble counts it as kept whole", () => {
    const answer = customAnswer(1_500);
    const { text, stats, preamble } = buildForkContext(scenario(answer).messages);
    expect(has(text, questionOutput(QUESTION, answer))).toBe(true);
    expect(has(text, "never touch the billing schema")).toBe(true);
    expect(stats.userAnswers).toBe(1);
    // the results around it keep their tiers: the answer took its slot (the oldest, tier 3)
    expect(stats.tierDistribution).toEqual({ tier1: 5, tier2: 10, tier3: 5 });
    expect(stats.truncatedResults).toBe(5); // the 5 oldest reads (tier 3), not the answer
    expect(preamble).toContain("- Tool results: 6 full, 10 truncated to 3000 chars, 5 truncated to 500 chars");
  });

  it("ask_user_questions under any MCP prefix is kept whole too; other names are tiered", () => {
    const answer = customAnswer(1_500);
    for (const tool of ["ask_user_questions", "mcp_ask_user_questions", "my-server_ask_user_questions"]) {
      expect(has(buildForkContext(scenario(answer, tool).messages).text, answer), tool).toBe(true);
    }
    for (const tool of ["ask_user_questions_v2", "questions", "notquestion", "read"]) {
      const { text, stats } = buildForkContext(scenario(answer, tool).messages);
      expect(has(text, answer), tool).toBe(false);
      expect(has(text, answer.slice(0, 200)), tool).toBe(true); // cut to the tier-3 head
      expect(stats.userAnswers, tool).toBe(0);
    }
  });

  it("names given in ForkOptions.userAnswerTools (the plugin option) are kept whole", () => {
    const answer = customAnswer(1_500);
    const messages = scenario(answer, "acme_prompt_user").messages;
    expect(has(buildForkContext(messages).text, answer)).toBe(false);
    const { text, stats } = buildForkContext(messages, { userAnswerTools: ["acme_prompt_user"] });
    expect(has(text, answer)).toBe(true);
    expect(stats.userAnswers).toBe(1);
  });
});

describe("never deduplicated away, never shown as cleared", () => {
  it("the same question asked twice with the same input keeps both answers", () => {
    const h = new History();
    h.user("TASK");
    h.assistant([h.tool({ tool: "question", input: QUESTION_INPUT, output: questionOutput(QUESTION, "Keep them (first answer)") })]);
    h.assistant([h.tool({ tool: "question", input: QUESTION_INPUT, output: questionOutput(QUESTION, "Drop them (second answer)") })]);
    const { text, stats } = buildForkContext(h.messages);
    expect(has(text, "Keep them (first answer)")).toBe(true);
    expect(has(text, "Drop them (second answer)")).toBe(true);
    expect(stats.supersededResults).toBe(0);
  });

  it("an answer OpenCode pruned from the parent's window is still shown (the user's words are not a tool dump)", () => {
    const h = new History();
    h.user("TASK");
    h.assistant([h.tool({ tool: "question", input: QUESTION_INPUT, output: questionOutput(QUESTION, "use the staging database"), compacted: true })]);
    const { text, stats } = buildForkContext(h.messages);
    expect(has(text, "use the staging database")).toBe(true);
    expect(stats.clearedResults).toBe(0);
  });
});

describe("everything else is processed exactly as before", () => {
  /** Tool parts of the ordinary tools, as Stage 2 prints them. */
  const ordinaryParts = (messages: SessionMessage[], answerTool: string) =>
    processMessagesForFork(messages)
      .messages.flatMap((m) => m.parts)
      .filter((p): p is Extract<ForkPart, { kind: "tool" }> => p.kind === "tool" && p.tool !== answerTool);

  it("the ordinary results around an answer are tiered and cut as when the answer is an ordinary short result", () => {
    const spec = fc.record({
      before: fc.array(fc.nat({ max: 6_000 }), { maxLength: 25 }),
      after: fc.array(fc.nat({ max: 6_000 }), { maxLength: 25 }),
      answer: fc.nat({ max: 4_000 }),
    });
    fc.assert(
      fc.property(spec, ({ before, after, answer }) => {
        const build = (answerTool: string, output: string) => {
          const h = new History();
          h.user("TASK");
          before.forEach((n, i) => h.assistant([h.tool({ tool: i % 2 ? "bash" : "read", input: { filePath: `/b${i}` }, output: `B${i} ${sized(n)} error` })]));
          h.assistant([h.tool({ tool: answerTool, input: QUESTION_INPUT, output })]);
          after.forEach((n, i) => h.assistant([h.tool({ tool: "read", input: { filePath: `/a${i}` }, output: `A${i} ${sized(n)}` })]));
          return h.messages;
        };
        const withAnswer = ordinaryParts(build("question", questionOutput(QUESTION, sized(answer))), "question");
        // an ordinary tool with a result short enough never to be cut takes the same tier slot
        const withShort = ordinaryParts(build("note", "ok"), "note");
        expect(withAnswer).toEqual(withShort);
      }),
      { numRuns: 80, seed: 23 },
    );
  });

  it("a history without such tools gives the same context whatever userAnswerTools names", () => {
    const h = scenario("irrelevant", "read");
    expect(buildForkContext(h.messages, { userAnswerTools: ["question_x", "acme_prompt_user"] })).toEqual(buildForkContext(h.messages));
  });
});

describe("whole at any tier, under any budget pressure that leaves room", () => {
  it("the whole answer is in the context", () => {
    const spec = fc.record({
      answer: fc.nat({ max: 6_000 }),
      tool: fc.constantFrom("question", "ask_user_questions", "mcp_ask_user_questions"),
      // ordinary turns before and after the answer, each with a read of up to 40 KB and an answer text
      olderTurns: fc.array(fc.tuple(fc.nat({ max: 40_000 }), fc.nat({ max: 8_000 })), { maxLength: 30 }),
      newerTurns: fc.array(fc.tuple(fc.nat({ max: 40_000 }), fc.nat({ max: 8_000 })), { maxLength: 30 }),
      // steps of the answer's own turn after it (it falls to tier 2 or 3 as they grow)
      stepsAfter: fc.nat({ max: 40 }),
      // a giant paste in an older turn (step 0 of the budget cuts it, then turns are removed)
      paste: fc.option(fc.integer({ min: 100_000, max: 1_500_000 })),
    });
    let removed = 0;
    let tiered = 0;
    fc.assert(
      fc.property(spec, ({ answer, tool, olderTurns, newerTurns, stepsAfter, paste }) => {
        const words = `${customAnswer(answer)} 😀 END-OF-ANSWER`;
        const h = new History();
        h.user("TASK: the statement");
        const turn = (i: number, [read, text]: [number, number], label: string) => {
          h.user(`${label}${i} ${paste !== null && label === "old" && i === 0 ? sized(paste) : "question"}`);
          h.assistant([h.tool({ tool: "read", input: { filePath: `/${label}${i}` }, output: sized(read) }), sized(text)]);
        };
        olderTurns.forEach((t, i) => turn(i, t, "old"));
        h.user("please decide");
        h.assistant([h.tool({ tool, input: QUESTION_INPUT, output: questionOutput(QUESTION, words) })]);
        for (let s = 0; s < stepsAfter; s++) h.assistant([h.tool({ tool: "grep", input: { pattern: `p${s}` }, output: `hit ${s} ${sized(700)}` })]);
        newerTurns.forEach((t, i) => turn(i, t, "new"));
        h.user("fork now");
        const { text, stats } = buildForkContext(h.messages);
        if (stats.removedMessages > 0) removed++;
        if (stepsAfter + newerTurns.length >= 5) tiered++;
        expect(text.length).toBeLessThanOrEqual(FORK_CHAR_BUDGET);
        expect(has(text, questionOutput(QUESTION, words))).toBe(true);
      }),
      { numRuns: 120, seed: 2323 },
    );
    expect(removed).toBeGreaterThan(10); // the budget really removed things around it
    expect(tiered).toBeGreaterThan(10); // and the answer sat where a result is cut to 3,000 or 500
  });
});

describe("a giant answer is cut like a giant user message", () => {
  it("a 1 MB answer keeps its head and tail, as a 1 MB user message at the same place does", () => {
    const head = `HEAD-OF-ANSWER ${sized(3_000, "first words ")}`;
    const tail = `${sized(3_000, "last words ")} TAIL-OF-ANSWER`;
    const giant = head + sized(1_000_000 - head.length - tail.length, "middle ") + tail;
    const build = (asAnswer: boolean) => {
      const h = new History();
      h.user("TASK: the statement");
      for (let i = 0; i < 10; i++) {
        h.user(`Q${i}`);
        h.assistant([h.tool({ tool: "read", input: { filePath: `/p${i}` }, output: sized(2_000) }), `A${i}`]);
      }
      if (asAnswer) h.assistant([h.tool({ tool: "question", input: QUESTION_INPUT, output: giant })]);
      else h.user(giant);
      h.assistant(["Understood."]);
      h.user("fork now");
      return buildForkContext(h.messages);
    };
    const answer = build(true);
    const user = build(false);
    for (const { text } of [answer, user]) {
      expect(text.length).toBeLessThanOrEqual(FORK_CHAR_BUDGET);
      expect(has(text, head)).toBe(true);
      expect(has(text, tail)).toBe(true);
      expect(/\.\.\.\[truncated \d+ chars\]\.\.\./.test(text)).toBe(true);
    }
    // the same share of the budget as the user message (not a tier's 500 or 3,000 chars)
    const removedChars = (text: string) => Number(/\.\.\.\[truncated (\d+) chars\]\.\.\./.exec(text)?.[1]);
    expect(Math.abs(removedChars(answer.text) - removedChars(user.text))).toBeLessThan(2_000);
    expect(answer.stats.userAnswers).toBe(1);
    expect(answer.stats.truncatedResults).toBe(0);
    expect(has(answer.text, sized(FORK_TIER3_LIMIT * 20, "middle "))).toBe(true); // far more than a tier keeps
  });
});

describe("the plugin option userAnswerTools", () => {
  it("defaults to none, takes a list of names, and refuses anything else with the default kept", () => {
    expect(DEFAULT_OPTIONS.userAnswerTools).toEqual([]);
    expect(parseOptions({ userAnswerTools: ["acme_prompt_user"] })).toEqual({
      options: { ...DEFAULT_OPTIONS, userAnswerTools: ["acme_prompt_user"] },
      warnings: [],
    });
    const { options, warnings } = parseOptions({ userAnswerTools: "acme_prompt_user" });
    expect(options.userAnswerTools).toEqual([]);
    expect(warnings).toEqual([
      'offshoot: option "userAnswerTools" must be a list of at most 100 tool names, like ["my_server_ask_user"]; got the string "acme_prompt_user". Using the default, [].',
    ]);
  });

  it("isUserAnswerTool: the built-in names, the MCP suffix, and the added names only", () => {
    expect(isUserAnswerTool("question")).toBe(true);
    expect(isUserAnswerTool("srv_ask_user_questions")).toBe(true);
    expect(isUserAnswerTool("acme")).toBe(false);
    expect(isUserAnswerTool("acme", ["acme"])).toBe(true);
  });
});

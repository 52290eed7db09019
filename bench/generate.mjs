// Deterministic OpenCode-shaped histories for the benchmark (shapes as in
// test/fixtures/session.messages.full.json). Mostly big bash/read outputs, some errors, some repeated
// calls, plus text, reasoning and step parts. About 20 KB per message on average.

const SESSION_ID = "ses_benchbenchbenchbenchbench1";
const SNAPSHOT = "7c99a8aaf892c2c055ec9d5e4eeb35d311441d4f";

/** mulberry32: small, fast, deterministic. */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = (
  "const let return function import export from await async value result error handler request response " +
  "config module test expect describe build parse format context message session tool output input state " +
  "index length string number object array map filter reduce promise resolve reject timeout retry cache"
).split(" ");

function makeLinePool(random, count) {
  const pool = [];
  for (let i = 0; i < count; i++) {
    const n = 3 + Math.floor(random() * 12);
    const words = [];
    for (let w = 0; w < n; w++) words.push(WORDS[Math.floor(random() * WORDS.length)]);
    pool.push(`${"  ".repeat(Math.floor(random() * 4))}${words.join(" ")};`);
  }
  return pool;
}

/** Builds `count` chars worth of lines from the pool; `numbered` prefixes "N: " like the read tool. */
function bulkText(random, pool, chars, numbered) {
  const lines = [];
  let size = 0;
  for (let i = 1; size < chars; i++) {
    const line = pool[Math.floor(random() * pool.length)];
    const text = numbered ? `${i}: ${line}` : line;
    lines.push(text);
    size += text.length + 1;
  }
  return lines.join("\n");
}

export function generateHistory(messageCount, seed = 42) {
  const random = prng(seed);
  const pool = makeLinePool(random, 4000);
  const messages = [];
  let seq = 0;
  let call = 0;
  let time = 1795314236861;
  const id = (prefix) => `${prefix}_${(0x201113dbd000 + ++seq).toString(16)}${String(seq).padStart(14, "0")}`;
  const pastCalls = [];
  let lastUserId = "";

  const userMessage = (text) => {
    const mid = id("msg");
    lastUserId = mid;
    time += 500;
    messages.push({
      info: { id: mid, sessionID: SESSION_ID, role: "user", time: { created: time }, summary: { diffs: [] }, agent: "build", model: { providerID: "mock", modelID: "mock-model" } },
      parts: [{ id: id("prt"), sessionID: SESSION_ID, messageID: mid, type: "text", text }],
    });
  };

  const toolPart = (mid) => {
    const roll = random();
    let tool;
    let input;
    if (pastCalls.length > 10 && roll < 0.1) {
      ({ tool, input } = pastCalls[Math.floor(random() * pastCalls.length)]); // a repeated identical call
    } else if (roll < 0.55) {
      tool = "bash";
      input = { command: `npm run task-${call} -- --verbose`, description: `Run task ${call}` };
    } else if (roll < 0.92) {
      tool = "read";
      input = { filePath: `/home/dev/project/src/module${call}.ts` };
    } else {
      tool = "grep";
      input = { pattern: `symbol${call}`, path: "/home/dev/project/src" };
    }
    pastCalls.push({ tool, input });
    call++;
    const start = (time += 20);
    const isError = random() < 0.05;
    const base = { id: id("prt"), sessionID: SESSION_ID, messageID: mid, type: "tool", callID: `call_${call}`, tool };
    if (isError) {
      return { ...base, state: { status: "error", input, error: `Error: command failed with exit code 1\n${bulkText(random, pool, 2000, false)}`, time: { start, end: start + 9 } } };
    }
    const size = tool === "grep" ? 2000 : 10_000 + Math.floor(random() * 25_000);
    let output = bulkText(random, pool, size, tool === "read");
    if (tool === "read") output = `<path>${input.filePath}</path>\n<type>file</type>\n<content>\n${output}\n\n(End of file)\n</content>`;
    if (tool === "bash" && random() < 0.2) output += "\nFAILED: 2 tests failed";
    return {
      ...base,
      state: { status: "completed", input, output, title: tool, metadata: { preview: output.slice(0, 200), truncated: false }, time: { start, end: start + 9 } },
    };
  };

  const assistantMessage = () => {
    const mid = id("msg");
    time += 300;
    const parts = [{ id: id("prt"), sessionID: SESSION_ID, messageID: mid, type: "step-start", snapshot: SNAPSHOT }];
    if (random() < 0.5) parts.push({ id: id("prt"), sessionID: SESSION_ID, messageID: mid, type: "reasoning", text: bulkText(random, pool, 800, false), time: { start: time } });
    if (random() < 0.6) parts.push({ id: id("prt"), sessionID: SESSION_ID, messageID: mid, type: "text", text: bulkText(random, pool, 600, false), time: { start: time } });
    const tools = random() < 0.85 ? 1 + Math.floor(random() * 1.3) : 0;
    for (let t = 0; t < tools; t++) parts.push(toolPart(mid));
    parts.push({ id: id("prt"), sessionID: SESSION_ID, messageID: mid, type: "step-finish", reason: tools ? "tool-calls" : "stop", snapshot: SNAPSHOT, cost: 0, tokens: { total: 120, input: 100, output: 20, reasoning: 0, cache: { read: 0, write: 0 } } });
    messages.push({
      info: {
        id: mid,
        sessionID: SESSION_ID,
        role: "assistant",
        time: { created: time, completed: time + 200 },
        parentID: lastUserId,
        modelID: "mock-model",
        providerID: "mock",
        mode: "build",
        agent: "build",
        path: { cwd: "/home/dev/project", root: "/home/dev/project" },
        cost: 0,
        tokens: { total: 120, input: 100, output: 20, reasoning: 0, cache: { read: 0, write: 0 } },
        finish: tools ? "tool-calls" : "stop",
      },
      parts,
    });
  };

  while (messages.length < messageCount) {
    userMessage(`Step ${messages.length}: ${bulkText(random, pool, 300, false)}`);
    const answers = 3 + Math.floor(random() * 8);
    for (let a = 0; a < answers && messages.length < messageCount; a++) assistantMessage();
  }
  return messages;
}

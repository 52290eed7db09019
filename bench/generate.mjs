// Deterministic OpenCode-shaped histories for the benchmark (shapes as in
// test/fixtures/session.messages.full.json). generateHistory: the ordinary agentic history, mostly
// big bash/read outputs, some errors, some repeated calls, plus text, reasoning and step parts, about
// 20 KB per message. generateShape: that and the shapes a fuzzer found slow or quadratic (issue 8),
// each to a target JSON size.

const SESSION_ID = "ses_benchbenchbenchbenchbench1";
const SNAPSHOT = "7c99a8aaf892c2c055ec9d5e4eeb35d311441d4f";
const TOKENS = { total: 120, input: 100, output: 20, reasoning: 0, cache: { read: 0, write: 0 } };

/** An id as OpenCode makes them, ascending with `seq`. */
function idOf(prefix, seq) {
  return `${prefix}_${(0x201113dbd000 + seq).toString(16)}${String(seq).padStart(14, "0")}`;
}

function userInfo(id, time) {
  return {
    id,
    sessionID: SESSION_ID,
    role: "user",
    time: { created: time },
    summary: { diffs: [] },
    agent: "build",
    model: { providerID: "mock", modelID: "mock-model" },
  };
}

function assistantInfo(id, time, parentID, finish) {
  return {
    id,
    sessionID: SESSION_ID,
    role: "assistant",
    time: { created: time, completed: time + 200 },
    parentID,
    modelID: "mock-model",
    providerID: "mock",
    mode: "build",
    agent: "build",
    path: { cwd: "/home/dev/project", root: "/home/dev/project" },
    cost: 0,
    tokens: { ...TOKENS, cache: { ...TOKENS.cache } },
    finish,
  };
}

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
  const id = (prefix) => idOf(prefix, ++seq);
  const pastCalls = [];
  let lastUserId = "";

  const userMessage = (text) => {
    const mid = id("msg");
    lastUserId = mid;
    time += 500;
    messages.push({
      info: userInfo(mid, time),
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
      return {
        ...base,
        state: {
          status: "error",
          input,
          error: `Error: command failed with exit code 1\n${bulkText(random, pool, 2000, false)}`,
          time: { start, end: start + 9 },
        },
      };
    }
    const size = tool === "grep" ? 2000 : 10_000 + Math.floor(random() * 25_000);
    let output = bulkText(random, pool, size, tool === "read");
    if (tool === "read") output = `<path>${input.filePath}</path>\n<type>file</type>\n<content>\n${output}\n\n(End of file)\n</content>`;
    if (tool === "bash" && random() < 0.2) output += "\nFAILED: 2 tests failed";
    return {
      ...base,
      state: {
        status: "completed",
        input,
        output,
        title: tool,
        metadata: { preview: output.slice(0, 200), truncated: false },
        time: { start, end: start + 9 },
      },
    };
  };

  const assistantMessage = () => {
    const mid = id("msg");
    time += 300;
    const parts = [{ id: id("prt"), sessionID: SESSION_ID, messageID: mid, type: "step-start", snapshot: SNAPSHOT }];
    if (random() < 0.5)
      parts.push({ id: id("prt"), sessionID: SESSION_ID, messageID: mid, type: "reasoning", text: bulkText(random, pool, 800, false), time: { start: time } });
    if (random() < 0.6)
      parts.push({ id: id("prt"), sessionID: SESSION_ID, messageID: mid, type: "text", text: bulkText(random, pool, 600, false), time: { start: time } });
    const tools = random() < 0.85 ? 1 + Math.floor(random() * 1.3) : 0;
    for (let t = 0; t < tools; t++) parts.push(toolPart(mid));
    parts.push({
      id: id("prt"),
      sessionID: SESSION_ID,
      messageID: mid,
      type: "step-finish",
      reason: tools ? "tool-calls" : "stop",
      snapshot: SNAPSHOT,
      cost: 0,
      tokens: { ...TOKENS, cache: { ...TOKENS.cache } },
    });
    messages.push({ info: assistantInfo(mid, time, lastUserId, tools ? "tool-calls" : "stop"), parts });
  };

  while (messages.length < messageCount) {
    userMessage(`Step ${messages.length}: ${bulkText(random, pool, 300, false)}`);
    const answers = 3 + Math.floor(random() * 8);
    for (let a = 0; a < answers && messages.length < messageCount; a++) assistantMessage();
  }
  return messages;
}

// ─── Shapes by target size ───

const SID = SESSION_ID;

/** Builds messages with ascending ids; tracks the JSON size as it goes (parts are stringified once). */
class Builder {
  constructor(seed) {
    this.random = prng(seed);
    this.pool = makeLinePool(this.random, 2000);
    this.messages = [];
    this.bytes = 2;
    this.seq = 0;
    this.calls = 0;
    this.time = 1795314236861;
    this.lastUser = "msg_none";
  }
  id(prefix) {
    return idOf(prefix, ++this.seq);
  }
  /** Parts given as strings (text parts) or part fields, with their ids. */
  parts(mid, parts) {
    return parts.map((p) => ({ id: this.id("prt"), sessionID: SID, messageID: mid, ...(typeof p === "string" ? { type: "text", text: p } : p) }));
  }
  text(chars, numbered = false) {
    return bulkText(this.random, this.pool, chars, numbered);
  }
  push(message) {
    this.messages.push(message);
    this.bytes += JSON.stringify(message).length + 1;
    return message;
  }
  user(parts) {
    const mid = this.id("msg");
    this.lastUser = mid;
    this.time += 500;
    return this.push({ info: userInfo(mid, this.time), parts: this.parts(mid, parts) });
  }
  assistant(parts, extra = {}) {
    const mid = this.id("msg");
    this.time += 300;
    return this.push({ info: { ...assistantInfo(mid, this.time, this.lastUser, "stop"), ...extra }, parts: this.parts(mid, parts) });
  }
  tool(tool, input, output) {
    this.calls++;
    const start = (this.time += 20);
    return {
      type: "tool",
      callID: `call_${this.calls}`,
      tool,
      state: { status: "completed", input, output, title: tool, metadata: {}, time: { start, end: start + 9 } },
    };
  }
}

/** Every shape the benchmark reports, each a function (targetBytes, seed) → messages. */
export const SHAPES = {
  /** The ordinary agentic history (generateHistory), sized by message count. */
  agentic: (bytes, seed) => generateHistory(Math.max(20, Math.round(bytes / 21_000)), seed),

  /** A task, one early read, then nothing but short chat turns (fuzzer case 1 and 6). */
  "chat-after-one-call": (bytes, seed) => {
    const b = new Builder(seed);
    b.user(["Task: refactor the parser"]);
    b.assistant([b.tool("read", { filePath: "/p/parser.ts" }, b.text(4000, true))]);
    while (b.bytes < bytes) {
      b.user([b.text(80 + Math.floor(b.random() * 300))]);
      b.assistant([b.text(200 + Math.floor(b.random() * 900))]);
    }
    return b.messages;
  },

  /** One assistant message holding tens of thousands of small tool calls (case 6). */
  "one-message-many-parts": (bytes, seed) => {
    const b = new Builder(seed);
    b.user(["Task: scan every file"]);
    const parts = [];
    let size = 0;
    for (let i = 0; size < bytes; i++) {
      const part = {
        id: b.id("prt"),
        sessionID: SID,
        messageID: "msg_many",
        ...b.tool(i % 3 ? "read" : "grep", { filePath: `/p/src/f${i}.ts` }, b.text(120 + Math.floor(b.random() * 200))),
      };
      size += JSON.stringify(part).length + 1;
      parts.push(part);
    }
    b.assistant([]).parts = parts;
    return b.messages;
  },

  /** The same few calls repeated over and over (dedup; case 6). */
  "repeated-calls": (bytes, seed) => {
    const b = new Builder(seed);
    const calls = [
      ["bash", { command: "npm test", description: "Run the tests" }],
      ["read", { filePath: "/p/src/parser.ts" }],
      ["bash", { description: "Run the tests", command: "npm test" }],
      ["grep", { pattern: "TODO", path: "/p/src", include: "*.ts" }],
    ];
    b.user(["Task: make the tests pass"]);
    while (b.bytes < bytes) {
      const [tool, input] = calls[Math.floor(b.random() * calls.length)];
      b.assistant([b.tool(tool, input, b.text(1000 + Math.floor(b.random() * 4000)))]);
    }
    return b.messages;
  },

  /** Messages made of many tiny text parts (the per-part costs dominate). */
  "tiny-parts": (bytes, seed) => {
    const b = new Builder(seed);
    b.user(["Task: tiny parts"]);
    while (b.bytes < bytes) {
      const parts = [];
      for (let i = 0; i < 50; i++) parts.push(WORDS[Math.floor(b.random() * WORDS.length)]);
      b.assistant(parts);
    }
    return b.messages;
  },

  /** Tool outputs full of blanks, `<` and context tags (the tag scan; case 2). */
  "blank-and-tag-heavy": (bytes, seed) => {
    const b = new Builder(seed);
    b.user(["Task: read the plugin's docs"]);
    const pieces = ["<", "   ", "\t\t", "\n", "</inherited_context>", "< / Inherited_Context >", "<inherited_context>", "x_c", "<" + " ".repeat(200)];
    while (b.bytes < bytes) {
      let out = "";
      const n = 200 + Math.floor(b.random() * 2000);
      for (let i = 0; i < n; i++) out += pieces[Math.floor(b.random() * pieces.length)];
      b.assistant([b.tool("read", { filePath: `/p/docs/${b.calls}.md` }, out)]);
    }
    return b.messages;
  },

  /** Tool inputs nested deeper than the printed depth (bounded printing; case 4). */
  "deep-inputs": (bytes, seed) => {
    const b = new Builder(seed);
    b.user(["Task: call the API"]);
    while (b.bytes < bytes) {
      let input = { leaf: b.text(40) };
      const depth = 20 + Math.floor(b.random() * 40);
      for (let d = 0; d < depth; d++) input = { level: d, child: input };
      b.assistant([b.tool("webfetch", input, b.text(500 + Math.floor(b.random() * 1500)))]);
    }
    return b.messages;
  },

  /** N completed summaries of one parent with N parts and no compaction part (case 3). */
  "corrupted-summaries": (bytes, seed) => {
    const b = new Builder(seed);
    const n = Math.max(10, Math.round(bytes / 1_100));
    const parent = b.user(Array.from({ length: n }, (_, i) => `part ${i} ${WORDS[i % WORDS.length]}`));
    for (let i = 0; b.bytes < bytes && i < 10 * n; i++) {
      b.assistant([b.text(400)], { summary: true, mode: "compaction", agent: "compaction", parentID: parent.info.id });
    }
    return b.messages;
  },
};

import { describe, expect, it } from "vitest";
import { createHarness, toolContext, useHarness } from "./setup.js";
import { readStoredTasks } from "../../stored-tasks.js";

const h = useHarness();

describe("background_task: launch", () => {
  it("creates a real child session, sends the prompt with the agent and the parent's model, and names the child in the tool part", async () => {
    const parent = h.fake.addParent();
    const ctx = toolContext(parent);
    const result = (await h.tools.task.execute({ description: "Scan the repo", prompt: "List the files", agent: "explore" }, ctx)) as any;

    const [child] = h.fake.children(parent);
    expect(child.title).toBe("Background: Scan the repo");
    expect(child.parentID).toBe(parent);
    const [sent] = h.fake.callsOf("session.promptAsync");
    expect(sent!.options.path.id).toBe(child.id);
    expect(sent!.options.body).toMatchObject({
      agent: "explore",
      model: { providerID: "mock", modelID: "mock-model" },
      parts: [{ type: "text", text: "List the files" }],
    });
    // No per-prompt tools map: the child sees the same tool list as its parent (delegation is refused at call time).
    expect(sent!.options.body.tools).toBeUndefined();
    // without fork the child receives only the prompt
    expect(h.fake.userTexts(child.id)).toEqual(["List the files"]);
    expect(result.metadata.sessionId).toBe(child.id);
    expect(ctx.metadataCalls).toContainEqual(expect.objectContaining({ metadata: expect.objectContaining({ sessionId: child.id }) }));
    expect(result.output).toMatch(/Background task bg_[0-9a-z]{8} started/);
    expect(result.output).toContain("notification");
    expect(result.output).toContain("background_output");
  });

  it("with fork, injects preamble + inherited context (noReply) before the prompt, leaving out the spawning call", async () => {
    const parent = h.fake.addParent();
    const ctx = toolContext(parent);
    const result = (await h.tools.task.execute({ description: "Dig", prompt: "Continue the work", agent: "general", fork: true }, ctx)) as any;

    const [child] = h.fake.children(parent);
    expect(child.title).toBe("Background (forked): Dig");
    const prompts = h.fake.callsOf("session.prompt");
    expect(prompts).toHaveLength(1);
    expect(prompts[0]!.options.body.noReply).toBe(true);
    const [contextText, promptText] = h.fake.userTexts(child.id);
    expect(contextText).toContain("<inherited_context>");
    expect(contextText).toContain("</inherited_context>");
    // every tool output of the recorded parent reaches the child whole
    const outputs = h.fake.sessions
      .get(parent)!
      .messages.flatMap((m) => m.parts)
      .flatMap((p) => (p.type === "tool" && p.state.status === "completed" ? [p.state.output] : []));
    expect(outputs.length).toBeGreaterThan(1);
    for (const output of outputs) expect(contextText).toContain(output);
    expect(promptText).toBe("Continue the work");
    expect(result.output).toContain("(forked)");
    expect(h.manager.tasksOf(parent)[0]!.isForked).toBe(true);
  });

  it("refuses fork together with resume, with the design's error text, creating nothing", async () => {
    const parent = h.fake.addParent();
    const out = await h.tools.task.execute({ description: "x", prompt: "y", agent: "general", fork: true, resume: "bg_1" }, toolContext(parent));
    expect(out).toBe("Cannot use fork and resume together. Use fork for new tasks with context, resume for continuing existing tasks.");
    expect(h.fake.callsOf("session.create")).toHaveLength(0);
  });

  it("names blank required fields and creates nothing", async () => {
    const parent = h.fake.addParent();
    const out = h.text(await h.tools.task.execute({ description: "  ", prompt: "", agent: "general" }, toolContext(parent)));
    expect(out).toContain("description, prompt");
    expect(h.fake.callsOf("session.create")).toHaveLength(0);
  });

  it("rejects an unknown agent before any session exists, listing the visible agents", async () => {
    const parent = h.fake.addParent();
    const out = h.text(await h.tools.task.execute({ description: "x", prompt: "y", agent: "wizard" }, toolContext(parent)));
    expect(out).toContain('no agent named "wizard"');
    expect(out).toContain("general, explore");
    expect(out).not.toContain("title");
    expect(h.fake.callsOf("session.create")).toHaveLength(0);
  });

  it("removes the child and records nothing when the prompt fails after the child exists", async () => {
    const parent = h.fake.addParent();
    h.fake.failNext("session.promptAsync");
    const out = h.text(await h.tools.task.execute({ description: "x", prompt: "y", agent: "general" }, toolContext(parent)));
    expect(out).toContain("was not started");
    expect(out).toContain("sending the task prompt failed (HTTP 500)");
    expect(h.fake.callsOf("session.abort")).toHaveLength(1);
    expect(h.fake.children(parent)).toHaveLength(0);
    expect(h.manager.tasksOf(parent)).toHaveLength(0);
    const onDisk = (() => {
      try {
        return readStoredTasks(h.storePath).tasks;
      } catch {
        return [];
      }
    })();
    expect(onDisk).toHaveLength(0);
  });

  it("never leaves a forked task without its context: a failed injection removes the child", async () => {
    const parent = h.fake.addParent();
    h.fake.failNext("session.prompt", 400, { name: "BadRequest", data: { message: "too large" } });
    const out = h.text(await h.tools.task.execute({ description: "x", prompt: "y", agent: "general", fork: true }, toolContext(parent)));
    expect(out).toContain("injecting the fork context failed");
    expect(h.fake.children(parent)).toHaveLength(0);
    expect(h.fake.callsOf("session.promptAsync")).toHaveLength(0);
    expect(h.manager.tasksOf(parent)).toHaveLength(0);
  });

  it("reports a parent history that cannot be read, leaving nothing behind", async () => {
    const parent = h.fake.addParent();
    h.fake.failNext("session.messages", 500);
    const out = h.text(await h.tools.task.execute({ description: "x", prompt: "y", agent: "general", fork: true }, toolContext(parent)));
    expect(out).toContain("reading the messages of session");
    expect(h.fake.children(parent)).toHaveLength(0);
  });

  it("returns the same task for a repeated call with the same callID", async () => {
    const parent = h.fake.addParent();
    const ctx = toolContext(parent);
    const [a, b] = await Promise.all([
      h.tools.task.execute({ description: "x", prompt: "y", agent: "general" }, ctx),
      h.tools.task.execute({ description: "x", prompt: "y", agent: "general" }, ctx),
    ]);
    const c = await h.tools.task.execute({ description: "x", prompt: "y", agent: "general" }, ctx);
    expect(h.fake.children(parent)).toHaveLength(1);
    expect(h.text(a)).toBe(h.text(b));
    expect(h.text(c)).toContain(h.manager.tasksOf(parent)[0]!.id);
  });

  it("does not let a background task start background tasks of its own", async () => {
    const parent = h.fake.addParent();
    await h.tools.task.execute({ description: "x", prompt: "y", agent: "general" }, toolContext(parent));
    const child = h.fake.children(parent)[0]!.id;
    const out = h.text(await h.tools.task.execute({ description: "nested", prompt: "y", agent: "general" }, toolContext(child)));
    expect(out).toContain("cannot start background tasks of its own");
    expect(h.fake.children(child)).toHaveLength(0);
  });
});

describe("background_task: resume", () => {
  it("sends the follow-up to the same child; the task is resumed, then completed, and notified again", async () => {
    const parent = h.fake.addParent();
    await h.tools.task.execute({ description: "x", prompt: "first", agent: "general" }, toolContext(parent));
    const task = h.manager.tasksOf(parent)[0]!;
    h.fake.answer(task.sessionID, { text: "first answer" });
    await h.fake.settle();
    expect(task.status).toBe("completed");
    h.fake.goIdle(parent); // the parent's turn ends: notice + wake (the wake makes it busy again)
    await h.fake.settle();
    expect(h.fake.sessions.get(parent)!.busy).toBe(true);

    const out = h.text(
      await h.tools.task.execute({ description: "", prompt: "more please", agent: "general", resume: task.id.slice(3, 7) }, toolContext(parent)),
    );
    expect(out).toContain("resumed");
    expect(task.status).toBe("resumed");
    expect(h.fake.children(parent)).toHaveLength(1);
    expect(h.fake.userTexts(task.sessionID)).toEqual(["first", "more please"]);
    // resumed counts as running
    expect(h.text(await h.tools.list.execute({ status: "running" }, toolContext(parent)))).toContain(task.id);

    h.fake.answer(task.sessionID, { text: "second answer" });
    h.fake.goIdle(parent);
    await h.fake.settle();
    expect(task.status).toBe("completed");
    const notes = h.fake.userTexts(parent).filter((t) => t.includes(`[background task ${task.id}`));
    expect(notes).toHaveLength(2);
    expect(notes[1]).toContain("second answer");
    expect(h.text(await h.tools.output.execute({ task_id: task.id }, toolContext(parent)))).toContain("second answer");
  });

  it("resume needs only the task and the prompt (the README's restart example); a new task without description is refused, nothing started", async () => {
    const parent = h.fake.addParent();
    await h.tools.task.execute({ description: "x", prompt: "first", agent: "general" }, toolContext(parent));
    const task = h.manager.tasksOf(parent)[0]!;
    h.fake.answer(task.sessionID, { text: "first answer" });
    await h.fake.settle();
    const out = h.text(await h.tools.task.execute({ resume: task.id, prompt: "continue" }, toolContext(parent)));
    expect(out).toContain("resumed");
    expect(task.status).toBe("resumed");
    expect(task.description).toBe("x");
    expect(h.fake.userTexts(task.sessionID)).toEqual(["first", "continue"]);

    const other = h.fake.addParent();
    const refused = h.text(await h.tools.task.execute({ prompt: "p", agent: "general" }, toolContext(other)));
    expect(refused).toBe(
      'Error: background_task argument "description" is missing; a new task needs it (only resume can leave it out). Call background_task again with description: "<3-8 words>".',
    );
    expect(h.fake.children(other)).toHaveLength(0);
    expect(h.manager.tasksOf(other)).toHaveLength(0);
  });

  it("sends a resume of a running task into it as a message (steer.ts); refuses an unknown task", async () => {
    const parent = h.fake.addParent();
    await h.tools.task.execute({ description: "x", prompt: "y", agent: "general" }, toolContext(parent));
    const task = h.manager.tasksOf(parent)[0]!;
    expect(h.text(await h.tools.task.execute({ description: "", prompt: "z", agent: "general", resume: task.id }, toolContext(parent)))).toContain(
      `Message sent to background task ${task.id}`,
    );
    expect(task.run).toBe(1);
    const unknown = h.text(await h.tools.task.execute({ description: "", prompt: "z", agent: "general", resume: "bg_nope" }, toolContext(parent)));
    expect(unknown).toContain('no task "bg_nope"');
    expect(unknown).toContain(task.id);
    expect(h.fake.callsOf("session.promptAsync")).toHaveLength(2);
  });

  it("restores the task when the follow-up cannot be sent", async () => {
    const parent = h.fake.addParent();
    await h.tools.task.execute({ description: "x", prompt: "y", agent: "general" }, toolContext(parent));
    const task = h.manager.tasksOf(parent)[0]!;
    h.fake.answer(task.sessionID, { text: "done" });
    await h.fake.settle();
    h.fake.failNext("session.promptAsync");
    const out = h.text(await h.tools.task.execute({ description: "", prompt: "z", agent: "general", resume: task.id }, toolContext(parent)));
    expect(out).toContain("sending the follow-up prompt failed");
    expect(task.status).toBe("completed");
    expect(task.run).toBe(1);
  });
});

describe("background_task: launches of one turn", () => {
  it("share one agent list and one read of the parent, and no child inherits the turn's in-flight launches", async () => {
    const h = await createHarness();
    try {
      const parent = h.fake.addParent();
      // The parent's last assistant message holds the three background_task calls of this turn, running.
      const session = h.fake.sessions.get(parent)!;
      const last = session.messages.filter((m) => m.info.role === "assistant").at(-1)!;
      for (const n of [1, 2, 3]) {
        last.parts.push({
          id: `prt_sib${n}`,
          sessionID: parent,
          messageID: last.info.id,
          type: "tool",
          callID: `call_sib${n}`,
          tool: "background_task",
          state: { status: "running", input: { description: `sibling-${n}`, prompt: "p", agent: "general", fork: true }, time: { start: 1 } },
        } as never);
      }
      const launches = [1, 2, 3].map((n) =>
        h.tools.task.execute(
          { description: `sibling-${n}`, prompt: "p", agent: "general", fork: true },
          toolContext(parent, { messageID: "msg_turn_x", callID: `call_sib${n}` } as never),
        ),
      );
      await Promise.all(launches);
      expect(h.fake.callsOf("app.agents")).toHaveLength(1);
      expect(h.fake.callsOf("session.messages").filter((c) => c.options.path.id === parent)).toHaveLength(1);
      const injected = h.fake.callsOf("session.prompt").filter((c) => c.options.body.noReply && c.options.path.id !== parent);
      expect(injected).toHaveLength(3);
      for (const c of injected) expect(c.options.body.parts[0].text).not.toContain("sibling-");
    } finally {
      await h.cleanup();
    }
  });
  it("later turns do not read the agent list again for an agent just seen; an agent not in it is checked against a fresh list", async () => {
    const h = await createHarness();
    try {
      const parent = h.fake.addParent();
      const launch = (turn: string, agent: string) =>
        h.tools.task.execute({ description: `on ${agent}`, prompt: "p", agent }, toolContext(parent, { messageID: turn } as never)).then(h.text);
      await launch("msg_turn_1", "general");
      await launch("msg_turn_2", "general");
      expect(h.fake.callsOf("app.agents")).toHaveLength(1);
      // an agent added to the config since: not in the list seen, so the list is read again and it is found
      h.fake.agents.push({ name: "reviewer", mode: "subagent" });
      expect(await launch("msg_turn_3", "reviewer")).toContain("started");
      expect(h.fake.callsOf("app.agents")).toHaveLength(2);
      // an agent that does not exist is never taken on trust
      expect(await launch("msg_turn_4", "nobody")).toContain('there is no agent named "nobody"');
      expect(h.fake.callsOf("app.agents")).toHaveLength(3);
    } finally {
      await h.cleanup();
    }
  });
});

describe("background_task: a turn of launches and the task file", () => {
  it("one write holds every launch that reached it before it could write, and they answer in call order (the one that ran first)", async () => {
    const h = await createHarness({ options: { concurrency: 1 } });
    try {
      const parent = h.fake.addParent();
      // The disk is slow: every write of the task file waits until `releaseSaves()` (as while OpenCode's
      // event loop is busy dispatching the turn's other calls).
      const store = h.manager.store;
      const save = store.save.bind(store);
      let writes = 0;
      let releaseSaves!: () => void;
      const saves = new Promise<void>((resolve) => (releaseSaves = resolve));
      let writing!: () => void;
      const firstWrite = new Promise<void>((resolve) => (writing = resolve));
      store.save = async (tasks) => {
        writes++;
        writing();
        await saves;
        return save(tasks);
      };
      // The server is slow to create sessions: the launch that runs commits after the queued ones' write began.
      const releaseCreate = h.fake.hold("session.create");
      let allCommitted!: () => void;
      const committed = new Promise<void>((resolve) => (allCommitted = resolve));
      const commit = h.manager.commitLaunch.bind(h.manager);
      let commits = 0;
      h.manager.commitLaunch = (task) => {
        const done = commit(task); // (asks for its save before its first await)
        if (++commits === 4) allCommitted();
        return done;
      };

      const answered: string[] = [];
      const launches = ["first", "second", "third", "fourth"].map((description, n) =>
        h.tools.task
          .execute(
            { description, prompt: `do ${description}`, agent: "general" },
            toolContext(parent, { messageID: "msg_turn_w", callID: `call_w${n}` } as never),
          )
          .then((reply) => {
            answered.push(description);
            return h.text(reply);
          }),
      );
      await Promise.all([h.fake.called("session.create"), firstWrite]);
      releaseCreate();
      await committed;
      releaseSaves();
      const replies = await Promise.all(launches);

      expect(replies[0]).toContain("started");
      for (const reply of replies.slice(1)) expect(reply).toContain("queued");
      expect(writes).toBe(1); // the queued launches' write waited long enough to take the first one along
      expect(answered).toEqual(["first", "second", "third", "fourth"]);
      const stored = readStoredTasks<{ id: string; description: string }>(h.storePath).tasks.map((t) => t.description);
      expect(stored.sort()).toEqual(["first", "fourth", "second", "third"]);
    } finally {
      await h.cleanup();
    }
  });
});

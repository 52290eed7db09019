/**
 * The queue on the real server (`concurrency: 2` in the plugin's options): tasks beyond it wait in
 * launch order, are listed and cancellable, and stay queued across a crash.
 */
import { describe, expect, test } from "vitest";
import { getMessages, lastUserText, isToolFollowUp } from "../harness/index.js";
import { children, launchAll, notifications, promptList, promptText, readTaskFile, registerLateChecks, storedTask, until, useOpencode } from "./helpers.js";

const env = useOpencode({ pluginOptions: { concurrency: 2 } });

describe("queue", () => {
  test("concurrency 2: five tasks, at most two children at the model at once, three queued with the reason, all five complete", async () => {
    let most = 0;
    env.model.script({
      name: "q-child",
      match: (r) => lastUserText(r).startsWith("CHILD_Q"),
      reply: () => {
        most = Math.max(most, env.model.requests.filter((x) => x.label === "q-child" && !x.done).length);
        return { text: "done Q", delayMs: 700 };
      },
    });
    const tasks = Array.from({ length: 5 }, (_, i) => ({ description: `Queue Q${i}`, prompt: `CHILD_Q${i}`, agent: "general" }));
    const { parent, outputs, ids } = await launchAll(env, "QUEUE_Q", tasks);
    expect(outputs.filter((o) => o.includes("queued"))).toHaveLength(3);
    expect(outputs.find((o) => o.includes("queued"))).toContain("(concurrency 2)");
    await until(
      "all five completed",
      async () => {
        const file = await readTaskFile(env.server);
        return ids.every((id) => file.tasks.find((t) => t.id === id)?.status === "completed");
      },
      30_000,
    );
    expect(most).toBeLessThanOrEqual(2);
    expect(env.model.requests.filter((r) => r.label === "q-child")).toHaveLength(5);
    await until("five notices", async () => notifications(await getMessages(env.server.client, parent)).length === 5);
    // No queued prompt is left in the file once a task has started.
    const file = await readTaskFile(env.server);
    expect(file.tasks.filter((t) => ids.includes(t.id) && t.queuedPrompt !== undefined)).toEqual([]);
  });

  test("a queued task is listed, can be cancelled (its child never gets the prompt), and stays queued across a restart", async () => {
    // The launches of one turn race to their slots: which two run is found out from the outputs.
    let quick: string | undefined;
    env.model.script({
      name: "w-child",
      match: (r) => lastUserText(r).startsWith("CHILD_W"),
      reply: (r) => (quick && lastUserText(r) === quick ? { text: "late W done" } : { text: "slow W", delayMs: 60_000 }),
    });
    const tasks = [0, 1, 2, 3].map((i) => ({ description: `Wait W${i}`, prompt: `CHILD_W${i}`, agent: "general" }));
    const { parent, outputs, ids } = await launchAll(env, "WAIT_W", tasks);
    const queued = ids.filter((_, i) => outputs[i]!.includes("queued"));
    const running = ids.filter((id) => !queued.includes(id));
    expect(queued).toHaveLength(2);
    const [cancelled, waiting] = queued as [string, string];
    await until("two children at the model", () => env.model.requests.filter((r) => r.label === "w-child").length === 2);
    const listed = await promptList(env, parent, "LIST_W");
    expect(listed).toMatch(new RegExp(`^${waiting} +queued `, "m"));
    expect(listed).toContain("queued: 2 tasks on mock/mock-model are running (concurrency 2)");
    // A queued launch returned before its child existed; the child is made right after, queued, without a prompt.
    for (const i of [0, 1, 2, 3]) if (queued.includes(ids[i]!)) expect(outputs[i]).toContain("Its child session is being created");
    type Kid = { id: string; metadata?: { offshoot?: { status?: string; taskId?: string } } };
    const childOf = async (id: string) => ((await children(env.server.client, parent)) as Kid[]).find((k) => k.metadata?.offshoot?.taskId === id);
    await until("the queued tasks' children", async () => (await Promise.all(queued.map(childOf))).every(Boolean));
    const waitingChild = (await childOf(waiting))!;
    expect(waitingChild.metadata?.offshoot?.status).toBe("queued");
    expect(await getMessages(env.server.client, waitingChild.id)).toEqual([]);

    env.model.script({
      name: "w-cancel",
      match: (r) => lastUserText(r) === "CANCEL_W" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "background_cancel", arguments: { task_id: cancelled } }] },
    });
    env.model.script({ name: "w-cancelled", match: (r) => lastUserText(r) === "CANCEL_W" && isToolFollowUp(r), reply: { text: "cancelled one" } });
    await promptText(env.server.client, parent, "CANCEL_W");
    expect((await storedTask(env.server, cancelled))?.status).toBe("cancelled");

    // A crash: the running two are interrupted, the queued one is still queued and then starts.
    quick = `CHILD_W${ids.indexOf(waiting)}`;
    env.ev.close();
    await env.server.restart({ signal: "SIGKILL" });
    await env.resubscribe();
    await env.model.waitForRequest((r) => lastUserText(r.body) === quick, 30_000);
    const file = await readTaskFile(env.server);
    expect(running.map((id) => file.tasks.find((t) => t.id === id)?.status)).toEqual(["interrupted", "interrupted"]);
    const cancelledPrompt = `CHILD_W${ids.indexOf(cancelled)}`;
    expect(env.model.requests.some((r) => lastUserText(r.body) === cancelledPrompt)).toBe(false);
    await until("the queued task completed", async () => (await storedTask(env.server, waiting))?.status === "completed", 45_000);
    expect((await storedTask(env.server, waiting))?.sessionID).toBe(waitingChild.id); // the child made at launch, not another
  });
});

registerLateChecks(env);

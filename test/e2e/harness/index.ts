/**
 * End-to-end harness: the REAL `opencode serve` (opencode-ai 1.18.33), only the language
 * model is scripted.
 *
 * ```ts
 * import { DIST_PLUGIN, events, getMessages, printServerLogOnFailure, startOpencode,
 *          startScriptedModel, lastUserText, isToolFollowUp, waitIdle } from "./harness/index.js";
 *
 * let model: ScriptedModel, server: OpencodeServer, ev: EventCollector;
 * printServerLogOnFailure(() => ({ server, model }));
 * beforeAll(async () => {
 *   model = await startScriptedModel();
 *   server = await startOpencode({ plugins: [DIST_PLUGIN], model, files: { "a.txt": "hi\n" } });
 *   ev = await events(server.client);
 * });
 * afterAll(async () => { ev?.close(); await server?.stop(); await model?.close(); });
 *
 * test("...", async () => {
 *   model.script({ name: "call", match: (r) => lastUserText(r) === "go" && !isToolFollowUp(r),
 *                  reply: { toolCalls: [{ name: "read", arguments: { filePath: `${server.directory}/a.txt` } }] } });
 *   model.script({ name: "answer", match: (r) => lastUserText(r) === "go" && isToolFollowUp(r), reply: { text: "done" } });
 *   const s = (await server.client.session.create({ body: { title: "t" } })).data!;
 *   const since = ev.mark();
 *   await server.client.session.promptAsync({ path: { id: s.id }, body: { parts: [{ type: "text", text: "go" }] } });
 *   await waitIdle(ev, s.id, { since });
 *   const messages = await getMessages(server.client, s.id);
 * });
 * ```
 *
 * Notes
 * - `startScriptedModel({ api: "anthropic" })` makes the server's provider `@ai-sdk/anthropic` (the
 *   scripted server answers `POST /v1/messages` next to chat completions; rules see the request in
 *   the OpenAI shape). `prefixCache: true` reports each request's prefix shared with earlier ones as
 *   cached prompt tokens; `promptTokens: "estimate"` reports prompt tokens as chars / 4. Every
 *   recorded request has its raw body (`raw`), its headers and `cache` (shared prefix, tokens).
 * - Rules are tried newest-first; a rule answers only requests of its `kind` (default
 *   "chat"); title and compaction requests get defaults unless a rule with that kind matches.
 * - `startOpencode` throws if OpenCode reports a plugin load failure (see allowPluginErrors).
 * - After `server.restart()` read `server.client` again and re-subscribe `events()`.
 * - The glob and grep tools need ripgrep, which is not installed here: OpenCode then tries
 *   to download it from GitHub (fails offline, the tool part ends in `state.error`).
 */
export * from "./scripted-model.js";
export * from "./opencode.js";
export * from "./vitest.js";
export * from "./messages.js";
export * from "./other-plugins.js";

// The import rules of src/ (openspec/project.md, "Layout"), checked by `npm run lint`
// (`npm run lint:imports`). Type-only imports count: a cycle through types is still a cycle.
/** Node modules that do I/O: src/fork/ is a pure pipeline and must not reach them. */
const NODE_IO = [
  "fs",
  "fs/promises",
  "child_process",
  "net",
  "http",
  "https",
  "http2",
  "dgram",
  "tls",
  "dns",
  "dns/promises",
  "worker_threads",
  "cluster",
  "readline",
];
const nodeIo = `^(node:)?(${NODE_IO.join("|")})$`;

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-cycle",
      severity: "error",
      comment: "No import cycle between our files, type-only imports included.",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "no-arrow-into-manager",
      severity: "error",
      comment:
        "native/, fork/, tui/, worktree/ and store/ (persistence) must not import the task manager, nor may the shared root code (prompts.ts, task-record.ts, …): they reach OpenCode through host/ and share only shared code. The manager hands them narrow hosts instead.",
      from: { path: "^src/((native|fork|tui|worktree|store)/|[^/]+\\.ts$)", pathNot: "^src/index\\.ts$" },
      to: { path: "^src/manager/" },
    },
    {
      name: "tools-see-the-task-service",
      severity: "error",
      comment: "The tools see the manager only through the task service (manager/task-service.ts): never the manager itself, not even its type.",
      from: { path: "^src/tools/" },
      to: { path: "^src/manager/task-manager\\.ts$" },
    },
    {
      name: "task-room-imports-no-other-room",
      severity: "error",
      comment:
        "src/manager/task/ (a task's step, its edges, its one runner, the registry) is the room every other room stands on: it imports no other file of the manager (src/manager/README.md).",
      from: { path: "^src/manager/task/" },
      to: { path: "^src/manager/", pathNot: "^src/manager/task/" },
    },
    {
      name: "no-room-imports-the-front",
      severity: "error",
      comment:
        "The manager's front files (task-manager.ts, the event decider, recovery, the task service) wire the rooms together: a room (src/manager/<room>/) never imports them; what it needs of the owner comes as its room's host (src/manager/README.md).",
      from: { path: "^src/manager/[^/]+/" },
      to: { path: "^src/manager/[^/]+\\.ts$" },
    },
    {
      name: "host-imports-nothing-of-ours",
      severity: "error",
      comment: "host/ (OpenCode's client calls, the tool context, the host's types) is the seam a V2 adapter replaces: it imports no other file of ours.",
      from: { path: "^src/host/" },
      to: { path: "^src/", pathNot: "^src/host/" },
    },
    {
      name: "fork-is-pure",
      severity: "error",
      comment: "src/fork/ is pure: no file system, process, network or other I/O module of node.",
      from: { path: "^src/fork/" },
      to: { dependencyTypes: ["core"], path: nodeIo },
    },
    {
      name: "no-unresolvable",
      severity: "error",
      comment:
        "An import that does not resolve would hide an arrow from the rules above. The host's runtime modules of the TUI half are not installed (src/tui/host-modules.d.ts).",
      from: { path: "^src/" },
      to: { couldNotResolve: true, pathNot: "^(solid-js|@opentui/(core|solid|keymap))(/|$)" },
    },
  ],
  options: {
    // Keep type-only imports (import type, typeof import()) in the graph.
    tsPreCompilationDeps: true,
    // Resolve like tsc does (moduleResolution Bundler: "./x.js" is ./x.ts).
    tsConfig: { fileName: "tsconfig.json" },
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(dist|node_modules)/" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      mainFields: ["module", "main", "types", "typings"],
    },
  },
};

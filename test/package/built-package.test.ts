/**
 * The built package as OpenCode and library users get it: run after `npm run build` (npm test does).
 * Imports go through a plain Node process by package name, so the `exports` map itself is tested.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { builtinModules } from "node:module";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "../..");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));

function runModule(code: string, cwd = root): unknown {
  const result = spawnSync(process.execPath, ["--input-type=module", "-e", code], { cwd, encoding: "utf8" });
  if (result.status !== 0) throw new Error(result.stderr);
  return JSON.parse(result.stdout);
}

describe("built package", () => {
  it("gives buildForkContext from opencode-offshoot/fork, keeping every tool output of a real session whole", () => {
    const fixture = join(root, "test/fixtures/recorded/session.messages.full.json");
    const out = runModule(`
      import { readFileSync } from "node:fs";
      import { buildForkContext } from "opencode-offshoot/fork";
      const messages = JSON.parse(readFileSync(${JSON.stringify(fixture)}, "utf8")).data;
      const { text, preamble, stats } = buildForkContext(messages);
      console.log(JSON.stringify({ text, preamble, stats }));
    `) as { text: string; preamble: string; stats: { tierDistribution: { tier1: number } } };
    const messages = JSON.parse(readFileSync(fixture, "utf8")).data as { parts: { type: string; state?: { status: string; output?: string } }[] }[];
    const outputs = messages.flatMap((m) => m.parts).flatMap((p) => (p.type === "tool" && p.state?.status === "completed" ? [p.state.output!] : []));
    expect(outputs.length).toBeGreaterThan(1);
    for (const output of outputs) expect(out.text).toContain(output);
    expect(out.text.startsWith("<inherited_context>")).toBe(true);
    expect(out.preamble).toContain("forked context");
    expect(out.stats.tierDistribution.tier1).toBe(outputs.length);
  });

  it("exposes the plugin as default { id, server } under . and ./server", () => {
    const out = runModule(`
      const a = await import("opencode-offshoot");
      const b = await import("opencode-offshoot/server");
      console.log(JSON.stringify({ id: a.default.id, server: typeof a.default.server, same: a.default === b.default }));
    `);
    expect(out).toEqual({ id: "offshoot", server: "function", same: true });
  });

  it("imports at run time only Node built-ins, its own chunks and declared dependencies (the TUI half also the host's peers)", () => {
    const dist = join(root, "dist");
    const files = readdirSync(dist, { recursive: true })
      .map(String)
      .filter((f) => f.endsWith(".js"));
    const undeclared: string[] = [];
    let seen = 0;
    for (const file of files) {
      // Only the TUI entry may import what the TUI host provides (solid-js, @opentui/*: optional peers).
      const allowed = [...Object.keys(pkg.dependencies ?? {}), ...(file === "tui.js" ? Object.keys(pkg.peerDependencies ?? {}) : [])];
      const code = readFileSync(join(dist, file), "utf8");
      for (const m of code.matchAll(
        /(?:^|[\s;])(?:import|export)\s[^"'`]*?from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)|^import\s*["']([^"']+)["']/gm,
      )) {
        const s = (m[1] ?? m[2] ?? m[3])!;
        seen++;
        if (s.startsWith(".") || s.startsWith("node:") || builtinModules.includes(s)) continue;
        const name = s.startsWith("@") ? s.split("/").slice(0, 2).join("/") : s.split("/")[0]!;
        if (!allowed.includes(name)) undeclared.push(`${file}: ${s}`);
      }
    }
    expect(seen).toBeGreaterThan(0);
    expect(undeclared).toEqual([]);
  });

  it("loads from a packed tarball installed as OpenCode installs npm plugins: dependencies only, no scripts", () => {
    const dir = mkdtempSync(join(tmpdir(), "offshoot-pack-"));
    try {
      const npm = (args: string[], cwd: string) => execFileSync("npm", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
      const tarball = npm(["pack", "--silent", "--pack-destination", dir], root).trim().split("\n").at(-1)!;
      writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "opencode-cache", private: true }));
      npm(["install", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund", "--no-package-lock", join(dir, tarball)], dir);
      const out = runModule(
        `const m = await import("opencode-offshoot/server");
         const f = await import("opencode-offshoot/fork");
         console.log(JSON.stringify({ id: m.default.id, server: typeof m.default.server, fork: typeof f.buildForkContext }));`,
        dir,
      );
      expect(out).toEqual({ id: "offshoot", server: "function", fork: "function" });
      const installed = readdirSync(join(dir, "node_modules"));
      expect(installed).not.toContain("opencode-ai"); // devDependencies stay out
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it("ships type declarations for both entries", () => {
    const files = readdirSync(join(root, "dist"), { recursive: true }).map(String);
    expect(files).toContain("index.d.ts");
    expect(files).toContain(join("fork", "index.d.ts"));
  });
});

// What the worktree benches share (worktree-scale.ts, worktree-ready.ts, worktree-free.ts): a number
// from the command line, a timed call, and a generated git repository of N tracked files.

import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

export { median } from "./measure.mjs";

/** `--name N` from the command line, or `fallback`. */
export function numberArg(name: string, fallback: number): number {
  return Number(process.argv[process.argv.indexOf(name) + 1]) || fallback;
}

/**
 * Runs `work` and says how long it took, in ms. The file system's dirty pages are written out first
 * (`sync`), so that a measurement does not pay for the writeback of what the one before it made or
 * removed (eight removed worktrees of 2,000 files each made the next eight `git worktree add` take
 * from 1.5 s to 11 s, whichever side of the comparison came next).
 */
export async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  execFileSync("sync");
  const start = process.hrtime.bigint();
  const value = await work();
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, value };
}

/**
 * A repository at `<root>/repo` of `files` tracked files (100 per directory under src/m<d>/f<f>.ts,
 * each `lines` lines long), committed once.
 */
export function generatedRepo(root: string, files: number, lines = 1): string {
  const repo = path.join(root, "repo");
  const perDir = 100;
  for (let d = 0; d * perDir < files; d++) {
    const dir = path.join(repo, "src", `m${d}`);
    fs.mkdirSync(dir, { recursive: true });
    for (let f = 0; f < perDir && d * perDir + f < files; f++) fs.writeFileSync(path.join(dir, `f${f}.ts`), `export const v${d}_${f} = ${f};\n`.repeat(lines));
  }
  const git = (...args: string[]) => execFileSync("git", args, { cwd: repo, stdio: "ignore" });
  git("init", "-q");
  git("add", "-A");
  git("-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "init");
  return repo;
}

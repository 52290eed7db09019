/**
 * The plugins users already run, as released on the registry, pinned, for the coexistence suite
 * (test/e2e/scenarios/coexist-*.e2e.test.ts): installed once per machine into
 * node_modules/.cache/offshoot-coexist/<versions> (about 600 MB, about 35 s from the registry the first
 * time; `--ignore-scripts --omit=optional`: their install scripts fetch binaries the server does not
 * need). Installed into a temporary directory and renamed into place, so two test files that ask at
 * once never see half an install.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export const OTHER_PLUGINS = {
  omo: { name: "oh-my-opencode", version: "4.19.4", entry: "dist/index.js" },
  dcp: { name: "@tarquinen/opencode-dcp", version: "3.1.14", entry: "dist/index.js" },
} as const;

export type OtherPlugin = keyof typeof OTHER_PLUGINS;

const ROOT = path.resolve(import.meta.dirname, "../../..");

/** The entry file of each pinned plugin, installing them first where they are not yet. */
export async function installOtherPlugins(): Promise<Record<OtherPlugin, string>> {
  const specs = Object.values(OTHER_PLUGINS).map((p) => `${p.name}@${p.version}`);
  const dir = path.join(ROOT, "node_modules", ".cache", "offshoot-coexist", specs.join("+").replace(/[^A-Za-z0-9.+-]/g, "_"));
  const entries = Object.fromEntries(Object.entries(OTHER_PLUGINS).map(([key, p]) => [key, path.join(dir, "node_modules", p.name, p.entry)])) as Record<
    OtherPlugin,
    string
  >;
  if (Object.values(entries).every((entry) => fs.existsSync(entry))) return entries;
  const temp = `${dir}.${process.pid}.tmp`;
  fs.rmSync(temp, { recursive: true, force: true });
  fs.mkdirSync(temp, { recursive: true });
  fs.writeFileSync(path.join(temp, "package.json"), JSON.stringify({ name: "offshoot-coexist", private: true }));
  await run("npm", ["install", "--no-audit", "--no-fund", "--ignore-scripts", "--omit=optional", "--save-exact", ...specs], {
    cwd: temp,
    maxBuffer: 16 * 1024 * 1024,
  });
  try {
    fs.renameSync(temp, dir);
  } catch (error) {
    // another file installed them meanwhile: theirs is used
    fs.rmSync(temp, { recursive: true, force: true });
    if (!Object.values(entries).every((entry) => fs.existsSync(entry))) throw error;
  }
  return entries;
}

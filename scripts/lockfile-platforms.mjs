#!/usr/bin/env node
// Restores lock entries for other platforms' optional packages (OpenCode's, rollup's, msgpackr's
// binaries) that npm leaves out when the registry it talks to lacks those exact versions: without
// them `npm ci` refuses the lock. Each entry is written as npm writes it for a platform package it
// will skip: version from the parent's exact spec, os/cpu/libc from the registry's metadata of that
// package (they do not change between versions). Run after `npm install` changes the lock.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";

const path = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(path, "utf8"));
const packages = lock.packages;

/** OpenCode's binaries are named opencode-<os>-<cpu>[-baseline][-musl]; some are not on every mirror. */
function platformFromOpencodeName(name) {
  const m = /^opencode-(darwin|linux|windows)-(arm64|x64)(-baseline)?(-musl)?$/.exec(name);
  if (!m) return {};
  return { os: m[1] === "windows" ? "win32" : m[1], cpu: m[2], libc: m[4] ? "musl" : undefined };
}

function platformOf(name) {
  try {
    const out = execFileSync("npm", ["view", name, "os", "cpu", "libc", "--json"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
    const meta = out.trim() ? JSON.parse(out) : {};
    if (meta.os || meta.cpu) return { os: meta.os, cpu: meta.cpu, libc: meta.libc };
  } catch {
    // not on this registry: fall through to what the name says, where the name is that regular
  }
  return platformFromOpencodeName(name);
}

let added = 0;
for (const [location, entry] of Object.entries(packages)) {
  for (const [name, spec] of Object.entries(entry.optionalDependencies ?? {})) {
    const key = `node_modules/${name}`;
    if (packages[key] || !/^\d+\.\d+\.\d+$/.test(spec)) continue;
    const { os, cpu, libc } = platformOf(name);
    if (!os && !cpu) throw new Error(`no platform metadata for ${name}; refusing to guess`);
    packages[key] = {
      version: spec,
      ...(entry.dev ? { dev: true } : {}),
      optional: true,
      ...(os ? { os: [].concat(os) } : {}),
      ...(cpu ? { cpu: [].concat(cpu) } : {}),
      ...(libc ? { libc: [].concat(libc) } : {}),
    };
    added++;
    console.log(`added ${key}@${spec} (from ${location || "root"})`);
  }
}
lock.packages = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a.localeCompare(b))));
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`${added} platform entries added`);

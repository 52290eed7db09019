// Types of bench/generate.mjs (plain JavaScript, so the benchmark child processes run it without a build).
import type { SessionMessage } from "../src/fork/types.js";

/** mulberry32: a deterministic random source in [0, 1). */
export function prng(seed: number): () => number;
/** The ordinary agentic history of `messageCount` messages. */
export function generateHistory(messageCount: number, seed?: number): SessionMessage[];
/** Every shape the benchmark reports: (target JSON bytes, seed) → messages. */
export const SHAPES: Record<string, (bytes: number, seed: number) => SessionMessage[]>;

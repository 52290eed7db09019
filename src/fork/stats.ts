// ProcessingStats helpers. Stats objects are values: every stage returns a fresh copy, so callers
// can keep the stats of an earlier stage without them changing under their feet.

import type { ProcessingStats } from "./types.js";

export function createEmptyStats(originalCount = 0): ProcessingStats {
  return {
    originalCount,
    finalCount: 0,
    totalChars: 0,
    removedMessages: 0,
    compactionDetected: false,
    compactionSliceIndex: -1,
    truncatedResults: 0,
    tierDistribution: { tier1: 0, tier2: 0, tier3: 0 },
    headTailApplied: 0,
    supersededResults: 0,
    clearedResults: 0,
    interruptedCalls: 0,
    omittedParts: 0,
    removedTurns: 0,
    clampedMessages: 0,
    malformedParts: 0,
    userAnswers: 0,
    filesRead: [],
    filesModified: [],
  };
}

/** A deep copy (the nested object and arrays too). */
export function cloneStats(stats: ProcessingStats): ProcessingStats {
  return {
    ...stats,
    tierDistribution: { ...stats.tierDistribution },
    filesRead: [...stats.filesRead],
    filesModified: [...stats.filesModified],
  };
}

export { createNativeForkHooks } from "./hooks.js";
export { NativeForkRegistry, type NativeFork, type NativeForkLookup } from "./registry.js";
export { ForkStore, forksDir, legacyForksDir } from "./store.js";
export { planNativeFork, nativePromptBody, nativeSummary, type NativeLaunch, type NativeForkOptions } from "./launch.js";
export { forkLine } from "./describe.js";
export { NATIVE_FORK_MAX_TOKENS, decideFork, nativeTokenCap } from "./decide.js";
export { maintainForkFiles, removeDroppedForks, sweepForkFiles } from "./sweep.js";

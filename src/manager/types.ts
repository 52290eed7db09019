// The task record lives in ../task-record.ts (shared root code: worktree/, prompts.ts and the store
// read it without importing the manager). The manager's rooms import it from here.
export * from "../task-record.js";

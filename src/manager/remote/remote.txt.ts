// What a remote task's launch, follow-ups and refusals say (the remote room's texts). Every one
// names the remote by its name only: never its URL, never its password. docs/remote.md quotes them.

import type { RemoteInfo } from "../../task-record.js";

export const REMOTE = {
  unknownRemote: (name: string, known: readonly string[]) =>
    `there is no remote "${name}" in the plugin option "remotes"${known.length ? ` (the remotes: ${known.join(", ")})` : " (none is set)"}`,
  noProject: "this OpenCode instance did not say which project it serves; a remote task cannot be made",
  noGitRemote: (gitRemote: string) =>
    `this repository has no git remote "${gitRemote}" (the one both clones share: option remotes.<name>.gitRemote); add it with git remote add ${gitRemote} <url>`,
  noDirectory: (name: string, directory: string) =>
    `remote "${name}" has no git repository at ${directory} (the directory does not exist there, or is no clone): nothing was created there. Make the clone there (git clone <url> ${directory}), or fix remotes.${name}.directory`,
  refusedLaunch: (name: string, why: string) => `remote "${name}" refused the launch: ${why}`,
  notSandboxed: (name: string) =>
    `remote "${name}" reports no OS sandbox for the task (text-level checks only), so it was not started there; set remotes.${name}.allowUnsandboxed: true to accept that, or install bubblewrap there`,
  forkLost: "its fork's context was built at its launch and kept in OpenCode's memory, which a restart emptied while it waited for its turn: launch it again",
  nativeBecomesText: "a native fork cannot share a prompt cache across machines: its context went to the remote as a text fork",
  /** the launch reply's line that says where the task runs */
  where: (remote: Pick<RemoteInfo, "name" | "directory">) =>
    `remote: it runs on "${remote.name}" (in ${remote.directory} there); its branch comes back here through the shared git remote when each run is committed`,
  cancelQueued: (name: string, why: string) =>
    `remote "${name}" cannot be reached now (${why}): the cancel is kept and sent as soon as it answers again; the task ends once it says so`,
  cancelSent: (name: string) => `the cancel was sent to remote "${name}"; the task ends (with its notice) once it says so`,
  steerUnreachable: (name: string, why: string) => `remote "${name}" cannot be reached now (${why}); nothing was sent: send it again once it is back`,
  steerRefused: (name: string, why: string) => `remote "${name}" refused it: ${why}`,
  resumeRefused: (id: string, name: string, why: string) => `Error: task ${id} was not resumed on remote "${name}": ${why}. The task is as it was.`,
  continueRefused: (id: string, name: string, why: string) =>
    `paused: task ${id} could not go on on remote "${name}" (${why}); it stays paused there and here: continue it again (/tasks, or resume) once it answers`,
  gone: (name: string) => `its child session on remote "${name}" no longer exists`,
  refusedBranch: (name: string, why: string) =>
    `its branch came back from remote "${name}" and was refused: ${why}; nothing of it was brought into this repository`,
  unreachableLine: (name: string, since: string, why: string) =>
    `remote: "${name}" unreachable since ${since} (${why}); it is read again as soon as it answers`,
  discardOpen: (id: string, name: string) =>
    `task ${id} still runs on remote "${name}": it was asked to cancel there. Discard it once it has ended (its notice comes then). Nothing was removed.`,
  answerUnreachable: (name: string, why: string) => `remote "${name}" cannot be reached now (${why}); the answer was not sent`,
} as const;

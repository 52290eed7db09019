// The one line that says which fork a child got, for the launch output, background_list and the notice.

export type NativeForkSummary = { kind: "native"; messages: number; estimatedTokens: number; rootSessionID: string; variant?: string; system?: string };
export type TextForkSummary = { kind: "text"; keptMessages: number; totalMessages: number; chars: number; fromCompaction: boolean; notNative?: string };

export function forkLine(fork: NativeForkSummary | TextForkSummary | undefined): string | undefined {
  if (!fork) return undefined;
  if (fork.kind === "native") return "native: shares your prompt cache";
  return `context copy: ${fork.keptMessages} of ${fork.totalMessages} messages, ${fork.chars} chars${fork.fromCompaction ? ", starting from the latest compaction summary" : ""}${fork.notNative ? ` (not native: ${fork.notNative})` : ""}`;
}

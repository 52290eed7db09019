// The host's types our code uses, re-exported from OpenCode's SDK (v2 types) and plugin packages,
// plus the few shapes of our own that describe what the host hands us.

import type { PluginInput } from "@opencode-ai/plugin";
import type { Message, Part } from "@opencode-ai/sdk/v2";

export type { Hooks, Plugin, PluginInput, ToolContext } from "@opencode-ai/plugin";
export type { AssistantMessage, CompactionPart, Event, FilePart, Message, Part, Session, SessionStatus, ToolPart, UserMessage } from "@opencode-ai/sdk/v2";

/** The v1 SDK client OpenCode hands to plugins. */
export type Client = PluginInput["client"];

/** One entry of `session.messages()`: exactly what the server returns, oldest first. */
export type SessionMessage = { info: Message; parts: Part[] };

/** A model as the host names it in a prompt body. */
export type ModelRef = { providerID: string; modelID: string };

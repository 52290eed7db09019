/**
 * Building blocks for the views, on the host's own Solid runtime: OpenCode maps the bare imports
 * `@opentui/solid` and `solid-js` to its copies, so these are external in the build (no JSX).
 */
import { createElement, createTextNode, effect, insert, insertNode, setProp } from "@opentui/solid";
import { safe, type Api } from "./host.js";
import type { Tone } from "./format.js";

export type El = ReturnType<typeof createElement>;

export function color(api: Pick<Api, "theme">, tone: Tone): unknown {
  return safe(() => {
    const t = api.theme.current;
    return { text: t.text, muted: t.textMuted, success: t.success, warning: t.warning, error: t.error, accent: t.accent }[tone];
  }, undefined);
}

/** A one-line text node whose content and colour follow `text()` / `tone()`. */
export function textLine(api: Pick<Api, "theme">, text: () => string, tone: () => Tone, onClick?: () => void): El {
  const el = createElement("text");
  setProp(el, "wrapMode", "none");
  insert(el, () => safe(text, ""));
  effect((prev: unknown) => setProp(el, "fg", color(api, safe(tone, "text")), prev));
  if (onClick) setProp(el, "onMouseDown", () => safe(onClick, undefined));
  return el;
}

/** `<text><b>title</b></text>` in the theme's text colour (like the host's sidebar sections). */
export function heading(api: Pick<Api, "theme">, title: string): El {
  const el = createElement("text");
  const b = createElement("b");
  insertNode(b, createTextNode(title));
  insertNode(el, b);
  effect((prev: unknown) => setProp(el, "fg", color(api, "text"), prev));
  return el;
}

export function box(props: Record<string, unknown> = {}): El {
  const el = createElement("box");
  for (const [k, v] of Object.entries(props)) setProp(el, k, v);
  return el;
}

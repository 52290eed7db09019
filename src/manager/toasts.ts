import { TOAST_MIN_INTERVAL_MS } from "../constants.js";
import type { Client } from "../host/client.js";
import { showToast } from "../host/tui.js";

type Variant = "info" | "success" | "warning" | "error";
type Toast = { title: string; message: string; variant: Variant };

/**
 * At most one toast per TOAST_MIN_INTERVAL_MS: a toast asked for sooner is held back, and only the
 * newest held-back toast is shown when the interval has passed (it says the latest state anyway).
 */
export class ToastThrottle {
  private lastShownAt = -Infinity;
  private held: Toast | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly client: Client,
    private readonly now: () => number = Date.now,
  ) {}

  show(toast: Toast): void {
    const wait = this.lastShownAt + TOAST_MIN_INTERVAL_MS - this.now();
    if (wait <= 0 && !this.timer) {
      this.send(toast);
      return;
    }
    this.held = toast;
    if (!this.timer) {
      this.timer = setTimeout(
        () => {
          this.timer = undefined;
          const next = this.held;
          this.held = undefined;
          if (next) this.send(next);
        },
        Math.max(wait, 0),
      );
      this.timer.unref?.();
    }
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.held = undefined;
  }

  private send(toast: Toast): void {
    this.lastShownAt = this.now();
    showToast(this.client, { ...toast, duration: 4000 });
  }
}

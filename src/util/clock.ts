// Time source passed into code that stamps or compares times, so tests can fix "now".
import { abortReason, sleep } from './backoff.js';

export interface Clock {
  now(): Date;
}

/**
 * A clock that also times waits: outage windows, lease expiry and renewals, retry backoffs. The
 * server's parts take one from composeServer (main.ts), so a test can move it past a window
 * instead of sleeping through it.
 */
export interface TimerClock extends Clock {
  /** Resolves once this clock has moved `ms` on; rejects with the signal's reason when it aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: TimerClock = { now: () => new Date(), sleep };

/** A clock that stays where it is set; `advance` moves it forward. For tests and dry runs. */
export function fixedClock(start: Date): Clock & { advance(ms: number): void; set(d: Date): void } {
  let t = start.getTime();
  return {
    now: () => new Date(t),
    advance: (ms: number) => {
      t += ms;
    },
    set: (d: Date) => {
      t = d.getTime();
    },
  };
}

export interface MovableClock extends TimerClock {
  /**
   * Jumps `ms` ahead: every wait that falls due within the jump ends now (in the order they fall
   * due), the others end that much sooner.
   */
  advance(ms: number): void;
  /** How far ahead of the wall clock this clock is. */
  offsetMs(): number;
}

interface Wait {
  at: number;
  timer: NodeJS.Timeout | undefined;
  fire(): void;
}

/**
 * The wall clock plus an offset that only grows: time passes as usual (nothing stalls when a test
 * does not move it), and `advance` skips a window at once.
 */
export function movableClock(): MovableClock {
  let offset = 0;
  const waits = new Set<Wait>();
  const nowMs = (): number => Date.now() + offset;
  const arm = (w: Wait): void => {
    clearTimeout(w.timer);
    w.timer = setTimeout(() => w.fire(), Math.max(0, w.at - nowMs()));
  };
  return {
    now: () => new Date(nowMs()),
    offsetMs: () => offset,
    sleep: (ms, signal) => new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortReason(signal));
        return;
      }
      const onAbort = (): void => {
        clearTimeout(w.timer);
        waits.delete(w);
        reject(abortReason(signal));
      };
      const w: Wait = {
        at: nowMs() + Math.max(0, ms),
        timer: undefined,
        fire: () => {
          // A timer can fire a little early by this clock's reckoning after an advance re-armed it.
          if (w.at > nowMs()) {
            arm(w);
            return;
          }
          waits.delete(w);
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      waits.add(w);
      signal?.addEventListener('abort', onAbort, { once: true });
      arm(w);
    }),
    advance: (ms) => {
      if (!(ms >= 0)) throw new RangeError(`a movable clock only moves forward (asked to move ${ms} ms)`);
      offset += ms;
      const now = nowMs();
      const due = [...waits].filter((w) => w.at <= now).sort((a, b) => a.at - b.at);
      for (const w of due) {
        clearTimeout(w.timer);
        w.fire();
      }
      for (const w of waits) arm(w);
    },
  };
}

import { syncBuiltinESMExports } from 'node:module';
import FakeTimers from '@sinonjs/fake-timers';
import { Prng } from './prng.ts';

/** Taken before any clock is installed: the one real wait the driver makes, to let promises settle. */
const realImmediate = globalThis.setImmediate;

/** Where every virtual clock starts (a fixed instant, so Date.now() replays too). */
const EPOCH = Date.UTC(2026, 0, 1);

/**
 * Turns of the real event loop with no timer left and the work not done before it counts as hung.
 * Promises settle within one turn; a few more allow for callbacks that are not timers.
 */
const IDLE_TURNS = 50;

/** The work stopped: nothing left to wait for, and it never finished. */
export class VirtualTimeHang extends Error {
  readonly at: number;

  constructor(at: number) {
    super(`hung at virtual ${at} ms: no timer pending and the work never finished`);
    this.at = at;
  }
}

/**
 * Runs `work` on a virtual clock of its own: the shipped code's timers (setTimeout, setImmediate,
 * setInterval and node:timers/promises), Date and performance are faked, and Math.random draws
 * from `seed`. The driver fires one timer at a time, in time order, and lets every promise settle
 * between two (as Node does between two timer callbacks), so the seed alone replays the
 * interleaving, not only the world, and a wait costs no real time. Timers the work left behind are
 * dropped with the clock.
 */
export async function onVirtualTime<T>(seed: number, work: () => Promise<T>): Promise<T> {
  const clock = FakeTimers.install({
    now: EPOCH,
    toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'setInterval', 'clearInterval', 'Date', 'performance'],
  });
  // fake-timers replaces node:timers/promises' functions on the module object; an ESM named import
  // (retry.ts's sleep) sees them only once the builtin's exports are synced.
  syncBuiltinESMExports();
  const random = Math.random;
  const prng = new Prng(seed ^ 0x5eed);
  Math.random = () => prng.next();
  try {
    let done = false;
    const result = work().finally(() => (done = true));
    // Keeps an early rejection from being reported as unhandled while the clock runs.
    result.catch(() => undefined);
    let idle = 0;
    while (!done) {
      await new Promise((resolve) => realImmediate(resolve));
      if (done) break;
      if (clock.countTimers() === 0) {
        if (++idle > IDLE_TURNS) throw new VirtualTimeHang(clock.now - EPOCH);
        continue;
      }
      idle = 0;
      clock.next();
    }
    return await result;
  } finally {
    clock.uninstall();
    syncBuiltinESMExports();
    Math.random = random;
  }
}

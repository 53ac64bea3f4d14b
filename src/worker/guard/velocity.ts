/**
 * Velocity limits per destination (issue 25, item 2): how many recipients a number prefix
 * (calling code + the first digits of the national number) and a region may get per minute and
 * per day, against SMS pumping (bursts of codes to a premium range the fraudster is paid for).
 * A key over a limit is blocked for `blockMs`: every recipient to it is refused meanwhile.
 *
 * Pure decisions over bounded state: the caller passes the time; effects (metrics, logs, results)
 * are elsewhere (velocity-report.ts, velocity-verdict.ts).
 *
 * Deployment-wide, like RATE_LIMIT_PER_SECOND: each process applies the share of the limits its
 * partitions make (`setShare`, owned ÷ total, rounded down, at least 1) to the recipients it sees.
 * Commands are spread over partitions by key, so a prefix's traffic reaches each process in about
 * its share: the processes together let through at most the limit (the shares add up to it, or
 * less), and less when a prefix's commands are keyed onto few partitions (then only the owners'
 * shares apply: at worst owned ÷ total of the limit, e.g. 1/12 with one of 12 partitions).
 */
import type { Destination } from '../../contracts/recipients.ts';
import { SlidingCount, type SlidingShape } from './sliding-count.ts';

/**
 * `enforce`: a recipient over a limit is refused. `hold`: the command waits (up to `holdMaxMs`, or
 * its expiry) for the limit to let it through, then is refused as under `enforce`. `monitor`: it
 * is only counted and logged, and sent. (No limit set: off.)
 */
export const VELOCITY_MODES = ['enforce', 'hold', 'monitor'] as const;
export type VelocityMode = (typeof VELOCITY_MODES)[number];

export const VELOCITY_KINDS = ['prefix', 'region'] as const;
export type VelocityKind = (typeof VELOCITY_KINDS)[number];
export const VELOCITY_WINDOWS = ['minute', 'day'] as const;
export type VelocityWindow = (typeof VELOCITY_WINDOWS)[number];

/** The rule that refused a recipient: the variable that holds its limit. */
export type VelocityRule = `VELOCITY_${'PREFIX' | 'REGION'}_PER_${'MINUTE' | 'DAY'}`;

export function velocityRuleName(kind: VelocityKind, window: VelocityWindow): VelocityRule {
  return `VELOCITY_${kind === 'prefix' ? 'PREFIX' : 'REGION'}_PER_${window === 'minute' ? 'MINUTE' : 'DAY'}`;
}

/** Result error code of a command refused by the velocity limits alone. */
export const DESTINATION_VELOCITY_LIMITED = 'DESTINATION_VELOCITY_LIMITED';

/** A velocity limit at most (recipients per window, deployment-wide): VELOCITY_* and a tenant's alike. */
export const MAX_VELOCITY_LIMIT = 100_000_000;

/** Most national digits in a prefix: with the calling code, a number range, not a number. */
export const MAX_PREFIX_DIGITS = 8;

export interface VelocitySettings {
  /** @defaultValue 'enforce' */
  readonly mode: VelocityMode;
  /** National digits after the calling code that make a prefix (0: the calling code alone). @defaultValue 3 */
  readonly prefixDigits: number;
  /** Deployment-wide recipients per window; 0: no limit. @defaultValue 0 each */
  readonly limits: Readonly<Record<VelocityKind, Readonly<Record<VelocityWindow, number>>>>;
  /**
   * Dynamic limits: a key's limit is max(its static limit, multiple × its trailing mean count per
   * window: over the last hour for per-minute limits, the last week for per-day ones). 0: static.
   * @defaultValue 0
   */
  readonly dynamicMultiple: number;
  /** How long a key over a limit stays blocked. @defaultValue 900000 (15 min) */
  readonly blockMs: number;
  /** Most keys (prefixes and regions) tracked; the least recently seen is forgotten first. @defaultValue 10000 */
  readonly maxTrackedKeys: number;
  /** Under `hold`: how long a command over a limit waits before it is refused. @defaultValue 60000 */
  readonly holdMaxMs: number;
}

export const DEFAULT_VELOCITY_SETTINGS = {
  mode: 'enforce',
  prefixDigits: 3,
  limits: { prefix: { minute: 0, day: 0 }, region: { minute: 0, day: 0 } },
  dynamicMultiple: 0,
  blockMs: 900_000,
  maxTrackedKeys: 10_000,
  holdMaxMs: 60_000,
} as const satisfies VelocitySettings;

/** Shapes of the windows: 10 s buckets for a minute (counts the last 60–70 s), 1 h for a day (24–25 h). */
export const WINDOW_SHAPES: Readonly<Record<VelocityWindow, SlidingShape>> = {
  minute: { windowMs: 60_000, buckets: 6, trailingMs: 3_600_000 },
  day: { windowMs: 86_400_000, buckets: 24, trailingMs: 7 * 86_400_000 },
};

/**
 * Memory of one tracked key, at most: two windows (7 + 25 counters, 4 bytes each, and their
 * objects), the key string and the Map entry. Stated in the docs as MAX_TRACKED_KEYS × this.
 */
export const BYTES_PER_TRACKED_KEY = 1_024;

export function velocityEnabled(settings: VelocitySettings): boolean {
  const { prefix, region } = settings.limits;
  return prefix.minute + prefix.day + region.minute + region.day > 0;
}

/** `+86 138`: the calling code and the first `digits` national digits (all of them when shorter). */
export function destinationPrefix(callingCode: string, national: string, digits: number): string {
  return digits === 0 ? `+${callingCode}` : `+${callingCode} ${national.slice(0, digits)}`;
}

/** One recipient over a limit (refused under `enforce`, only reported under `monitor`). */
export interface VelocityRefusal {
  readonly field: string;
  readonly region: string;
  readonly prefix: string;
  readonly kind: VelocityKind;
  readonly rule: VelocityRule;
  /** The limit this process applied (its share, or the dynamic limit). */
  readonly limit: number;
  /** The deployment-wide static limit. */
  readonly deploymentLimit: number;
  readonly blockedUntil: number;
  /** True only for the recipient that started the block: the block is logged and counted once. */
  readonly newlyBlocked: boolean;
  /** The tenant whose limit it is (TENANT_LIMITS); absent for the deployment's (VELOCITY_*). */
  readonly tenant?: string;
}

interface Block {
  readonly untilMs: number;
  readonly window: VelocityWindow;
  readonly limit: number;
}

interface Tracked {
  readonly kind: VelocityKind;
  readonly region: string;
  readonly windows: Record<VelocityWindow, SlidingCount>;
  block?: Block | undefined;
}

/** A key currently blocked, for the gauge: by kind and region (a bounded label set). */
export interface BlockedKey {
  readonly kind: VelocityKind;
  readonly region: string;
}

export class VelocityGuard {
  readonly #s: VelocitySettings;
  readonly #tracked = new Map<string, Tracked>();
  /** The tracked keys with a block (expired ones are dropped when `blocked` looks). */
  readonly #blocks = new Map<string, Tracked>();
  #share = 1;

  constructor(settings: VelocitySettings) {
    this.#s = settings;
  }

  get settings(): VelocitySettings {
    return this.#s;
  }

  /** This process's part of the deployment (owned ÷ total partitions, in (0, 1]), anew at every rebalance. */
  setShare(fraction: number): void {
    if (!(fraction > 0 && fraction <= 1)) throw new RangeError(`share must be in (0, 1] (got ${fraction})`);
    this.#share = fraction;
  }

  get trackedKeys(): number {
    return this.#tracked.size;
  }

  /**
   * The recipients of one command over a limit (or to a blocked key), in order; undefined for
   * those within. Counts nothing: `commit` counts the recipients that are then sent to. Recipients
   * of the same command count against each other. A key found over a limit is blocked from now.
   */
  screen(destinations: readonly Destination[], nowMs: number): (VelocityRefusal | undefined)[] {
    const pending = new Map<string, number>();
    return destinations.map((d) => {
      const prefix = destinationPrefix(d.callingCode, d.national, this.#s.prefixDigits);
      const keys = this.#keysOf(d, prefix);
      for (const [key, kind] of keys) {
        const refusal = this.#check(key, kind, d, prefix, (pending.get(key) ?? 0) + 1, nowMs);
        if (refusal !== undefined) return refusal;
      }
      for (const [key] of keys) pending.set(key, (pending.get(key) ?? 0) + 1);
      return undefined;
    });
  }

  /** Counts the recipients sent to (those `screen` let through, or all of them under `monitor`). */
  commit(destinations: readonly Destination[], nowMs: number): void {
    for (const d of destinations) {
      for (const [key, kind] of this.#keysOf(d, destinationPrefix(d.callingCode, d.national, this.#s.prefixDigits))) {
        const tracked = this.#track(key, kind, d.region, nowMs);
        tracked.windows.minute.add(nowMs);
        tracked.windows.day.add(nowMs);
      }
    }
  }

  /** The keys blocked at `nowMs`. */
  blocked(nowMs: number): BlockedKey[] {
    const out: BlockedKey[] = [];
    for (const [key, t] of this.#blocks) {
      if (t.block !== undefined && t.block.untilMs > nowMs) out.push({ kind: t.kind, region: t.region });
      else this.#blocks.delete(key);
    }
    return out;
  }

  #keysOf(d: Destination, prefix: string): [string, VelocityKind][] {
    const { limits } = this.#s;
    const keys: [string, VelocityKind][] = [];
    if (limits.prefix.minute + limits.prefix.day > 0) keys.push([`p:${prefix}`, 'prefix']);
    if (limits.region.minute + limits.region.day > 0) keys.push([`r:${d.region}`, 'region']);
    return keys;
  }

  #check(key: string, kind: VelocityKind, d: Destination, prefix: string, adding: number, nowMs: number): VelocityRefusal | undefined {
    const tracked = this.#track(key, kind, d.region, nowMs);
    const refusal = (block: Block, newlyBlocked: boolean): VelocityRefusal => ({
      field: d.field,
      region: d.region,
      prefix,
      kind,
      rule: velocityRuleName(kind, block.window),
      limit: block.limit,
      deploymentLimit: this.#s.limits[kind][block.window],
      blockedUntil: block.untilMs,
      newlyBlocked,
    });
    if (tracked.block !== undefined && tracked.block.untilMs > nowMs) return refusal(tracked.block, false);
    tracked.block = undefined;
    for (const window of ['minute', 'day'] as const) {
      const limit = this.#limitOf(kind, window, tracked, nowMs);
      if (limit === undefined) continue;
      if (tracked.windows[window].count(nowMs) + adding > limit) {
        tracked.block = { untilMs: nowMs + this.#s.blockMs, window, limit };
        this.#blocks.set(key, tracked);
        return refusal(tracked.block, true);
      }
    }
    return undefined;
  }

  /** This process's limit for a key and window, or undefined when that window has none. */
  #limitOf(kind: VelocityKind, window: VelocityWindow, tracked: Tracked, nowMs: number): number | undefined {
    const deployment = this.#s.limits[kind][window];
    if (deployment === 0) return undefined;
    const share = Math.max(1, Math.floor(deployment * this.#share));
    if (this.#s.dynamicMultiple === 0) return share;
    return Math.max(share, Math.floor(this.#s.dynamicMultiple * tracked.windows[window].mean(nowMs)));
  }

  /** The key's state, made if new; the Map's order is the order of last use, so the first is the one to forget. */
  #track(key: string, kind: VelocityKind, region: string, nowMs: number): Tracked {
    let tracked = this.#tracked.get(key);
    if (tracked === undefined) {
      tracked = {
        kind,
        region,
        windows: { minute: new SlidingCount(WINDOW_SHAPES.minute, nowMs), day: new SlidingCount(WINDOW_SHAPES.day, nowMs) },
      };
      while (this.#tracked.size >= this.#s.maxTrackedKeys) {
        const oldest = this.#tracked.keys().next();
        if (oldest.done === true) break;
        this.#tracked.delete(oldest.value);
        this.#blocks.delete(oldest.value);
      }
    } else this.#tracked.delete(key);
    this.#tracked.set(key, tracked);
    return tracked;
  }
}

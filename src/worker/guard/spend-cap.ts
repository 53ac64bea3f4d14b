/**
 * Spend caps (issue 25, item 3): at most so much charged per hour and per day, deployment-wide,
 * counted from what the service says it charged (each recipient's `price`, a decimal string,
 * read into integer micro-units: never a float). Pure decisions over bounded state; the caller
 * passes the time, and the waiting is in spend-holds.ts.
 *
 * Before a send, its cost is estimated from recent prices and reserved; the send may go only if
 * what the window has spent, what is reserved by sends in flight and its estimate fit under the
 * cap. After it, the reservation is replaced by what was charged. So the window can overshoot the
 * cap only by what sends in flight cost beyond their estimates:
 *   overshoot ≤ Σ over sends in flight of (charged − estimate)⁺
 * which is 0 while prices stay at or under the highest of the region's last PRICES_KEPT unit
 * prices. A region never priced is estimated at the highest unit price seen anywhere; until a
 * first price is known, sends go one at a time, so the bound is then one command's cost, plus the
 * cost of each of those first sends whose outcome stayed unknown. A send whose outcome is unknown
 * (it may have been charged) counts its estimate as spent; before any price above zero it has none, and is
 * counted at the first price learned, as spent at its own time (the shipped-lane simulation found
 * two such sends charged past a cap, which counted them not at all).
 *
 * Deployment-wide like RATE_LIMIT_PER_SECOND: each process caps its own spend at its partitions'
 * share (cap × owned ÷ total, rounded down); the shares add up to at most the cap. A process whose
 * partitions carry more of the spend than their share pauses sooner (the deployment then spends
 * less than the cap, never more).
 */
import type { SendFootprint } from '../../contracts/validate.ts';
import type { MessageReport } from '../../provider/types.ts';
import { toMicros } from '../../metrics/metrics.ts';
import { SpendWindow } from './spend-window.ts';

export const SPEND_WINDOWS = ['hour', 'day'] as const;
export type SpendWindowName = (typeof SPEND_WINDOWS)[number];

export interface SpendCapSettings {
  /** Deployment-wide caps, decimal strings in the account currency (e.g. "25.5"); undefined: no cap on that window. @defaultValue none */
  readonly caps: Readonly<Record<SpendWindowName, string | undefined>>;
  /** Length of the cap's hour (shortened for tests and demos); its day is 24 of them. @defaultValue 3600000 */
  readonly hourMs: number;
}

export const DEFAULT_SPEND_CAP_SETTINGS = { caps: { hour: undefined, day: undefined }, hourMs: 3_600_000 } as const satisfies SpendCapSettings;

/** Unit prices kept per region for the estimate (the highest of them is used). */
export const PRICES_KEPT = 16;
/** Regions whose prices are kept: every region libphonenumber knows fits. */
export const MAX_PRICED_REGIONS = 300;
/**
 * Unknown-outcome sends kept, each with its time, while no price above zero is known. Past it the oldest two
 * merge at the later one's time: no unit is lost, some only count later than they went, so spend is
 * over-counted (held for longer), never under.
 */
export const MAX_UNPRICED_ENTRIES = 300;

/** Largest spend cap: a billion units of the account currency (its micro-units stay exact in a Number). */
export const MAX_SPEND_CAP = 1_000_000_000n;

/**
 * A spend cap as written (SPEND_CAP_*, TENANT_LIMITS): a positive decimal of at most six
 * fractional digits (the service's precision), at most MAX_SPEND_CAP, in micro-units; undefined
 * when it is none of that.
 */
export function spendCapMicros(text: string): bigint | undefined {
  const match = /^(\d{1,10})(?:\.(\d{1,6}))?$/.exec(text);
  const micros = match === null ? undefined : BigInt(match[1] ?? '0') * 1_000_000n + BigInt((match[2] ?? '').padEnd(6, '0'));
  return micros === undefined || micros <= 0n || micros > MAX_SPEND_CAP * 1_000_000n ? undefined : micros;
}

export function spendCapEnabled(settings: SpendCapSettings): boolean {
  return settings.caps.hour !== undefined || settings.caps.day !== undefined;
}

export type SpendAdmission =
  | { readonly kind: 'go'; readonly estimate: bigint }
  /**
   * Wait until `untilMs` (a window frees room), or until a send in flight settles (`untilMs`
   * undefined). `priceUnknown`: no cap is reached; no price is known yet, and the first sends go one
   * at a time until an answer tells one (not a pause of sending).
   */
  | { readonly kind: 'wait'; readonly window: SpendWindowName; readonly untilMs: number | undefined; readonly priceUnknown?: true };

export class SpendCap {
  /** The caps in micro-units. */
  readonly #caps: Readonly<Record<SpendWindowName, bigint | undefined>>;
  readonly #windows: Record<SpendWindowName, SpendWindow>;
  readonly #prices = new Map<string, bigint[]>();
  #highest = 0n;
  #reserved = 0n;
  #inFlight = 0;
  /**
   * Sends made before any price above zero was known whose outcome stayed unknown (their time, their billed
   * units), oldest first, at most MAX_UNPRICED_ENTRIES: charged at the first price learned.
   */
  readonly #unpriced: { atMs: number; units: number }[] = [];
  readonly #hourMs: number;
  #owned = 1;
  #total = 1;

  constructor(settings: SpendCapSettings, nowMs: number) {
    const micros = (cap: string | undefined): bigint | undefined => {
      if (cap === undefined) return undefined;
      const value = toMicros(cap);
      if (value === undefined || value <= 0n)
        throw new RangeError(`a spend cap must be a positive decimal of at most six fractional digits (got ${cap.slice(0, 32)})`);
      return value;
    };
    this.#caps = { hour: micros(settings.caps.hour), day: micros(settings.caps.day) };
    this.#hourMs = settings.hourMs;
    this.#windows = { hour: this.#newWindow('hour', nowMs), day: this.#newWindow('day', nowMs) };
  }

  setShare(owned: number, total: number): void {
    this.#total = Math.max(1, total);
    this.#owned = Math.min(this.#total, Math.max(1, owned));
  }

  /** This process's cap on a window: its partitions' share of the deployment's. */
  cap(window: SpendWindowName): bigint | undefined {
    const cap = this.#caps[window];
    return cap === undefined ? undefined : (cap * BigInt(this.#owned)) / BigInt(this.#total);
  }

  spent(window: SpendWindowName, nowMs: number): bigint {
    return this.#windows[window].total(nowMs);
  }

  get reserved(): bigint {
    return this.#reserved;
  }

  /** Unknown-outcome sends made before any price above zero, still waiting for one (at most MAX_UNPRICED_ENTRIES). */
  get unpricedEntries(): number {
    return this.#unpriced.length;
  }

  /** The expected charge of a send: its billed units × the highest recent unit price of its regions. */
  estimate(footprint: SendFootprint): bigint | undefined {
    let unit: bigint | undefined;
    for (const region of footprint.regions) {
      const recent = this.#prices.get(region);
      const price = recent === undefined ? (this.#highest > 0n ? this.#highest : undefined) : recent.reduce((a, b) => (b > a ? b : a), 0n);
      if (price !== undefined && (unit === undefined || price > unit)) unit = price;
    }
    if (unit === undefined && this.#highest > 0n) unit = this.#highest;
    return unit === undefined ? undefined : unit * BigInt(Math.max(1, footprint.costUnits));
  }

  /** Whether a send of this footprint may go now; a `go` must be followed by `reserve` at once. */
  admit(footprint: SendFootprint, nowMs: number): SpendAdmission {
    const estimate = this.estimate(footprint);
    // No price known yet: one send at a time until the first answer tells one.
    if (estimate === undefined && this.#inFlight > 0) return { kind: 'wait', window: this.#firstCapped(), untilMs: undefined, priceUnknown: true };
    const cost = estimate ?? 0n;
    for (const window of SPEND_WINDOWS) {
      const cap = this.cap(window);
      if (cap === undefined) continue;
      const spent = this.#windows[window];
      if (spent.total(nowMs) + this.#reserved + cost <= cap) continue;
      // Too big to ever fit with others: it goes alone, when nothing else is spent or in flight.
      const room = cap - this.#reserved - cost;
      if (room < 0n) {
        if (this.#inFlight > 0) return { kind: 'wait', window, untilMs: undefined };
        if (spent.total(nowMs) === 0n) continue;
        return { kind: 'wait', window, untilMs: spent.timeWhenAtMost(0n, nowMs) };
      }
      return { kind: 'wait', window, untilMs: spent.timeWhenAtMost(room, nowMs) };
    }
    return { kind: 'go', estimate: cost };
  }

  /** A send is going with this estimate. */
  reserve(estimate: bigint): void {
    this.#reserved += estimate;
    this.#inFlight += 1;
  }

  /**
   * A send went, with `estimate` reserved: `charged` is what the service charged (its reports);
   * `'maybe'` when it may have been charged without saying (the estimate is counted); `'none'`
   * when surely not sent. A `'maybe'` before any price above zero is known has no estimate: its `units` are
   * counted at the first price learned (the highest unit price then), as spent at this call's
   * `nowMs`, so the sends after it are held for it while it is in a window.
   */
  settle(estimate: bigint, charged: readonly MessageReport[] | 'maybe' | 'none', nowMs: number, units = 1): bigint {
    this.#reserved -= estimate;
    this.#inFlight = Math.max(0, this.#inFlight - 1);
    let amount = 0n;
    let unpriced = 0n;
    if (charged === 'maybe') {
      amount = estimate;
      // Before any price above zero: there was no estimate to count (only zero prices known, a
      // region without one had none either; a free region's send counted later is over, never under).
      if (estimate === 0n && this.#highest === 0n) this.#keepUnpriced(nowMs, Math.max(1, units));
    } else if (charged !== 'none') {
      amount = this.#learn(charged);
      if (this.#unpriced.length > 0 && this.#highest > 0n) unpriced = this.#chargeUnpriced(this.#highest, nowMs);
    }
    if (amount > 0n) for (const window of SPEND_WINDOWS) this.#windows[window].add(nowMs, amount);
    return amount + unpriced;
  }

  #firstCapped(): SpendWindowName {
    return this.#caps.hour === undefined ? 'day' : 'hour';
  }

  #newWindow(window: SpendWindowName, nowMs: number): SpendWindow {
    return window === 'hour' ? new SpendWindow(this.#hourMs, 60, nowMs) : new SpendWindow(this.#hourMs * 24, 24, nowMs);
  }

  #keepUnpriced(nowMs: number, units: number): void {
    // Sends this old have left every window (the day's forgets spend at most one of its hours late).
    while ((this.#unpriced[0]?.atMs ?? Infinity) <= nowMs - this.#hourMs * 25) this.#unpriced.shift();
    const oldest = this.#unpriced[0];
    const next = this.#unpriced[1];
    if (this.#unpriced.length >= MAX_UNPRICED_ENTRIES && oldest !== undefined && next !== undefined) {
      next.units += oldest.units;
      next.atMs = Math.max(next.atMs, oldest.atMs);
      this.#unpriced.shift();
    }
    this.#unpriced.push({ atMs: nowMs, units });
  }

  /**
   * Charges the unpriced sends at `unit` each, as spent at their own times: the windows are rebuilt
   * from them, as each had been added when it went, so those older than a window are out of it.
   * Until a first price nothing was charged, so the windows hold nothing to lose; were one not
   * empty, they are charged now instead (counted longer, never less). Returns the amount charged.
   */
  #chargeUnpriced(unit: bigint, nowMs: number): bigint {
    const entries = this.#unpriced.splice(0);
    let charged = 0n;
    for (const { units } of entries) charged += unit * BigInt(units);
    for (const name of SPEND_WINDOWS) {
      if (this.#windows[name].total(nowMs) !== 0n) {
        this.#windows[name].add(nowMs, charged);
        continue;
      }
      const window = this.#newWindow(name, entries[0]?.atMs ?? nowMs);
      for (const { atMs, units } of entries) window.add(atMs, unit * BigInt(units));
      this.#windows[name] = window;
    }
    return charged;
  }

  /** Sums the reports' prices and keeps each region's unit price (price ÷ billed messages, rounded up). */
  #learn(messages: readonly MessageReport[]): bigint {
    let sum = 0n;
    for (const m of messages) {
      const micros = toMicros(m.price);
      if (micros === undefined || micros < 0n) continue;
      sum += micros;
      const count = BigInt(Math.max(1, m.messageCount));
      const unit = (micros + count - 1n) / count;
      let recent = this.#prices.get(m.regionCode);
      if (recent === undefined) {
        if (this.#prices.size >= MAX_PRICED_REGIONS) continue;
        this.#prices.set(m.regionCode, (recent = []));
      }
      recent.push(unit);
      if (recent.length > PRICES_KEPT) recent.shift();
      if (unit > this.#highest) this.#highest = unit;
    }
    return sum;
  }
}

/**
 * Figures of a run in which the group changes under open-loop load (issue 23: rolling update,
 * scale 1 → 3 → 1, start-up), computed from what the run saw and nothing else, so they can be
 * unit-tested. A phase is a window of publish times: a command belongs to the phase it was
 * published in, whenever it was sent.
 */
import { machineNote, type MachineLoad } from './machine-cpu.ts';
import { fmt, ms } from './markdown.ts';
import { longestGap, percentile, sortedNumbers } from './stats.ts';

/** The "done when" for a change (rolling update, scale 1 → 3 → 1). */
export const CHANGE_TARGETS = { timeToSendP99Ms: 250, timeToSendMaxMs: 1_000, silenceMs: 1_000 } as const;
/** The bound on the deployment-wide rate limit across a change: within ±5%. */
export const RATE_TOLERANCE = 0.05;
/** Start-up: time to send p99 over the first seconds after /readyz ≤ this × the steady p99. */
export const START_UP_FACTOR = 2;

export interface ChangeObservations {
  /** Publish time per commandId. */
  readonly publishedAt: ReadonlyMap<string, number>;
  /** Receive time at the service of each command's first request. */
  readonly firstRequest: ReadonlyMap<string, number>;
  /** Receive time of every request at the service, sorted. */
  readonly requestTimes: readonly number[];
  /** Outcomes of every result per commandId (a command with none is lost). */
  readonly outcomes: ReadonlyMap<string, readonly string[]>;
  /** Commands the service accepted (charged) more than once. */
  readonly sentTwice: ReadonlySet<string>;
}

export interface PhaseFigures {
  readonly from: number;
  readonly to: number;
  readonly published: number;
  /** Commands of the phase that reached the service (invalid ones never do). */
  readonly sent: number;
  readonly timeToSendP50Ms: number;
  readonly timeToSendP99Ms: number;
  readonly timeToSendMaxMs: number;
  /** Longest time in [from, to] without any request reaching the service. */
  readonly longestSilenceMs: number;
  readonly unknown: number;
  readonly sentTwice: number;
  readonly lost: number;
  /** How busy the whole machine was over the phase (machine-cpu.ts), when it was sampled. */
  readonly machine?: MachineLoad;
}

/** The figures of the commands published in [from, to). */
export function phaseFigures(o: ChangeObservations, from: number, to: number): PhaseFigures {
  const toSend: number[] = [];
  let published = 0;
  let unknown = 0;
  let twice = 0;
  let lost = 0;
  for (const [id, at] of o.publishedAt) {
    if (at < from || at >= to) continue;
    published += 1;
    const received = o.firstRequest.get(id);
    if (received !== undefined) toSend.push(received - at);
    const outcomes = o.outcomes.get(id) ?? [];
    if (outcomes.length === 0) lost += 1;
    if (outcomes.includes('UNKNOWN')) unknown += 1;
    if (o.sentTwice.has(id)) twice += 1;
  }
  const sorted = sortedNumbers(toSend);
  return {
    from,
    to,
    published,
    sent: sorted.length,
    timeToSendP50Ms: percentile(sorted, 50),
    timeToSendP99Ms: percentile(sorted, 99),
    timeToSendMaxMs: sorted.at(-1) ?? Number.NaN,
    longestSilenceMs: longestGap(o.requestTimes, from, to),
    unknown,
    sentTwice: twice,
    lost,
  };
}

export interface RateFigures {
  readonly limitPerSecond: number;
  /** Requests received in each whole second of the window. */
  readonly perSecond: readonly number[];
  readonly meanPerSecond: number;
  readonly maxPerSecond: number;
}

/** Requests per whole second of [from, to) (a partial last second is left out), against `limit`. */
export function rateFigures(requestTimes: readonly number[], from: number, to: number, limit: number): RateFigures {
  const buckets = Array.from({ length: Math.max(0, Math.floor((to - from) / 1000)) }, () => 0);
  for (const t of requestTimes) {
    const i = Math.floor((t - from) / 1000);
    if (i >= 0 && i < buckets.length) buckets[i] = (buckets[i] ?? 0) + 1;
  }
  const total = buckets.reduce((a, b) => a + b, 0);
  return {
    limitPerSecond: limit,
    perSecond: buckets,
    meanPerSecond: buckets.length === 0 ? Number.NaN : total / buckets.length,
    maxPerSecond: buckets.length === 0 ? Number.NaN : Math.max(...buckets),
  };
}

const verdict = (ok: boolean): string => (ok ? 'MET' : 'NOT MET');

/** Whether the rate limit's mean across the change is within ±5% of it. */
export function rateMet(r: RateFigures): boolean {
  return Math.abs(r.meanPerSecond - r.limitPerSecond) <= RATE_TOLERANCE * r.limitPerSecond;
}

/**
 * Whether a change phase meets every bound of the issue. With a binding rate limit (`rate`) the
 * open loop queues for as long as the run lasts, so the time to send measures the queue: the
 * rate's own bound replaces it.
 */
export function changeTargetsMet(p: PhaseFigures, rate?: RateFigures): boolean {
  const timeToSend =
    rate === undefined ? p.timeToSendP99Ms <= CHANGE_TARGETS.timeToSendP99Ms && p.timeToSendMaxMs <= CHANGE_TARGETS.timeToSendMaxMs : rateMet(rate);
  return timeToSend && p.longestSilenceMs <= CHANGE_TARGETS.silenceMs && p.unknown === 0 && p.sentTwice === 0 && p.lost === 0;
}

/** One line of a phase's figures. */
export function phaseLine(name: string, p: PhaseFigures): string {
  return `- ${name} (${fmt((p.to - p.from) / 1000, 1)} s, ${fmt(p.published)} published, ${fmt(p.sent)} reached the service): time to send p50 ${ms(p.timeToSendP50Ms)}, p99 ${ms(p.timeToSendP99Ms)}, max ${ms(p.timeToSendMaxMs)}; longest silence ${ms(p.longestSilenceMs)}; UNKNOWN ${p.unknown}, sent twice ${p.sentTwice}, lost ${p.lost}${machineNote(p.machine)}`;
}

/** The change phase's verdict per target. */
export function changeVerdictLines(p: PhaseFigures): string[] {
  const t = CHANGE_TARGETS;
  return [
    `- targets during the change: time to send p99 ${ms(p.timeToSendP99Ms)} ≤ ${t.timeToSendP99Ms} ms: ${verdict(p.timeToSendP99Ms <= t.timeToSendP99Ms)}; max ${ms(p.timeToSendMaxMs)} ≤ ${fmt(t.timeToSendMaxMs)} ms: ${verdict(p.timeToSendMaxMs <= t.timeToSendMaxMs)}; longest silence ${ms(p.longestSilenceMs)} ≤ ${fmt(t.silenceMs)} ms: ${verdict(p.longestSilenceMs <= t.silenceMs)}; 0 UNKNOWN: ${verdict(p.unknown === 0)}; 0 sent twice: ${verdict(p.sentTwice === 0)}; 0 lost: ${verdict(p.lost === 0)}`,
  ];
}

/** The rate limit's line: the mean within ±5% of the limit, and the busiest second. */
export function rateLine(r: RateFigures): string {
  const ok = rateMet(r);
  return `- deployment-wide rate limit RATE_LIMIT_PER_SECOND=${r.limitPerSecond} across the change (${r.perSecond.length} whole seconds, requests at the service): mean ${fmt(r.meanPerSecond, 1)}/s (target within ±${fmt(100 * RATE_TOLERANCE)}%): ${verdict(ok)}; busiest second ${fmt(r.maxPerSecond)} (${r.maxPerSecond <= r.limitPerSecond * (1 + RATE_TOLERANCE) ? 'not above' : 'above'} the limit + 5%)`;
}

/** Start-up: the first seconds after /readyz against the steady state of the same run. */
export function startUpLine(firstP99Ms: number, steadyP99Ms: number, firstSeconds: number): string {
  const ok = firstP99Ms <= START_UP_FACTOR * steadyP99Ms;
  return `- start-up: time to send p99 over the first ${firstSeconds} s after /readyz ${ms(firstP99Ms)} = ${fmt(firstP99Ms / steadyP99Ms, 1)}× the steady p99 ${ms(steadyP99Ms)} (target ≤ ${START_UP_FACTOR}×): ${verdict(ok)}`;
}

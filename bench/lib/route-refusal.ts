/**
 * The route-refusal run (issue 20, item 7): the open loop at the same rate and upstream latency,
 * with a small share of its commands (default 1%, picked from the seed) sent to a route the
 * service refuses — a single-recipient text to an AU mobile, which the sandbox answers `101301`
 * (no valid upstream; src/sandbox/pricing.ts). A worker that pauses only that route keeps the
 * other commands flowing; one that pauses everything on a 101301 holds them all. Reported against
 * the all-routable run (the ledger-on open loop of the same invocation, or one of its own):
 *   routable commands (neither refused-route nor invalid): time to send and end to end as in the
 *     open loop (over those published after the warm-up), and their outcomes (all of them);
 *   refused commands: their outcomes and how many requests each made at the service (the
 *     sandbox's request log, by correlation id = commandId).
 */
import type { CommandResult } from '../../src/contracts/result.ts';
import { REFUSED_REGION, REFUSED_ROUTE_RECIPIENT, type OpenLoopKind } from './commands.ts';
import { fmt, ms } from './markdown.ts';
import { inFlightCapacityPerSecond, observeOpenLoop, windowTimings, type OpenLoopContext, type OpenLoopFigures, type OpenLoopOptions } from './open-loop.ts';
import type { LoggedRequest } from './request-log.ts';
import { percentile } from './stats.ts';

/** The issue's targets: routable p99 ≤ FACTOR × the all-routable p99 + SLACK; ≤ MAX requests per refused command. */
export const ROUTABLE_P99_FACTOR = 2;
export const ROUTABLE_P99_SLACK_MS = 100;
export const MAX_REQUESTS_PER_REFUSED = 2;
/** The code the service answers for a route without an upstream. */
export const NO_UPSTREAM = '101301';

/** How many requests each of `ids` made at the service (0 for one that never reached it), their max and distribution. */
export function requestsPerCommand(
  requests: Iterable<Pick<LoggedRequest, 'correlationId'>>,
  ids: Iterable<string>,
): { readonly perId: Map<string, number>; readonly max: number; readonly distribution: Record<string, number> } {
  const perId = new Map<string, number>();
  for (const id of ids) perId.set(id, 0);
  for (const r of requests) {
    if (r.correlationId === undefined) continue;
    const n = perId.get(r.correlationId);
    if (n !== undefined) perId.set(r.correlationId, n + 1);
  }
  let max = perId.size === 0 ? Number.NaN : 0;
  const counts = new Map<number, number>();
  for (const n of perId.values()) {
    max = Math.max(max, n);
    counts.set(n, (counts.get(n) ?? 0) + 1);
  }
  const distribution: Record<string, number> = {};
  for (const [n, commands] of [...counts].sort((a, b) => a[0] - b[0])) distribution[String(n)] = commands;
  return { perId, max, distribution };
}

/** A result in a word: `SENT`, `FAILED 101301`, `REJECTED VALIDATION_FAILED`. */
export function outcomeOf(result: Pick<CommandResult, 'outcome' | 'error'>): string {
  return result.error === null ? result.outcome : `${result.outcome} ${result.error.code}`;
}

/** Outcome of each of `ids` (its first result; `no result` for none), counted; commands with more than one result apart. */
export function outcomeCounts(
  ids: Iterable<string>,
  results: ReadonlyMap<string, readonly Pick<CommandResult, 'outcome' | 'error'>[]>,
): { readonly counts: Record<string, number>; readonly duplicates: number } {
  const counts: Record<string, number> = {};
  let duplicates = 0;
  for (const id of ids) {
    const list = results.get(id) ?? [];
    const first = list[0];
    const key = first === undefined ? 'no result' : outcomeOf(first);
    counts[key] = (counts[key] ?? 0) + 1;
    if (list.length > 1) duplicates += 1;
  }
  return { counts, duplicates };
}

export interface RouteRefusalTargets {
  /** FACTOR × the all-routable run's time to send p99 + SLACK. */
  readonly p99LimitMs: number;
  readonly p99Met: boolean;
  readonly allSentMet: boolean;
  readonly requestsMet: boolean;
}

/** The issue's three targets. A figure that could not be measured (NaN) is NOT MET. */
export function routeRefusalTargets(f: {
  readonly routableP99Ms: number;
  readonly baselineP99Ms: number;
  readonly routablePublished: number;
  readonly routableSent: number;
  readonly maxRequestsPerRefused: number;
}): RouteRefusalTargets {
  const p99LimitMs = ROUTABLE_P99_FACTOR * f.baselineP99Ms + ROUTABLE_P99_SLACK_MS;
  return {
    p99LimitMs,
    p99Met: f.routableP99Ms <= p99LimitMs,
    allSentMet: f.routablePublished > 0 && f.routableSent === f.routablePublished,
    // No refused command at all (a share too small for the run) proves nothing.
    requestsMet: f.maxRequestsPerRefused <= MAX_REQUESTS_PER_REFUSED,
  };
}

export interface RouteRefusalFigures {
  readonly refusedShare: number;
  readonly recipient: string;
  readonly region: string;
  readonly latency: OpenLoopOptions['latency'];
  readonly meanLatencyMs: number;
  readonly inFlight: number;
  readonly capacityPerSecond: number;
  readonly ratePerSecond: number;
  readonly seconds: number;
  readonly warmupSeconds: number;
  readonly ledger: boolean;
  /** Every command published (warm-up included). */
  readonly published: number;
  readonly routable: {
    /** Warm-up included. */
    readonly published: number;
    /** Published in the measured window (after the warm-up). */
    readonly measured: number;
    /** Of the measured ones, reached the service. */
    readonly reachedService: number;
    readonly sent: number;
    readonly outcomes: Record<string, number>;
    readonly duplicateResults: number;
    readonly timeToSendP50Ms: number;
    readonly timeToSendP99Ms: number;
    readonly timeToSendMaxMs: number;
    readonly e2eP50Ms: number;
    readonly e2eP99Ms: number;
    readonly e2eMaxMs: number;
    readonly warmup: { readonly published: number; readonly timeToSendP99Ms: number; readonly e2eP99Ms: number } | undefined;
  };
  readonly refused: {
    readonly published: number;
    readonly outcomes: Record<string, number>;
    readonly maxRequests: number;
    /** Requests per refused command → commands. */
    readonly requestsDistribution: Record<string, number>;
    readonly e2eP50Ms: number;
    readonly e2eMaxMs: number;
  };
  /** The mix's invalid commands (REJECTED unsent, as in every run): neither routable nor refused. */
  readonly invalid: { readonly published: number; readonly outcomes: Record<string, number> };
  readonly baseline: {
    /** `open loop`: the ledger-on open-loop run of this invocation; `own run`: run by this section. */
    readonly source: 'open loop' | 'own run';
    readonly timeToSendP50Ms: number;
    readonly timeToSendP99Ms: number;
    readonly e2eP99Ms: number;
    readonly sent: number;
    readonly published: number;
    /** The whole baseline run when the section ran it (the open loop's is in the open-loop figures). */
    readonly ownRun: OpenLoopFigures | null;
  };
  readonly targets: RouteRefusalTargets;
  /** Without a result when the wait for results ended (120 s after publishing). */
  readonly missingResults: number;
  readonly peakRssBytes: number;
  readonly logGaps: number;
}

/** One route-refusal run (ledger as `options.ledger`, as shipped: on) against `baseline`, the all-routable run. */
export async function runRouteRefusal(
  ctx: OpenLoopContext,
  options: OpenLoopOptions & { readonly refusedShare: number },
  baseline: { readonly source: 'open loop' | 'own run'; readonly figures: OpenLoopFigures },
): Promise<RouteRefusalFigures> {
  const o = await observeOpenLoop(ctx, {
    ...options,
    label: 'route-refusal',
    idTag: 'rr',
    refusedShare: options.refusedShare,
    decodeResults: true,
    // A worker that holds everything behind the refused route may not finish: report what it did.
    allowMissingResults: true,
  });
  const results = o.results ?? new Map<string, CommandResult[]>();
  const idsOf = (pick: (kind: OpenLoopKind) => boolean): string[] => [...o.kinds].filter(([, kind]) => pick(kind)).map(([id]) => id);
  const routableIds = idsOf((kind) => kind !== 'refused-route' && kind !== 'invalid');
  const refusedIds = idsOf((kind) => kind === 'refused-route');
  const invalidIds = idsOf((kind) => kind === 'invalid');
  const routableSet = new Set(routableIds);
  const refusedSet = new Set(refusedIds);
  const measured = windowTimings(o, false, (id) => routableSet.has(id));
  const warm = windowTimings(o, true, (id) => routableSet.has(id));
  const routableOutcomes = outcomeCounts(routableIds, results);
  const refusedE2e = [...windowTimings(o, false, (id) => refusedSet.has(id)).e2e, ...windowTimings(o, true, (id) => refusedSet.has(id)).e2e].sort(
    (a, b) => a - b,
  );
  const requests = requestsPerCommand(o.requests, refusedIds);
  const sent = routableOutcomes.counts['SENT'] ?? 0;
  const timeToSendP99Ms = percentile(measured.toSend, 99);
  return {
    refusedShare: options.refusedShare,
    recipient: REFUSED_ROUTE_RECIPIENT,
    region: REFUSED_REGION,
    latency: options.latency,
    meanLatencyMs: options.meanLatencyMs,
    inFlight: options.inFlight,
    capacityPerSecond: inFlightCapacityPerSecond(options.inFlight, options.meanLatencyMs),
    ratePerSecond: options.ratePerSecond,
    seconds: options.seconds,
    warmupSeconds: options.warmupSeconds,
    ledger: options.ledger,
    published: o.publishedAt.size,
    routable: {
      published: routableIds.length,
      measured: measured.published,
      reachedService: measured.toSend.length,
      sent,
      outcomes: routableOutcomes.counts,
      duplicateResults: routableOutcomes.duplicates,
      timeToSendP50Ms: percentile(measured.toSend, 50),
      timeToSendP99Ms,
      timeToSendMaxMs: measured.toSend.at(-1) ?? Number.NaN,
      e2eP50Ms: percentile(measured.e2e, 50),
      e2eP99Ms: percentile(measured.e2e, 99),
      e2eMaxMs: measured.e2e.at(-1) ?? Number.NaN,
      warmup:
        options.warmupSeconds > 0 ? { published: warm.published, timeToSendP99Ms: percentile(warm.toSend, 99), e2eP99Ms: percentile(warm.e2e, 99) } : undefined,
    },
    refused: {
      published: refusedIds.length,
      outcomes: outcomeCounts(refusedIds, results).counts,
      maxRequests: requests.max,
      requestsDistribution: requests.distribution,
      e2eP50Ms: percentile(refusedE2e, 50),
      e2eMaxMs: refusedE2e.at(-1) ?? Number.NaN,
    },
    invalid: { published: invalidIds.length, outcomes: outcomeCounts(invalidIds, results).counts },
    baseline: {
      source: baseline.source,
      timeToSendP50Ms: baseline.figures.timeToSendP50Ms,
      timeToSendP99Ms: baseline.figures.timeToSendP99Ms,
      e2eP99Ms: baseline.figures.e2eP99Ms,
      sent: baseline.figures.sent,
      published: baseline.figures.published,
      ownRun: baseline.source === 'own run' ? baseline.figures : null,
    },
    targets: routeRefusalTargets({
      routableP99Ms: timeToSendP99Ms,
      baselineP99Ms: baseline.figures.timeToSendP99Ms,
      routablePublished: routableIds.length,
      routableSent: sent,
      maxRequestsPerRefused: requests.max,
    }),
    missingResults: o.missingResults,
    peakRssBytes: o.peakRssBytes,
    logGaps: o.logGaps,
  };
}

const counted = (counts: Record<string, number>): string =>
  Object.keys(counts).length === 0
    ? 'none'
    : Object.entries(counts)
        .sort((a, b) => b[1] - a[1])
        .map(([what, n]) => `${what} ×${fmt(n)}`)
        .join(', ');
const verdict = (met: boolean): string => (met ? 'MET' : 'NOT MET');

/** The report's lines for the route-refusal run, each target MET/NOT MET. */
export function routeRefusalLines(f: RouteRefusalFigures): string[] {
  const r = f.routable;
  const t = f.targets;
  const baseline =
    f.baseline.source === 'open loop'
      ? `the all-routable run = the open loop above with the ledger on`
      : `the all-routable run = this section's own open-loop run (same rate, latency and seed, ledger on, no refused route: this invocation has no ledger-on open-loop run of the same length)`;
  const otherOutcomes = Object.fromEntries(Object.entries(r.outcomes).filter(([what]) => what !== 'SENT'));
  return [
    `Route refusal, intent ledger ${f.ledger ? 'on (as shipped)' : 'off'}: the open loop again (${fmt(f.ratePerSecond)} cmd/s = ${fmt((100 * f.ratePerSecond) / f.capacityPerSecond)}% of the in-flight capacity, the same upstream latency, a fresh worker and sandbox, ${f.warmupSeconds} s warm-up + ${f.seconds} s measured) with ${fmt(100 * f.refusedShare, 1)}% of the commands (picked from the seed) a single-recipient text to ${f.recipient} (${f.region}: the service has no upstream, answers ${NO_UPSTREAM}); ${fmt(f.published)} published: ${fmt(r.published)} routable, ${fmt(f.refused.published)} to the refused route, ${fmt(f.invalid.published)} invalid (${counted(f.invalid.outcomes)}); ${baseline}: time to send p50 ${ms(f.baseline.timeToSendP50Ms)}, p99 ${ms(f.baseline.timeToSendP99Ms)}, end to end p99 ${ms(f.baseline.e2eP99Ms)}.`,
    `- routable commands published in the measured ${f.seconds} s (${fmt(r.measured)}, ${fmt(r.reachedService)} reached the service): time to send p50 ${ms(r.timeToSendP50Ms)}, p99 ${ms(r.timeToSendP99Ms)}, max ${ms(r.timeToSendMaxMs)}; end to end p50 ${ms(r.e2eP50Ms)}, p99 ${ms(r.e2eP99Ms)}, max ${ms(r.e2eMaxMs)} (target time to send p99 ≤ ${ROUTABLE_P99_FACTOR} × ${ms(f.baseline.timeToSendP99Ms)} + ${ROUTABLE_P99_SLACK_MS} ms = ${ms(t.p99LimitMs)}): ${verdict(t.p99Met)}`,
    `- routable commands SENT: ${fmt(r.sent)} of ${fmt(r.published)} (warm-up included${Object.keys(otherOutcomes).length > 0 ? `; the others: ${counted(otherOutcomes)}` : ''}${r.duplicateResults > 0 ? `; ${fmt(r.duplicateResults)} with more than one result` : ''}) (target: every one): ${verdict(t.allSentMet)}`,
    `- refused commands (${fmt(f.refused.published)}, warm-up included): ${counted(f.refused.outcomes)} (expected FAILED ${NO_UPSTREAM}); requests at the service per command: max ${fmt(f.refused.maxRequests)} (${Object.entries(
      f.refused.requestsDistribution,
    )
      .map(([requests, commands]) => `${fmt(commands)} with ${requests}`)
      .join(
        ', ',
      )}) (target max ≤ ${MAX_REQUESTS_PER_REFUSED}): ${verdict(t.requestsMet)}; end to end p50 ${ms(f.refused.e2eP50Ms)}, max ${ms(f.refused.e2eMaxMs)}`,
    ...(r.warmup === undefined
      ? []
      : [
          `- warm-up, not counted above: routable commands published in the first ${f.warmupSeconds} s (${fmt(r.warmup.published)}): time to send p99 ${ms(r.warmup.timeToSendP99Ms)}; end to end p99 ${ms(r.warmup.e2eP99Ms)}`,
        ]),
    ...(f.missingResults > 0 ? [`- note: ${fmt(f.missingResults)} command(s) still without a result 120 s after publishing ended`] : []),
    ...(f.logGaps > 0
      ? [`- note: ${f.logGaps} request(s) missing from the copy of the sandbox's log; the requests per refused command may be undercounted`]
      : []),
  ];
}

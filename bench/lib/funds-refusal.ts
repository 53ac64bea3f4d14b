/**
 * The funds-refusal run (issue 20: "One unaffordable command among affordable ones: every
 * affordable one SENT, time to result p99 ≤ 5 s; the unaffordable one FAILED after ≤ 2
 * requests"). The issue's scenario: an account holding 10.000000, one text to 1,000 CN mobiles
 * (the sandbox charges 0.045000 a message: 45.000000, refused 105400 InsufficientFunds) published
 * first, then N single-recipient CN texts on other keys, paced so they arrive as traffic behind it.
 * A worker that pauses everything on that 105400 holds the affordable ones until its funds probe;
 * one that sets a cost ceiling (only commands as costly wait) keeps them sending.
 *
 * A fresh sandbox process (balance 10.000000, the open loop's log-normal upstream latency), a
 * fresh worker (default settings, ledger on) and a fresh 12-partition command topic. Per command:
 *   time to result = its result visible to a `read_committed` reader − its publish time (the
 *                    open loop's end to end);
 *   requests       = entries of the sandbox's request log with its commandId as correlation id.
 */
import type { CommandResult } from '../../src/contracts/result.ts';
import type { SendCommand } from '../../src/contracts/command.ts';
import { resultFromAvro } from '../../src/contracts/result-avro.ts';
import { CommandPublisher } from '../../src/kafka/command-publisher.ts';
import type { LatencySpec } from '../../src/sandbox/faults.ts';
import { PRODUCED_AT_HEADER } from './kafka.ts';
import { fmt, ms } from './markdown.ts';
import { peakRssBytes, sleep, stopChild } from './proc.ts';
import { RequestLogCollector } from './request-log.ts';
import { outcomeCounts, outcomeOf, requestsPerCommand } from './route-refusal.ts';
import { startRunWorker, type OpenLoopContext } from './open-loop.ts';
import { percentile, sortedNumbers } from './stats.ts';
import { waitReady } from '../pipelines/worker.ts';

/** The issue's targets: every affordable command SENT, their time to result p99 ≤ this; the unaffordable one FAILED 105400 after ≤ MAX requests. */
export const AFFORDABLE_P99_TARGET_MS = 5_000;
export const MAX_REQUESTS_UNAFFORDABLE = 2;
/** The code the service answers when a send costs more than the balance. */
export const INSUFFICIENT_FUNDS = '105400';
/** The issue's account: 10.000000; the costly command costs 1,000 × 0.045000 = 45.000000. */
export const FUNDS_BALANCE = '10.000000';
export const COSTLY_RECIPIENTS = 1_000;
/** The sandbox's price of one CN text message (src/sandbox/pricing.ts). */
export const CN_TEXT_PRICE = 0.045;
/** How fast the affordable commands are published after the costly one. */
export const AFFORDABLE_RATE_PER_SECOND = 20;
/** How long the run waits for the results after publishing. */
export const RESULT_WAIT_MS = 120_000;
const CONTENT = 'Your parcel is on its way.';

/** `count` distinct valid CN mobiles, `+86<prefix>` followed by 8 digits (0 … count − 1, zero-padded). */
export function cnMobiles(count: number, prefix = '138'): string[] {
  if (count > 100_000_000) throw new Error(`at most 10^8 numbers per prefix (asked ${count})`);
  return Array.from({ length: count }, (_, i) => `+86${prefix}${String(i).padStart(8, '0')}`);
}

/** A short text to `to` (single segment). */
export function cnText(commandId: string, to: readonly string[], kind: string, now = Date.now()): SendCommand {
  return {
    commandId,
    createdAt: now,
    expiresAt: null,
    metadata: { source: 'bench', kind },
    operation: { kind: 'text', to: [...to], signature: 'Acme', content: CONTENT },
  };
}

export interface FundsRefusalTargets {
  readonly allSentMet: boolean;
  readonly p99Met: boolean;
  readonly unaffordableMet: boolean;
}

/** The issue's three targets. A figure that could not be measured (NaN, no result) is NOT MET. */
export function fundsRefusalTargets(f: {
  readonly affordablePublished: number;
  readonly affordableSent: number;
  readonly affordableP99Ms: number;
  /** `FAILED 105400`, `SENT`, `no result`, … (outcomeOf). */
  readonly unaffordableOutcome: string;
  readonly unaffordableRequests: number;
}): FundsRefusalTargets {
  return {
    allSentMet: f.affordablePublished > 0 && f.affordableSent === f.affordablePublished,
    p99Met: f.affordableP99Ms <= AFFORDABLE_P99_TARGET_MS,
    unaffordableMet: f.unaffordableOutcome === `FAILED ${INSUFFICIENT_FUNDS}` && f.unaffordableRequests <= MAX_REQUESTS_UNAFFORDABLE,
  };
}

export interface FundsRefusalFigures {
  readonly balance: string;
  readonly latency: LatencySpec;
  readonly ratePerSecond: number;
  readonly affordable: {
    readonly published: number;
    readonly sent: number;
    readonly outcomes: Record<string, number>;
    readonly duplicateResults: number;
    readonly timeToResultP50Ms: number;
    readonly timeToResultP99Ms: number;
    readonly timeToResultMaxMs: number;
    /** Requests per affordable command → commands. */
    readonly requestsDistribution: Record<string, number>;
  };
  readonly unaffordable: {
    readonly commandId: string;
    readonly recipients: number;
    /** recipients × the CN text price. */
    readonly expectedCost: string;
    /** `FAILED 105400`, or `no result`. */
    readonly outcome: string;
    readonly errorCode: string | null;
    readonly retryable: boolean | null;
    readonly errorMessage: string | null;
    readonly timeToResultMs: number;
    readonly requests: number;
    /** The sandbox's answer code of each of its requests, in order. */
    readonly answerCodes: readonly string[];
  };
  /** The sandbox's balance when the results were in (10.000000 − what the affordable sends cost). */
  readonly balanceAtEnd: string;
  readonly targets: FundsRefusalTargets;
  /** Without a result when the wait ended (RESULT_WAIT_MS after publishing). */
  readonly missingResults: number;
  readonly workerExited: boolean;
  readonly peakRssBytes: number;
  readonly logGaps: number;
}

/**
 * One funds-refusal run against `ctx.sandbox`, which the caller starts with `--balance
 * FUNDS_BALANCE` for this run alone. Missing results are reported, not thrown.
 */
export async function runFundsRefusal(
  ctx: OpenLoopContext,
  options: { readonly commands: number; readonly latency: LatencySpec; readonly ratePerSecond?: number; readonly label?: string },
): Promise<FundsRefusalFigures> {
  const label = options.label ?? 'funds-refusal';
  const rate = options.ratePerSecond ?? AFFORDABLE_RATE_PER_SECOND;
  const { input, watcher, httpPort, worker } = await startRunWorker(ctx, label, { latency: options.latency, keepValues: true });
  const log = new RequestLogCollector(ctx.sandbox, { intervalMs: 500 });
  const publisher = new CommandPublisher(ctx.kafka, ctx.registry, input);
  const idPrefix = `f${ctx.runId}`;
  const costlyId = `${idPrefix}-costly`;
  const affordableIds = Array.from({ length: options.commands }, (_, i) => `${idPrefix}-${i}`);
  const affordableTo = cnMobiles(options.commands, '139');
  const publishedAt = new Map<string, number>();
  try {
    await waitReady(httpPort, worker, 120_000);
    log.start();
    await publisher.connect();
    ctx.say(
      `${label}: worker ready (ledger on, defaults); balance ${FUNDS_BALANCE}; publishing one text to ${fmt(COSTLY_RECIPIENTS)} CN mobiles, then ${fmt(options.commands)} single-recipient CN texts at ${fmt(rate)}/s…`,
    );
    let exited = false;
    void worker.exited.then(() => (exited = true));
    const publishOne = async (command: SendCommand): Promise<void> => {
      const value = await publisher.encode(command);
      const now = Date.now();
      await publisher.publishRaw([{ key: command.commandId, value, headers: { [PRODUCED_AT_HEADER]: String(now) } }]);
      publishedAt.set(command.commandId, now);
    };
    await publishOne(cnText(costlyId, cnMobiles(COSTLY_RECIPIENTS, '138'), 'unaffordable'));
    const start = Date.now();
    for (const [i, id] of affordableIds.entries()) {
      if (exited) break;
      const due = start + (i * 1000) / rate;
      if (due > Date.now()) await sleep(due - Date.now());
      await publishOne(cnText(id, [affordableTo[i] as string], 'affordable'));
    }
    await publisher.disconnect();
    await watcher.waitUntil(() => [...publishedAt.keys()].every((id) => watcher.perKey.has(id)) || exited, RESULT_WAIT_MS);
    const peakRss = peakRssBytes(worker.pid) ?? Number.NaN;
    await log.stop();
    const balanceAtEnd = (await ctx.sandbox.stats()).balance;
    const requests = log.all();
    const firstVisible = new Map<string, number>();
    for (const a of watcher.arrivals) if (!firstVisible.has(a.key)) firstVisible.set(a.key, a.visibleAt);
    const results = new Map<string, CommandResult[]>();
    for (const a of watcher.arrivals) {
      if (a.value === null) continue;
      const result = resultFromAvro(await ctx.registry.decode(a.value));
      results.set(result.commandId, [...(results.get(result.commandId) ?? []), result]);
    }
    const timeToResult = (id: string): number | undefined => {
      const visible = firstVisible.get(id);
      const at = publishedAt.get(id);
      return visible === undefined || at === undefined ? undefined : visible - at;
    };
    const affordableTimes = sortedNumbers(affordableIds.map(timeToResult).filter((t): t is number => t !== undefined));
    const affordableOutcomes = outcomeCounts(
      affordableIds.filter((id) => publishedAt.has(id)),
      results,
    );
    const sent = affordableOutcomes.counts['SENT'] ?? 0;
    const costly = results.get(costlyId)?.[0];
    const costlyOutcome = costly === undefined ? 'no result' : outcomeOf(costly);
    const costlyRequests = requests.filter((r) => r.correlationId === costlyId);
    const affordablePublished = affordableIds.filter((id) => publishedAt.has(id)).length;
    const affordableP99 = percentile(affordableTimes, 99);
    let missing = 0;
    for (const id of publishedAt.keys()) if (!watcher.perKey.has(id)) missing += 1;
    return {
      balance: FUNDS_BALANCE,
      latency: options.latency,
      ratePerSecond: rate,
      affordable: {
        published: affordablePublished,
        sent,
        outcomes: affordableOutcomes.counts,
        duplicateResults: affordableOutcomes.duplicates,
        timeToResultP50Ms: percentile(affordableTimes, 50),
        timeToResultP99Ms: affordableP99,
        timeToResultMaxMs: affordableTimes.at(-1) ?? Number.NaN,
        requestsDistribution: requestsPerCommand(requests, affordableIds).distribution,
      },
      unaffordable: {
        commandId: costlyId,
        recipients: COSTLY_RECIPIENTS,
        expectedCost: (COSTLY_RECIPIENTS * CN_TEXT_PRICE).toFixed(6),
        outcome: costlyOutcome,
        errorCode: costly?.error?.code ?? null,
        retryable: costly?.error?.retryable ?? null,
        errorMessage: costly?.error?.message ?? null,
        timeToResultMs: timeToResult(costlyId) ?? Number.NaN,
        requests: costlyRequests.length,
        answerCodes: costlyRequests.map((r) => r.answerCode ?? `HTTP ${r.httpStatus}`),
      },
      balanceAtEnd,
      targets: fundsRefusalTargets({
        affordablePublished,
        affordableSent: sent,
        affordableP99Ms: affordableP99,
        unaffordableOutcome: costlyOutcome,
        unaffordableRequests: costlyRequests.length,
      }),
      missingResults: missing,
      workerExited: exited,
      peakRssBytes: peakRss,
      logGaps: log.abandonedGaps,
    };
  } finally {
    await publisher.disconnect().catch(() => undefined);
    await log.stop().catch(() => undefined);
    await stopChild(worker);
    await watcher.stop();
    await ctx.sandbox.setLatency(0).catch(() => undefined);
  }
}

const verdict = (met: boolean): string => (met ? 'MET' : 'NOT MET');
const counted = (counts: Record<string, number>): string =>
  Object.entries(counts)
    .sort((a, b) => b[1] - a[1])
    .map(([what, n]) => `${what} ×${fmt(n)}`)
    .join(', ');

/** The report's lines for the funds-refusal run, each target MET/NOT MET. */
export function fundsRefusalLines(f: FundsRefusalFigures): string[] {
  const a = f.affordable;
  const u = f.unaffordable;
  const t = f.targets;
  const spec = f.latency.kind === 'lognormal' ? `log-normal p50 ${f.latency.medianMs} ms / p99 ${f.latency.p99Ms} ms` : JSON.stringify(f.latency);
  const others = Object.fromEntries(Object.entries(a.outcomes).filter(([what]) => what !== 'SENT'));
  const retryable = u.retryable === null ? '' : u.retryable ? ' (retryable)' : ' (not retryable)';
  return [
    `Funds refusal, intent ledger on (as shipped): a fresh worker (default settings) and sandbox (balance ${f.balance}, upstream ${spec}); one text to ${fmt(u.recipients)} CN mobiles (${u.expectedCost} at 0.045000 a message: refused ${INSUFFICIENT_FUNDS}) published first, then ${fmt(a.published)} single-recipient CN texts on other keys at ${fmt(f.ratePerSecond)}/s; sandbox balance at the end ${f.balanceAtEnd}.`,
    `- affordable commands SENT: ${fmt(a.sent)} of ${fmt(a.published)}${Object.keys(others).length > 0 ? ` (the others: ${counted(others)})` : ''}${a.duplicateResults > 0 ? `; ${fmt(a.duplicateResults)} with more than one result` : ''} (target: every one): ${verdict(t.allSentMet)}`,
    `- affordable time to result (published → result visible read_committed) p50 ${ms(a.timeToResultP50Ms)}, p99 ${ms(a.timeToResultP99Ms)}, max ${ms(a.timeToResultMaxMs)} (target p99 ≤ ${ms(AFFORDABLE_P99_TARGET_MS)}): ${verdict(t.p99Met)}`,
    `- unaffordable command: ${u.outcome}${retryable}, after ${fmt(u.requests)} request(s) at the service (answered ${u.answerCodes.length === 0 ? 'none' : u.answerCodes.join(', ')}); time to result ${ms(u.timeToResultMs)} (target FAILED ${INSUFFICIENT_FUNDS} after ≤ ${MAX_REQUESTS_UNAFFORDABLE} requests): ${verdict(t.unaffordableMet)}`,
    ...(f.missingResults > 0 || f.workerExited
      ? [
          `- note: ${fmt(f.missingResults)} command(s) without a result ${f.workerExited ? 'when the worker exited' : `${fmt(RESULT_WAIT_MS / 1000)} s after publishing ended`}`,
        ]
      : []),
    ...(f.logGaps > 0 ? [`- note: ${f.logGaps} request(s) missing from the copy of the sandbox's log; the requests per command may be undercounted`] : []),
  ];
}

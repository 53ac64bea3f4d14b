/**
 * The priority section: verification codes on the high-priority topic (PRIORITY_COMMAND_TOPIC)
 * while a bulk backlog drains at the rate limit on the normal one (COMMAND_TOPIC), in one worker
 * process (defaults, ledger on, RATE_LIMIT_PER_SECOND = the section's capacity). Two passes, each
 * with a fresh worker, topics and sandbox process at the open loop's upstream latency:
 *   baseline  the codes alone, open loop on the priority topic;
 *   backlog   the same codes at the same rate, with `bulkCommands` of the usual mix preloaded in
 *             the normal topic before the worker starts.
 * The codes are published as the open loop publishes (open-loop.ts: warm-up, then the measured
 * seconds); their time to send is the open loop's (the sandbox's receive time of the first
 * request − publish time). Bulk throughput = bulk requests per second at the service (the
 * sandbox's request log, bulk told apart by its commandId prefix) over the measured window.
 */
import type { LatencySpec } from '../../src/sandbox/faults.ts';
import { verificationCode } from './commands.ts';
import { loadBacklog } from './kafka.ts';
import { fmt, ms } from './markdown.ts';
import { machineNote } from './machine-cpu.ts';
import { stagesText } from './send-stages.ts';
import { observeOpenLoop, TIME_TO_SEND_P99_TARGET_MS, windowTimings, type OpenLoopContext, type WorkerLoad } from './open-loop.ts';
import type { LoggedRequest } from './request-log.ts';
import type { SandboxProcess } from './sandbox.ts';
import { p99BySecond, percentile } from './stats.ts';

/** The targets: codes' p99 under a full backlog ≤ FACTOR × without it, and ≤ 100 ms (the open loop's); bulk ≥ SHARE of what the codes leave. */
export const CODES_P99_FACTOR = 2;
export const BULK_KEEP_SHARE = 0.8;

export interface PrioritySettings {
  readonly latency: LatencySpec;
  readonly meanLatencyMs: number;
  /** RATE_LIMIT_PER_SECOND of the worker: the capacity the codes and the bulk share. */
  readonly rateLimit: number;
  /** The codes' rate as a share of the rate limit. */
  readonly load: number;
  /** Bulk commands preloaded before the backlog pass's worker starts. */
  readonly bulkCommands: number;
  readonly seconds: number;
  readonly warmupSeconds: number;
  readonly inFlight: number;
  readonly seed: number;
  /** Worker environment on top of the section's (`--priority-worker-env`: diagnostics such as LEDGER_ENABLED=false). */
  readonly workerEnv?: Readonly<Record<string, string>>;
}

export interface PriorityPass {
  /** Bulk commands preloaded (0: the baseline). */
  readonly backlog: number;
  /** Codes published in the measured window, and of them those that reached the service. */
  readonly codesPublished: number;
  readonly codesSent: number;
  /** Codes (of the whole run) still without a result when the wait for them ended. */
  readonly codesWithoutResult: number;
  readonly timeToSendP50Ms: number;
  readonly timeToSendP99Ms: number;
  readonly timeToSendMaxMs: number;
  readonly e2eP99Ms: number;
  readonly warmup: {
    readonly published: number;
    readonly timeToSendP99Ms: number;
    readonly timeToSendMaxMs: number;
    readonly p99BySecondMs: readonly number[];
  };
  /** Requests per second at the service in the measured window: bulk, and the codes beside it. */
  readonly bulkPerSecond: number;
  readonly codesPerSecond: number;
  /** Bulk commands neither requested nor answered by the end of the measured window (the backlog pass). */
  readonly bulkLeftAtEnd: number;
  readonly peakRssBytes: number;
  readonly logGaps: number;
  /** The worker's transactions per second and CPU over the measured window. */
  readonly workerLoad: WorkerLoad;
}

export interface PriorityTargets {
  /** FACTOR × the baseline's p99. */
  readonly p99LimitMs: number;
  readonly p99FactorMet: boolean;
  readonly p99AbsoluteMet: boolean;
  /** SHARE × (rate limit − the codes' requests per second). */
  readonly bulkFloorPerSecond: number;
  readonly bulkMet: boolean;
}

export interface PriorityFigures {
  readonly settings: PrioritySettings;
  readonly ratePerSecond: number;
  readonly baseline: PriorityPass;
  readonly loaded: PriorityPass;
  /**
   * The codes alone at the rate the backlog pass drew in all (codes + bulk), no backlog: what the
   * machine's total load alone does to the codes' time to send, apart from any waiting behind bulk.
   */
  readonly sameLoad: PriorityPass;
  readonly targets: PriorityTargets;
}

/** Requests per second in [from, to) by receive time: those `isBulk` picks by correlation id, and the other ones with an id. */
export function requestRates(
  requests: Iterable<Pick<LoggedRequest, 'correlationId' | 'receivedAt'>>,
  from: number,
  to: number,
  isBulk: (commandId: string) => boolean,
): { readonly bulkPerSecond: number; readonly otherPerSecond: number } {
  let bulk = 0;
  let other = 0;
  for (const r of requests) {
    if (r.correlationId === undefined || r.receivedAt < from || r.receivedAt >= to) continue;
    if (isBulk(r.correlationId)) bulk += 1;
    else other += 1;
  }
  const seconds = (to - from) / 1000;
  if (!(seconds > 0)) return { bulkPerSecond: Number.NaN, otherPerSecond: Number.NaN };
  return { bulkPerSecond: bulk / seconds, otherPerSecond: other / seconds };
}

/** Of `ids`, those with neither a first request nor a first result at or before `at`: the backlog still waiting. */
export function leftAt(ids: Iterable<string>, at: number, firstRequest: ReadonlyMap<string, number>, firstVisible: ReadonlyMap<string, number>): number {
  let left = 0;
  for (const id of ids) {
    const requested = firstRequest.get(id);
    const visible = firstVisible.get(id);
    if ((requested === undefined || requested > at) && (visible === undefined || visible > at)) left += 1;
  }
  return left;
}

/** `KEY=value,KEY=value` (a value may hold `=` but no comma) as an environment. */
export function parseWorkerEnv(spec: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const pair of spec.split(',').filter((p) => p.trim() !== '')) {
    const at = pair.indexOf('=');
    const key = at > 0 ? pair.slice(0, at).trim() : '';
    if (!/^[A-Z][A-Z0-9_]*$/.test(key)) throw new Error(`--priority-worker-env takes KEY=value pairs separated by commas (got ${pair})`);
    env[key] = pair.slice(at + 1);
  }
  return env;
}

/** The section's targets. A figure that could not be measured (NaN) is NOT MET. */
export function priorityTargets(f: {
  readonly loadedP99Ms: number;
  readonly baselineP99Ms: number;
  readonly rateLimit: number;
  readonly bulkPerSecond: number;
  readonly codesPerSecond: number;
}): PriorityTargets {
  const p99LimitMs = CODES_P99_FACTOR * f.baselineP99Ms;
  const bulkFloorPerSecond = BULK_KEEP_SHARE * (f.rateLimit - f.codesPerSecond);
  return {
    p99LimitMs,
    p99FactorMet: f.loadedP99Ms <= p99LimitMs,
    p99AbsoluteMet: f.loadedP99Ms <= TIME_TO_SEND_P99_TARGET_MS,
    bulkFloorPerSecond,
    bulkMet: f.bulkPerSecond >= bulkFloorPerSecond,
  };
}

/** One pass: a fresh worker with a priority topic, the codes published on it, `backlog` bulk commands preloaded (0: none). */
async function runPass(
  ctx: OpenLoopContext,
  s: PrioritySettings,
  ratePerSecond: number,
  backlog: number,
  tag = backlog > 0 ? 'b' : '0',
  rateLimit = s.rateLimit,
): Promise<PriorityPass> {
  const label = backlog > 0 ? 'priority-backlog' : tag === '0' ? 'priority-baseline' : 'priority-same-load';
  const bulkPrefix = `q${ctx.runId}-${tag}`;
  let bulk = new Map<string, number>();
  const o = await observeOpenLoop(ctx, {
    latency: s.latency,
    inFlight: s.inFlight,
    ratePerSecond,
    seconds: s.seconds,
    warmupSeconds: s.warmupSeconds,
    seed: s.seed,
    meanLatencyMs: s.meanLatencyMs,
    ledger: true,
    label,
    idTag: `p${tag}`,
    env: { RATE_LIMIT_PER_SECOND: String(rateLimit), ...s.workerEnv },
    priorityTopic: true,
    command: verificationCode,
    // A worker that holds the codes behind the backlog may not answer them all: report it (NOT MET), do not fail the bench.
    allowMissingResults: true,
    ...(backlog > 0 && {
      preload: async (input: string) => {
        const started = Date.now();
        bulk = await loadBacklog({ kafka: ctx.kafka, registry: ctx.registry, topic: input, count: backlog, idPrefix: bulkPrefix, seed: s.seed + 1 });
        ctx.say(`${label}: ${fmt(backlog)} bulk commands loaded in ${fmt((Date.now() - started) / 1000, 1)} s`);
      },
    }),
  });
  const measured = windowTimings(o, false);
  const warm = windowTimings(o, true);
  const end = o.measureFrom + s.seconds * 1000;
  const rates = requestRates(o.requests, o.measureFrom, end, (id) => id.startsWith(`${bulkPrefix}-`));
  return {
    backlog,
    codesPublished: measured.published,
    codesSent: measured.toSend.length,
    codesWithoutResult: o.missingResults,
    timeToSendP50Ms: percentile(measured.toSend, 50),
    timeToSendP99Ms: percentile(measured.toSend, 99),
    timeToSendMaxMs: measured.toSend.at(-1) ?? Number.NaN,
    e2eP99Ms: percentile(measured.e2e, 99),
    warmup: {
      published: warm.published,
      timeToSendP99Ms: percentile(warm.toSend, 99),
      timeToSendMaxMs: warm.toSend.at(-1) ?? Number.NaN,
      p99BySecondMs: p99BySecond(o.publishedAt, o.firstRequest, o.measureFrom - s.warmupSeconds * 1000, s.warmupSeconds),
    },
    bulkPerSecond: rates.bulkPerSecond,
    codesPerSecond: rates.otherPerSecond,
    bulkLeftAtEnd: leftAt(bulk.keys(), end, o.firstRequest, o.firstVisible),
    peakRssBytes: o.peakRssBytes,
    logGaps: o.logGaps,
    workerLoad: o.workerLoad,
  };
}

/** The baseline, then the backlog pass, each with a sandbox of its own; `cleanUp` deletes a pass's topics. */
export async function runPriority(
  ctx: OpenLoopContext,
  s: PrioritySettings,
  withOwnSandbox: <T>(run: (sandbox: SandboxProcess) => Promise<T>) => Promise<T>,
  cleanUp: () => Promise<void>,
): Promise<PriorityFigures> {
  const ratePerSecond = Math.max(1, Math.round(s.load * s.rateLimit));
  ctx.say(`priority: codes at ${fmt(ratePerSecond)}/s on the priority topic, RATE_LIMIT_PER_SECOND=${s.rateLimit}; first without a bulk backlog…`);
  const baseline = await withOwnSandbox((sandbox) => runPass({ ...ctx, sandbox }, s, ratePerSecond, 0));
  await cleanUp();
  ctx.say(`priority: without a backlog, codes' time to send p99 ${ms(baseline.timeToSendP99Ms)}`);
  // Before the backlog pass: deleting its 100,000-record topics afterwards keeps the broker busy
  // for a while, which would weigh on a pass run after it. The total rate is the rate limit (the
  // backlog pass draws all of it: codes first, bulk the rest).
  const sameRate = s.rateLimit;
  ctx.say(`priority: now the codes alone at ${fmt(sameRate)}/s, the total the backlog pass will draw, without a rate limit…`);
  // No rate limit here: codes offered at exactly the limit would queue for tokens without bound
  // (utilisation 1), and the pass is about the load, not the limiter.
  const sameLoad = await withOwnSandbox((sandbox) => runPass({ ...ctx, sandbox }, s, sameRate, 0, 's', 0));
  await cleanUp();
  ctx.say(`priority: alone at ${fmt(sameRate)}/s, codes' p99 ${ms(sameLoad.timeToSendP99Ms)}; now with ${fmt(s.bulkCommands)} bulk commands…`);
  const loaded = await withOwnSandbox((sandbox) => runPass({ ...ctx, sandbox }, s, ratePerSecond, s.bulkCommands));
  await cleanUp();
  const targets = priorityTargets({
    loadedP99Ms: loaded.timeToSendP99Ms,
    baselineP99Ms: baseline.timeToSendP99Ms,
    rateLimit: s.rateLimit,
    bulkPerSecond: loaded.bulkPerSecond,
    codesPerSecond: loaded.codesPerSecond,
  });
  const figures = { settings: s, ratePerSecond, baseline, loaded, sameLoad, targets };
  ctx.say(priorityLines(figures).join(' '));
  return figures;
}

const verdict = (met: boolean): string => (met ? 'MET' : 'NOT MET');

/** The report's lines for the section, each target MET/NOT MET. */
export function priorityLines(f: PriorityFigures): string[] {
  const { settings: s, baseline: b, loaded: l, sameLoad: same, targets: t } = f;
  const spec = s.latency.kind === 'lognormal' ? `log-normal p50 ${s.latency.medianMs} ms / p99 ${s.latency.p99Ms} ms` : JSON.stringify(s.latency);
  const codes = (p: PriorityPass): string =>
    `${fmt(p.codesPublished)} codes published in the measured ${s.seconds} s, ${fmt(p.codesSent)} reached the service: time to send p50 ${ms(p.timeToSendP50Ms)}, p99 ${ms(p.timeToSendP99Ms)}, max ${ms(p.timeToSendMaxMs)}; end to end p99 ${ms(p.e2eP99Ms)}; the worker meanwhile ${fmt(p.workerLoad.transactionsPerSecond)} transactions/s, CPU ${fmt(100 * p.workerLoad.cpuShare)}% of a core${machineNote(p.workerLoad.machine)}; the codes' time to send by stage (sms_worker_send_stage_seconds, mean and the bucket of the p99): ${stagesText(p.workerLoad.stages)}`;
  const warm = (p: PriorityPass, name: string): string =>
    `${name} ${fmt(p.warmup.published)}: time to send p99 ${ms(p.warmup.timeToSendP99Ms)}, max ${ms(p.warmup.timeToSendMaxMs)} (p99 by second: ${p.warmup.p99BySecondMs.map((v) => fmt(v)).join(', ')} ms)`;
  const share = l.bulkPerSecond / s.rateLimit;
  const extra = Object.entries(s.workerEnv ?? {});
  const env = extra.length === 0 ? '' : ` Worker environment added for this run: ${extra.map(([k, v]) => `${k}=${v}`).join(', ')}.`;
  const dry = l.bulkLeftAtEnd <= 0;
  return [
    `Priority: one worker (defaults, ledger on, MAX_IN_FLIGHT ${s.inFlight}, PRIORITY_COMMAND_TOPIC set, RATE_LIMIT_PER_SECOND ${fmt(s.rateLimit)} = the capacity here), a sandbox of its own at ${spec}; verification codes (voice codes and template texts, one recipient and a key each) published open-loop on the priority topic at ${fmt(f.ratePerSecond)}/s = ${fmt((100 * f.ratePerSecond) / s.rateLimit)}% of the capacity for ${s.warmupSeconds} s of warm-up + ${s.seconds} s measured; with ${fmt(s.bulkCommands)} bulk commands (the usual mix) preloaded in the normal topic before the worker started, against a run without them (fresh worker, topics and sandbox).${env}`,
    `- without the backlog: ${codes(b)}`,
    `- with the backlog: ${codes(l)}`,
    `- codes' time to send p99 with ÷ without the backlog = ${fmt(l.timeToSendP99Ms / b.timeToSendP99Ms, 2)}× (target p99 ≤ ${CODES_P99_FACTOR} × ${ms(b.timeToSendP99Ms)} = ${ms(t.p99LimitMs)}): ${verdict(t.p99FactorMet)}`,
    `- codes' time to send p99 with the backlog ${ms(l.timeToSendP99Ms)} (target ≤ ${TIME_TO_SEND_P99_TARGET_MS} ms): ${verdict(t.p99AbsoluteMet)}`,
    `- the same total load without bulk (diagnostic, no target): the codes alone at ${fmt(same.codesPerSecond)}/s, the rate limit the backlog pass draws in all, without a limiter (at exactly the limit they would queue for tokens), run before the backlog pass: ${codes(same)}; with the backlog ÷ this = ${fmt(l.timeToSendP99Ms / same.timeToSendP99Ms, 2)}× (near 1: what the backlog adds is the machine's load, not waiting behind bulk commands)`,
    `- bulk at the service over the measured ${s.seconds} s: ${fmt(l.bulkPerSecond)} req/s beside the codes' ${fmt(l.codesPerSecond)} req/s (${fmt(l.bulkPerSecond + l.codesPerSecond)} of the ${fmt(s.rateLimit)}/s limit); normal-priority share while both compete (bulk ÷ rate limit) ${fmt(100 * share)}% (PRIORITY_NORMAL_MIN_SHARE, default 0.1, is its floor) (target bulk ≥ ${fmt(100 * BULK_KEEP_SHARE)}% × (${fmt(s.rateLimit)} − ${fmt(l.codesPerSecond)}) = ${fmt(t.bulkFloorPerSecond)} req/s): ${verdict(t.bulkMet)}`,
    `- bulk backlog at the end of the measured window: ${fmt(l.bulkLeftAtEnd)} of ${fmt(l.backlog)} not yet requested or answered${dry ? ': it ran dry, so the bulk figure above is below what a full backlog would draw (raise --priority-bulk-commands)' : ' (it did not run dry)'}`,
    `- warm-up, not counted above: the first ${s.warmupSeconds} s of codes, ${warm(b, 'without the backlog')}; ${warm(l, 'with it')}`,
    ...(b.codesWithoutResult + l.codesWithoutResult + same.codesWithoutResult > 0
      ? [
          `- note: codes still without a result 120 s after publishing: ${fmt(b.codesWithoutResult)} without the backlog, ${fmt(l.codesWithoutResult)} with it, ${fmt(same.codesWithoutResult)} alone at the same load`,
        ]
      : []),
    ...(b.logGaps + l.logGaps + same.logGaps > 0
      ? [`- note: ${b.logGaps + l.logGaps + same.logGaps} request(s) missing from the copies of the sandbox's log`]
      : []),
  ];
}

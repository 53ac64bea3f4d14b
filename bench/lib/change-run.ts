/**
 * The group changing under load (issue 23, item 5): worker processes (the shipped CLI, the
 * chart's shutdown budget) in one group on a 12-partition topic, commands published at a fixed
 * rate against a heavy-tailed upstream, and a scripted change while they flow:
 *   rolling update  3 processes, one pod of surge, three times: start a new process, wait until
 *                   it is ready, SIGTERM an old one and wait for it to exit;
 *   scale 1 → 3 → 1 one process, two more join (both ready), later the two leave.
 * A new process counts as ready as the kubelet would see it: its /readyz is first asked after the
 * chart's readinessProbe.initialDelaySeconds, then every periodSeconds. A SIGTERMed one gets the
 * chart's terminationGracePeriodSeconds before SIGKILL, and SHUTDOWN_TIMEOUT_MS as the chart sets it.
 *
 * Phases are windows of publish times: steady (before the change), change (its first action to
 * its last process ready or gone), after (a short tail of load). Figures in change-figures.ts.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LatencySpec } from '../../src/sandbox/faults.ts';
import { resultFromAvro } from '../../src/contracts/result-avro.ts';
import type { ChartPodSettings } from './chart-settings.ts';
import {
  changeTargetsMet,
  changeVerdictLines,
  phaseFigures,
  phaseLine,
  rateFigures,
  rateLine,
  type ChangeObservations,
  type PhaseFigures,
  type RateFigures,
} from './change-figures.ts';
import { createTopics } from './kafka.ts';
import { fmt, ms } from './markdown.ts';
import { MachineCpuSampler } from './machine-cpu.ts';
import { publishAtRate } from './open-loop.ts';
import { sleep } from './proc.ts';
import { RequestLogCollector } from './request-log.ts';
import { ResultWatcher } from './results.ts';
import { poolFor, settled, topicsFor, type ScaleOutContext } from './scale-out.ts';
import type { PoolWorker, WorkerPool } from './worker-pool.ts';
import { freePort, waitReady } from '../pipelines/worker.ts';

/** Load published before the steady window: the first processes' own start-up is not the change's. */
const LEAD_IN_MS = 5_000;
/** Load published after the change, so its last commands are not the end of the load. */
const TAIL_MS = 5_000;

/** What a change script may do to the group. */
export interface ChangeOps {
  /** The processes the run started with, oldest first. */
  readonly initial: readonly PoolWorker[];
  /** Starts a process and resolves when the kubelet would see it ready. */
  surge(): Promise<PoolWorker>;
  /** SIGTERM, SIGKILL after the grace period; resolves when it has exited. */
  terminate(worker: PoolWorker): Promise<void>;
  /** Notes a moment of the change for the report. */
  mark(what: string): void;
}

export interface ChangeRunOptions {
  readonly label: string;
  readonly title: string;
  readonly latency: LatencySpec;
  readonly ratePerSecond: number;
  readonly initialProcesses: number;
  readonly steadySeconds: number;
  readonly pod: ChartPodSettings;
  /** Worker settings on top of the defaults and the chart's (e.g. RATE_LIMIT_PER_SECOND). */
  readonly env: Record<string, string>;
  readonly seed: number;
  readonly change: (ops: ChangeOps) => Promise<void>;
}

export interface ChangeRunFigures {
  readonly title: string;
  readonly ratePerSecond: number;
  readonly latency: LatencySpec;
  readonly env: Record<string, string>;
  readonly steady: PhaseFigures;
  readonly change: PhaseFigures;
  readonly after: PhaseFigures;
  /** Over the change and the tail, when the run has a rate limit. */
  readonly rate: RateFigures | undefined;
  /** The change's moments, ms after it began. */
  readonly events: readonly { readonly atMs: number; readonly what: string }[];
  readonly unplannedExits: readonly string[];
  readonly logGaps: number;
}

async function startReady(pool: WorkerPool, pod: ChartPodSettings, why: string): Promise<PoolWorker> {
  const port = await freePort();
  const worker = pool.start(why, { HTTP_PORT: String(port) });
  // Ready as the kubelet's readiness probe sees it: first after the initial delay, then every period.
  await waitReady(port, worker.child, 180_000, { initialDelayMs: pod.readinessInitialDelayMs, periodMs: pod.readinessPeriodMs, requestTimeoutMs: 3_000 });
  return worker;
}

export async function runChange(ctx: ScaleOutContext, options: ChangeRunOptions): Promise<ChangeRunFigures> {
  const t = topicsFor(ctx, options.label);
  await createTopics(ctx.kafka, [
    { topic: t.input, partitions: 12 },
    { topic: t.output, partitions: 12 },
    { topic: `${t.output}.dlq`, partitions: 1 },
  ]);
  await ctx.sandbox.setLatencySpec(options.latency);
  const watcher = new ResultWatcher(ctx.kafka, t.output, { keepValues: true });
  await watcher.start();
  // A folder per run: every pool numbers its workers' logs from 1.
  const logDir = join(ctx.logDir, options.label);
  mkdirSync(logDir, { recursive: true });
  const pool = poolFor({ ...ctx, logDir }, t, options.label, { ...options.pod.env, ...options.env });
  const log = new RequestLogCollector(ctx.sandbox, { intervalMs: 500 });
  const cpu = new MachineCpuSampler();
  let stopPublishing = false;
  try {
    const initial = await Promise.all(Array.from({ length: options.initialProcesses }, () => startReady(pool, options.pod, 'initial')));
    await settled(ctx, t.group, t.input, options.initialProcesses);
    log.start();
    ctx.say(`${options.title}: ${options.initialProcesses} process(es) ready; publishing ${fmt(options.ratePerSecond)} cmd/s…`);
    const publishStart = Date.now();
    const publishing = publishAtRate({
      kafka: ctx.kafka,
      registry: ctx.registry,
      topic: t.input,
      rate: options.ratePerSecond,
      seconds: 24 * 3600,
      idPrefix: `g${ctx.runId}-${options.label}`,
      seed: options.seed,
      shouldStop: () => stopPublishing,
    });
    await sleep(LEAD_IN_MS + options.steadySeconds * 1000);
    const changeStart = Date.now();
    const events: { atMs: number; what: string }[] = [];
    const mark = (what: string): void => {
      events.push({ atMs: Date.now() - changeStart, what });
      ctx.say(`${options.title}: +${fmt((Date.now() - changeStart) / 1000, 1)} s ${what}`);
    };
    await options.change({
      initial,
      surge: async () => {
        const worker = await startReady(pool, options.pod, 'surge');
        mark(`worker #${worker.n} ready`);
        return worker;
      },
      terminate: async (worker) => {
        mark(`SIGTERM to worker #${worker.n}`);
        await pool.terminate(worker, options.pod.terminationGraceMs);
        mark(`worker #${worker.n} exited`);
      },
      mark,
    });
    const changeEnd = Date.now();
    await sleep(TAIL_MS);
    stopPublishing = true;
    const { publishedAt } = await publishing;
    const publishEnd = Date.now();
    cpu.stop();
    const withMachine = (p: PhaseFigures): PhaseFigures => ({ ...p, machine: { busyShare: cpu.busyShare(p.from, p.to), cores: cpu.cores } });
    const limit = options.env['RATE_LIMIT_PER_SECOND'];
    // A binding limit leaves a queue to drain at the limit: give it that long on top, so a command
    // still queued is not counted lost.
    const drainMs = limit === undefined ? 0 : (1000 * publishedAt.size) / Number(limit);
    await watcher.waitUntil(() => watcher.distinct >= publishedAt.size, 120_000 + drainMs);
    await log.stop();
    const requests = log.all();
    const firstRequest = new Map<string, number>();
    for (const r of requests) if (r.correlationId !== undefined && !firstRequest.has(r.correlationId)) firstRequest.set(r.correlationId, r.receivedAt);
    const outcomes = new Map<string, string[]>();
    const partitionOf = new Map<string, number>();
    for (const a of watcher.arrivals) {
      if (a.value === null) continue;
      const result = resultFromAvro(await ctx.registry.decode(a.value));
      outcomes.set(result.commandId, [...(outcomes.get(result.commandId) ?? []), result.outcome]);
      partitionOf.set(result.commandId, result.source.partition);
    }
    // For reading a run afterwards (where a slow send's wait came from: a stall of every partition
    // at a rebalance, or one moved partition's handover): each command's publish time (ms after the
    // change began), time to send and partition, beside the workers' logs.
    const samples = [...publishedAt].map(([id, at]) => {
      const received = firstRequest.get(id);
      return [at - changeStart, received === undefined ? null : received - at, partitionOf.get(id) ?? null];
    });
    writeFileSync(join(logDir, 'samples.json'), JSON.stringify({ columns: ['publishedMs', 'timeToSendMs', 'partition'], events, samples }));
    const twice = await ctx.sandbox.correlations(2);
    const o: ChangeObservations = {
      publishedAt,
      firstRequest,
      requestTimes: requests.map((r) => r.receivedAt).sort((a, b) => a - b),
      outcomes,
      sentTwice: new Set(Object.keys(twice).filter((id) => publishedAt.has(id))),
    };
    return {
      title: options.title,
      ratePerSecond: options.ratePerSecond,
      latency: options.latency,
      env: options.env,
      steady: withMachine(phaseFigures(o, publishStart + LEAD_IN_MS, changeStart)),
      change: withMachine(phaseFigures(o, changeStart, changeEnd)),
      after: withMachine(phaseFigures(o, changeEnd, publishEnd)),
      rate: limit === undefined ? undefined : rateFigures(o.requestTimes, changeStart, publishEnd, Number(limit)),
      events,
      unplannedExits: [...pool.unplannedExits],
      logGaps: log.abandonedGaps,
    };
  } finally {
    stopPublishing = true;
    cpu.stop();
    await log.stop().catch(() => undefined);
    await pool.stopAll(options.pod.terminationGraceMs);
    await watcher.stop();
    await ctx.sandbox.setLatency(0);
  }
}

/** The issue's rolling update: one pod of surge, three times. */
export async function rollingUpdate(ops: ChangeOps): Promise<void> {
  for (const old of ops.initial) {
    await ops.surge();
    await ops.terminate(old);
  }
}

/** Scale 1 → 3 → 1: two join (both ready), `holdMs` later the two newest leave (as a ReplicaSet picks them). */
export function scaleUpAndDown(holdMs: number): (ops: ChangeOps) => Promise<void> {
  return async (ops) => {
    const added = await Promise.all([ops.surge(), ops.surge()]);
    ops.mark('scaled to 3');
    await sleep(holdMs);
    await Promise.all(added.map((w) => ops.terminate(w)));
  };
}

/** The report's lines for one change run. */
export function changeRunLines(f: ChangeRunFigures, pod: ChartPodSettings): string[] {
  const spec = f.latency.kind === 'lognormal' ? `log-normal p50 ${f.latency.medianMs} / p99 ${f.latency.p99Ms} ms` : JSON.stringify(f.latency);
  const env = Object.entries(f.env)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
  const lines = [
    `${f.title}: ${fmt(f.ratePerSecond)} cmd/s open loop, upstream ${spec}, 12 partitions, worker defaults${env === '' ? '' : ` + ${env}`}; chart: ${Object.entries(
      pod.env,
    )
      .map(([k, v]) => `${k}=${v}`)
      .join(
        ', ',
      )}, SIGKILL ${ms(pod.terminationGraceMs)} after SIGTERM, ready as the readiness probe sees it (first after ${ms(pod.readinessInitialDelayMs)}, every ${ms(pod.readinessPeriodMs)}). Time to send = publish → first request received by the service; phases by publish time. Overall${f.rate === undefined ? '' : ' (the rate limit in place of time to send)'}: ${verdict(changeTargetsMet(f.change, f.rate))}`,
    phaseLine('steady, before the change', f.steady),
    phaseLine('during the change', f.change),
    phaseLine('after it (tail)', f.after),
    ...changeVerdictLines(f.change),
    `- the change: ${f.events.map((e) => `+${fmt(e.atMs / 1000, 1)} s ${e.what}`).join('; ')}`,
  ];
  if (f.rate !== undefined) lines.push(rateLine(f.rate));
  if (f.unplannedExits.length > 0) lines.push(`- unplanned exits: ${f.unplannedExits.join('; ')}`);
  if (f.logGaps > 0) lines.push(`- note: ${f.logGaps} request(s) missing from the copy of the sandbox's log`);
  return lines;
}

const verdict = (ok: boolean): string => (ok ? 'all targets MET' : 'NOT MET');

/**
 * Scale-out (issue 12, items 5 and 6): several worker processes (the shipped CLI) in one group on
 * a 12-partition topic at a fixed upstream latency.
 *   throughput: 1, 2, 4 … processes drain a backlog sized per process; measured once the group is
 *               settled (every process has its partitions), so start-up rebalances are left out;
 *   churn:      a deployment-wide RATE_LIMIT_PER_SECOND over 2 processes, a third joins and later
 *               one leaves (SIGTERM) under load: calls per second summed over the processes
 *               (the sandbox's request log) against the limit, and the longest time without a
 *               result after the join and after the leave (the rebalance's pause).
 */
import { createTopics, loadBacklog } from './kafka.ts';
import { fmt, ms } from './markdown.ts';
import { sleep } from './proc.ts';
import { RequestLogCollector } from './request-log.ts';
import { ResultWatcher } from './results.ts';
import { longestGap, steadyWindow } from './stats.ts';
import { groupAssignment, WorkerPool } from './worker-pool.ts';
import { workerEnv } from '../pipelines/worker.ts';
import type { OpenLoopContext } from './open-loop.ts';

const PARTITIONS = 12;
export const SCALE_TARGET = 0.9;
export const RATE_TOLERANCE = 0.05;

/** The open loop's context, plus where the workers' logs go. */
export interface ScaleOutContext extends OpenLoopContext {
  readonly logDir: string;
}

export interface ScaleRun {
  readonly processes: number;
  readonly commands: number;
  readonly perSecond: number;
  readonly settleMs: number;
  readonly measuredResults: number;
}

export interface ChurnFigures {
  readonly limitPerSecond: number;
  readonly seconds: number;
  /** Calls received by the sandbox in each whole second of the measured window. */
  readonly callsPerSecond: readonly number[];
  readonly meanPerSecond: number;
  /** Mean over the whole seconds before the join: 2 processes, group settled. */
  readonly settledMeanPerSecond: number;
  readonly minPerSecond: number;
  readonly maxPerSecond: number;
  /** Share of the seconds whose sum is within ±5% of the limit. */
  readonly withinToleranceShare: number;
  readonly baselineGapMs: number;
  readonly joinGapMs: number;
  readonly leaveGapMs: number;
}

export function topicsFor(ctx: ScaleOutContext, label: string): { input: string; output: string; group: string } {
  const input = `bench.${ctx.runId}.${label}.commands`;
  const output = `bench.${ctx.runId}.${label}.results`;
  ctx.topics.push(input, output, `${output}.dlq`, `${output}.ledger`);
  return { input, output, group: `bench-${ctx.runId}-${label}` };
}

export function poolFor(
  ctx: ScaleOutContext,
  t: { input: string; output: string; group: string },
  label: string,
  overrides: Record<string, string>,
): WorkerPool {
  const env = workerEnv(
    {
      brokers: ctx.brokers,
      registryUrl: ctx.registryUrl,
      providerUrl: ctx.sandbox.url,
      commands: t.input,
      results: t.output,
      deadLetter: `${t.output}.dlq`,
      group: t.group,
    },
    { LEDGER_TOPIC: `${t.output}.ledger`, ...overrides },
  );
  return new WorkerPool({ env, logDir: ctx.logDir, clientPrefix: `${ctx.runId}-${label}`, say: () => undefined });
}

/** Waits until `members` processes of the group hold all the topic's partitions between them. */
export async function settled(ctx: ScaleOutContext, group: string, topic: string, members: number, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const assignment = await groupAssignment(ctx.kafka, group, topic).catch(() => new Map<string, number[]>());
    const owned = [...assignment.values()].reduce((n, p) => n + p.length, 0);
    if (assignment.size === members && owned === PARTITIONS && [...assignment.values()].every((p) => p.length > 0)) return;
    await sleep(250);
  }
  throw new Error(`group ${group} did not settle with ${members} members within ${timeoutMs} ms`);
}

export async function runScaleOut(
  ctx: ScaleOutContext,
  options: { processes: readonly number[]; inFlight: number; latencyMs: number; commandsPerProcess: number; seed: number },
): Promise<ScaleRun[]> {
  await ctx.sandbox.setLatency(options.latencyMs);
  const runs: ScaleRun[] = [];
  for (const n of options.processes) {
    const t = topicsFor(ctx, `scale${n}`);
    const commands = options.commandsPerProcess * n;
    await createTopics(ctx.kafka, [
      { topic: t.input, partitions: PARTITIONS },
      { topic: t.output, partitions: PARTITIONS },
      { topic: `${t.output}.dlq`, partitions: 1 },
    ]);
    await loadBacklog({ kafka: ctx.kafka, registry: ctx.registry, topic: t.input, count: commands, idPrefix: `s${ctx.runId}-${n}`, seed: options.seed + n });
    const watcher = new ResultWatcher(ctx.kafka, t.output);
    await watcher.start();
    const pool = poolFor(ctx, t, `scale${n}`, { MAX_IN_FLIGHT: String(options.inFlight) });
    const started = Date.now();
    try {
      for (let i = 0; i < n; i += 1) pool.start('scale-out');
      await settled(ctx, t.group, t.input, n);
      const settledAt = Date.now();
      const done = await watcher.waitUntil(() => watcher.distinct >= commands || pool.unplannedExits.length > 0, 120_000 + commands * 5);
      if (!done || pool.unplannedExits.length > 0)
        throw new Error(`scale-out ×${n}: ${watcher.distinct}/${commands} results; ${pool.unplannedExits.join('; ')}`);
      // Results produced after the group settled, up to the 90th percentile (the tail excluded).
      const times = watcher.arrivals.map((a) => a.timestamp).filter((ts) => ts >= settledAt + 1_000);
      const window = steadyWindow(times, 0.05);
      runs.push({ processes: n, commands, perSecond: window.perSecond, settleMs: settledAt - started, measuredResults: window.results });
      ctx.say(
        `scale-out: ${n} process(es) × MAX_IN_FLIGHT ${options.inFlight} at ${options.latencyMs} ms: ${fmt(window.perSecond)} cmd/s (settled after ${ms(settledAt - started)}, ${window.results} results measured)`,
      );
    } finally {
      await pool.stopAll(30_000);
      await watcher.stop();
    }
  }
  return runs;
}

export async function runChurn(
  ctx: ScaleOutContext,
  options: { limitPerSecond: number; inFlight: number; latencyMs: number; seconds: number; seed: number },
): Promise<ChurnFigures> {
  await ctx.sandbox.setLatency(options.latencyMs);
  const t = topicsFor(ctx, 'churn');
  await createTopics(ctx.kafka, [
    { topic: t.input, partitions: PARTITIONS },
    { topic: t.output, partitions: PARTITIONS },
    { topic: `${t.output}.dlq`, partitions: 1 },
  ]);
  const watcher = new ResultWatcher(ctx.kafka, t.output);
  await watcher.start();
  const pool = poolFor(ctx, t, 'churn', { MAX_IN_FLIGHT: String(options.inFlight), RATE_LIMIT_PER_SECOND: String(options.limitPerSecond) });
  const log = new RequestLogCollector(ctx.sandbox, { intervalMs: 500 });
  try {
    const first = pool.start('churn');
    pool.start('churn');
    await settled(ctx, t.group, t.input, 2);
    // More than the limit allows in the run: the processes are never short of work.
    const commands = Math.ceil(options.limitPerSecond * options.seconds * 1.2);
    await loadBacklog({ kafka: ctx.kafka, registry: ctx.registry, topic: t.input, count: commands, idPrefix: `c${ctx.runId}`, seed: options.seed });
    log.start();
    const t0 = Date.now();
    ctx.say(
      `churn: 2 processes, RATE_LIMIT_PER_SECOND=${options.limitPerSecond}, ${fmt(commands)} commands loaded; a third joins at ${Math.round(options.seconds / 3)} s, one leaves at ${Math.round((2 * options.seconds) / 3)} s…`,
    );
    await sleep((options.seconds * 1000) / 3);
    const joinAt = Date.now();
    pool.start('joins under load');
    await sleep((options.seconds * 1000) / 3);
    const leaveAt = Date.now();
    await pool.terminate(first, 30_000);
    await sleep(Math.max(0, t0 + options.seconds * 1000 - Date.now()));
    const end = Date.now();
    await log.stop();
    if (pool.unplannedExits.length > 0) throw new Error(`churn: ${pool.unplannedExits.join('; ')}`);
    // Whole seconds from 2 s after the start (the backlog's first burst) to the end.
    const from = t0 + 2_000;
    const buckets = Array.from({ length: Math.floor((end - from) / 1000) }, () => 0);
    for (const r of log.all()) {
      const i = Math.floor((r.receivedAt - from) / 1000);
      if (i >= 0 && i < buckets.length) buckets[i] = (buckets[i] ?? 0) + 1;
    }
    const limit = options.limitPerSecond;
    const visible = [...new Set(watcher.arrivals.map((a) => a.visibleAt))].sort((a, b) => a - b);
    const windowMs = Math.min(15_000, (options.seconds * 1000) / 3);
    const mean = buckets.reduce((a, b) => a + b, 0) / Math.max(1, buckets.length);
    const beforeJoin = buckets.slice(0, Math.max(1, Math.floor((joinAt - from) / 1000)));
    const settledMean = beforeJoin.reduce((a, b) => a + b, 0) / beforeJoin.length;
    return {
      limitPerSecond: limit,
      seconds: options.seconds,
      callsPerSecond: buckets,
      meanPerSecond: mean,
      settledMeanPerSecond: settledMean,
      minPerSecond: Math.min(...buckets),
      maxPerSecond: Math.max(...buckets),
      withinToleranceShare: buckets.filter((b) => Math.abs(b - limit) <= RATE_TOLERANCE * limit).length / Math.max(1, buckets.length),
      baselineGapMs: longestGap(visible, from, joinAt),
      joinGapMs: longestGap(visible, joinAt, joinAt + windowMs),
      leaveGapMs: longestGap(visible, leaveAt, Math.min(end, leaveAt + windowMs)),
    };
  } finally {
    await log.stop().catch(() => undefined);
    await pool.stopAll(30_000);
    await watcher.stop();
  }
}

export function scaleOutLines(runs: readonly ScaleRun[], inFlight: number, latencyMs: number, churn: ChurnFigures | undefined): string[] {
  const lines: string[] = [];
  const one = runs.find((r) => r.processes === 1);
  if (runs.length > 0) {
    lines.push(
      `Scale-out: worker processes in one group on a ${PARTITIONS}-partition topic, MAX_IN_FLIGHT=${inFlight} each, ${latencyMs} ms upstream (throughput measured once the group settled):`,
    );
    for (const r of runs) {
      const expected = one === undefined ? Number.NaN : SCALE_TARGET * r.processes * one.perSecond;
      const verdict =
        one === undefined || r.processes === 1
          ? ''
          : ` = ${fmt(r.perSecond / one.perSecond, 2)}× one process (target ≥ ${fmt(SCALE_TARGET * r.processes, 1)}×): ${r.perSecond >= expected ? 'MET' : 'NOT MET'}`;
      lines.push(`- ${r.processes} process(es): ${fmt(r.perSecond)} cmd/s (ceiling ${fmt((r.processes * inFlight * 1000) / latencyMs)})${verdict}`);
    }
  }
  if (churn !== undefined) {
    const c = churn;
    const ok = Math.abs(c.meanPerSecond - c.limitPerSecond) <= RATE_TOLERANCE * c.limitPerSecond;
    lines.push(
      `Deployment-wide rate limit: RATE_LIMIT_PER_SECOND=${c.limitPerSecond} over 2 → 3 → 2 processes (MAX_IN_FLIGHT=${inFlight}, ${latencyMs} ms, ${c.seconds} s, a third joins at 1/3, one leaves at 2/3):`,
      `- calls/s summed over the processes (sandbox log, ${c.callsPerSecond.length} whole seconds): mean ${fmt(c.meanPerSecond, 1)} (target within ±${fmt(100 * RATE_TOLERANCE)}% of ${c.limitPerSecond}): ${ok ? 'MET' : 'NOT MET'}; per second min ${c.minPerSecond}, max ${c.maxPerSecond}, ${fmt(100 * c.withinToleranceShare)}% of the seconds within ±${fmt(100 * RATE_TOLERANCE)}%; before the join (2 processes, settled) mean ${fmt(c.settledMeanPerSecond, 1)}`,
      `- longest time without a result: ${ms(c.baselineGapMs)} before the join (steady), ${ms(c.joinGapMs)} after a process joins, ${ms(c.leaveGapMs)} after one leaves (SIGTERM)`,
    );
  }
  return lines;
}

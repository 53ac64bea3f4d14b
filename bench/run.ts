/**
 * `npm run bench`: the same pre-loaded backlog of Avro commands drained by four pipelines, each
 * in its own process with its own group and output topic, against the sandbox in another:
 *   ceiling           raw kafkajs pipe: decode, validate, encode, no HTTP (bench/pipelines/ceiling.ts)
 *   floor             naive worker: eachMessage, await HTTP, await a one-record send (bench/pipelines/floor.ts)
 *   worker            sms-worker as shipped (`node src/cli/main.ts run`, default settings: ledger on)
 *   worker-no-ledger  the same with LEDGER_ENABLED=false: what the intent ledger costs
 *   worker-guards     the worker with every guard on (geo, velocity, spend caps) at limits the run never reaches: what the checks cost
 *   worker-marks-fixed  the worker with MARKS_AHEAD=128 (the mark permits before they were paced), only when listed in --pipelines
 * per sandbox latency, in interleaved order (ABCD, DCBA, …). Prints a Markdown report and writes
 * the raw figures as JSON. See bench/README.md for what every column means.
 *
 *   node bench/run.ts [--commands 50000] [--latencies 0,50] [--rounds 2] [--floor-commands 300]
 *                     [--pipelines ceiling,floor,worker,worker-no-ledger,worker-guards,worker-marks-fixed] [--only ledger]
 *                     [--rss-commands 100000 | --no-rss-check] [--json FILE] [--seed 7]
 *                     [--worker-node-options "--max-old-space-size=…"]   (NODE_OPTIONS of the worker only)
 *                     [--route-refusal-share 0.01 (0: skip)] [--route-refusal-seconds N]   (issue 20)
 *                     [--funds-refusal-commands 60 (0: skip)]   (issue 20)
 *                     [--rolling-update-seconds 15] [--scale-seconds 15] [--scale-rate-limit N]
 *                     [--start-up-seconds 30] [--change-rate 300]   (issue 23; 0 skips each)
 *                     [--repeat 1]   (the change sections N times, each target judged on the median: issue 53)
 *                     [--priority-seconds 30 (0: skip)] [--priority-rate-limit 500] [--priority-bulk-commands 100000] [--priority-load 0.4]
 *                     [--priority-worker-env KEY=value,…]   (the priority section's worker, for diagnostics)
 *
 * `--only ledger` is the quick ledger comparison: worker and worker-no-ledger at 50 ms, 3 rounds,
 * no RSS check (each of those can still be set explicitly).
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Kafka } from 'kafkajs';
import { createRegistry } from '../src/schema/codec.ts';
import { startStack, type RunningStack } from '../tools/stack/index.ts';
import { quietKnownWarnings } from '../src/cli/warnings.ts';
import { benchKafka, createTopics, deleteTopics, loadBacklog } from './lib/kafka.ts';
import { fmt, mb, ms, table } from './lib/markdown.ts';
import { CpuSampler, cpuMicros, exitWith, peakRssBytes, REPO_ROOT, startNode, stopChild, type Child } from './lib/proc.ts';
import { ResultWatcher } from './lib/results.ts';
import { SandboxProcess } from './lib/sandbox.ts';
import { mean, percentile, sortedNumbers, spread, steadyWindow } from './lib/stats.ts';
import { freePort, scrapeWorker, startWorker, workerEnv, type WorkerCounters } from './pipelines/worker.ts';
import { chartMemorySettings, type ChartMemorySettings } from './lib/chart-settings.ts';
import { httpLegLines, runClientOnly, type ClientOnlyFigures } from './lib/http-leg.ts';
import { inFlightCapacityPerSecond, logNormalMeanMs, openLoopLines, runOpenLoop, type OpenLoopFigures } from './lib/open-loop.ts';
import { runChurn, runScaleOut, scaleOutLines, type ChurnFigures, type ScaleRun } from './lib/scale-out.ts';
import { routeRefusalLines, runRouteRefusal, type RouteRefusalFigures } from './lib/route-refusal.ts';
import { RebalanceJoiner, type RebalanceFigures } from './lib/rebalance-joiner.ts';
import { changeSectionLines, runChangeSections, type ChangeSectionFigures } from './lib/change-sections.ts';
import { repeatedChangeLines } from './lib/repeated.ts';
import { FUNDS_BALANCE, fundsRefusalLines, runFundsRefusal, type FundsRefusalFigures } from './lib/funds-refusal.ts';
import { parseWorkerEnv, priorityLines, runPriority, type PriorityFigures } from './lib/priority.ts';

quietKnownWarnings();

const ALL_PIPELINES = ['ceiling', 'floor', 'worker', 'worker-no-ledger', 'worker-guards', 'worker-marks-fixed'] as const;
/** Run unless asked for (`--pipelines`): a comparison with an earlier design, not a figure of the worker as shipped. */
const ON_REQUEST: readonly Pipeline[] = ['worker-marks-fixed'];

/**
 * Every guard on, at limits this run never reaches: the geo check (a denied region the commands
 * never use), velocity limits per prefix and region, per minute and per day (the largest allowed),
 * and spend caps per hour and per day (a billion units): the work per command, no rejection.
 */
const GUARDS_ON: Record<string, string> = {
  GEO_MODE: 'enforce',
  GEO_DENIED_REGIONS: 'KP',
  VELOCITY_MODE: 'enforce',
  VELOCITY_PREFIX_PER_MINUTE: '100000000',
  VELOCITY_PREFIX_PER_DAY: '100000000',
  VELOCITY_REGION_PER_MINUTE: '100000000',
  VELOCITY_REGION_PER_DAY: '100000000',
  SPEND_CAP_PER_HOUR: '1000000000',
  SPEND_CAP_PER_DAY: '1000000000',
};
type Pipeline = (typeof ALL_PIPELINES)[number];
const isPipeline = (name: string): name is Pipeline => (ALL_PIPELINES as readonly string[]).includes(name);
/** The sms-worker CLI, with the intent ledger on (as shipped) or off (LEDGER_ENABLED=false). */
const isWorker = (pipeline: Pipeline): boolean => pipeline.startsWith('worker');
/**
 * `worker-marks-fixed`: the marks ahead of the free slots fixed at 2 × MAX_IN_FLIGHT, as many mark
 * permits as the worker had before they were paced (with every slot busy, the same number); the
 * pair with `worker` shows what pacing the marks costs in throughput.
 */
// 64: the worker's MAX_IN_FLIGHT, which the bench leaves at its default (WORKER_IN_FLIGHT).
const MARKS_FIXED: Record<string, string> = { MARKS_AHEAD: String(2 * 64) };
/** The issue's target for the ledger: at this latency, throughput with it ≥ 90% of without. */
const LEDGER_TARGET_LATENCY_MS = 50;
const PARTITIONS = 12;
/**
 * Issue 23, item 6: the memory check's peak RSS must hold "at full throughput and through a
 * rebalance": a second worker joins when this share of the backlog has results and leaves once
 * ready (lib/rebalance-joiner.ts), in both RSS runs so their throughputs stay comparable.
 */
const RSS_REBALANCE_AT = 0.3;
/** Issue 23, item 6: peak RSS at most this share of the chart's memory limit (headroom against an OOM kill). */
const RSS_LIMIT_SHARE_TARGET = 0.8;
/** The worker's default MAX_IN_FLIGHT (src/config/schema.ts). */
const WORKER_IN_FLIGHT = 64;

const { values: args } = parseArgs({
  options: {
    commands: { type: 'string', default: '50000' },
    // No defaults in parseArgs for these three: `--only ledger` changes them unless they are given.
    latencies: { type: 'string' },
    rounds: { type: 'string' },
    pipelines: { type: 'string' },
    only: { type: 'string' },
    'floor-commands': { type: 'string', default: '300' },
    'rss-commands': { type: 'string', default: '100000' },
    'no-rss-check': { type: 'boolean', default: false },
    json: { type: 'string' },
    seed: { type: 'string', default: '7' },
    'worker-node-options': { type: 'string' },
    'open-loop-seconds': { type: 'string', default: '60' },
    'open-loop-warmup': { type: 'string', default: '10' },
    'open-loop-load': { type: 'string', default: '0.4' },
    'open-loop-latency': { type: 'string', default: 'lognormal:50:500' },
    'open-loop-rate': { type: 'string' },
    'client-requests': { type: 'string', default: '20000' },
    'scale-out': { type: 'string', default: '1,2,4' },
    'scale-out-commands': { type: 'string', default: '8000' },
    'rate-limit': { type: 'string', default: '200' },
    'open-loop-ledger': { type: 'string', default: 'on,off' },
    'churn-seconds': { type: 'string', default: '45' },
    'route-refusal-share': { type: 'string', default: '0.01' },
    'route-refusal-seconds': { type: 'string' },
    'funds-refusal-commands': { type: 'string', default: '60' },
    'rolling-update-seconds': { type: 'string', default: '15' },
    'scale-seconds': { type: 'string', default: '15' },
    'scale-rate-limit': { type: 'string' },
    'start-up-seconds': { type: 'string', default: '30' },
    'change-rate': { type: 'string', default: '300' },
    repeat: { type: 'string', default: '1' },
    'priority-seconds': { type: 'string', default: '30' },
    'priority-rate-limit': { type: 'string', default: '500' },
    'priority-bulk-commands': { type: 'string', default: '100000' },
    'priority-load': { type: 'string', default: '0.4' },
    'priority-worker-env': { type: 'string', default: '' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (args.help === true) {
  console.log(
    'node bench/run.ts [--commands N] [--latencies 0,50] [--rounds 2] [--floor-commands 300] [--pipelines ceiling,floor,worker,worker-no-ledger,worker-guards,worker-marks-fixed] [--only ledger] [--rss-commands 100000 | --no-rss-check] [--json FILE] [--seed 7] [--worker-node-options "--max-old-space-size=…"] [--open-loop-seconds 60 (0: skip)] [--open-loop-warmup 10] [--open-loop-load 0.4 | --open-loop-rate N] [--open-loop-latency lognormal:50:500 | fixed:50] [--client-requests 20000 (0: skip)] [--scale-out 1,2,4 (none: skip)] [--scale-out-commands 8000] [--rate-limit 200] [--open-loop-ledger on,off] [--churn-seconds 45 (0: skip)] [--route-refusal-share 0.01 (0: skip)] [--route-refusal-seconds N (default: the open loop\'s, 60 if it is skipped)] [--funds-refusal-commands 60 (0: skip)] [--rolling-update-seconds 15 (0: skip)] [--scale-seconds 15 (0: skip)] [--scale-rate-limit N (default --rate-limit; 0: skip that pass)] [--start-up-seconds 30 (0: skip)] [--change-rate 300] [--repeat 1] [--priority-seconds 30 (0: skip)] [--priority-rate-limit 500] [--priority-bulk-commands 100000] [--priority-load 0.4] [--priority-worker-env KEY=value,…]',
  );
  process.exit(0);
}
const positiveInt = (name: string, raw: string): number => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer (got ${raw})`);
  return n;
};
if (args.only !== undefined && args.only !== 'ledger') throw new Error(`--only takes one value, ledger (got ${args.only})`);
const ONLY_LEDGER = args.only === 'ledger';
const COMMANDS = positiveInt('commands', args.commands);
const ROUNDS = positiveInt('rounds', args.rounds ?? (ONLY_LEDGER ? '3' : '2'));
const FLOOR_COMMANDS = Math.min(COMMANDS, positiveInt('floor-commands', args['floor-commands']));
// The quick ledger comparison skips the RSS check unless --rss-commands is given.
const RSS_COMMANDS =
  args['no-rss-check'] || (ONLY_LEDGER && !process.argv.some((a) => a.startsWith('--rss-commands'))) ? 0 : positiveInt('rss-commands', args['rss-commands']);
const SEED = positiveInt('seed', args.seed);
const latencyList = args.latencies ?? (ONLY_LEDGER ? String(LEDGER_TARGET_LATENCY_MS) : '0,50');
const LATENCIES = latencyList.split(',').map((v) => {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n < 0) throw new Error(`--latencies must be a comma-separated list of milliseconds (got ${latencyList})`);
  return n;
});
const pipelineList = args.pipelines ?? (ONLY_LEDGER ? 'worker,worker-no-ledger' : ALL_PIPELINES.filter((p) => !ON_REQUEST.includes(p)).join(','));
/** The selected pipelines, in the canonical order (the interleaving alternates it round by round). */
const ORDER: readonly Pipeline[] = (() => {
  const names = pipelineList.split(',').map((n) => n.trim());
  const unknown = names.filter((n) => !isPipeline(n));
  if (unknown.length > 0 || names.length === 0)
    throw new Error(`--pipelines must be a comma-separated list of ${ALL_PIPELINES.join(', ')} (got ${pipelineList})`);
  return ALL_PIPELINES.filter((p) => names.includes(p));
})();
const nonNegativeInt = (name: string, raw: string): number => (raw === '0' ? 0 : positiveInt(name, raw));
/** The issue-12 sections; `--only ledger` skips them unless one is given explicitly. */
const given = (name: string): boolean => process.argv.some((a) => a === `--${name}` || a.startsWith(`--${name}=`));
const section = (name: string, raw: string): string => (ONLY_LEDGER && !given(name) ? '0' : raw);
const OPEN_LOOP_SECONDS = nonNegativeInt('open-loop-seconds', section('open-loop-seconds', args['open-loop-seconds']));
/** Seconds published at the same rate before the measured ones, and reported apart (start-up). */
const OPEN_LOOP_WARMUP = nonNegativeInt('open-loop-warmup', args['open-loop-warmup']);
const OPEN_LOOP_LOAD = Number(args['open-loop-load']);
/** The open-loop run with the intent ledger on (as shipped) and, for comparison, off: a command waits for its mark's transaction before its send. */
const OPEN_LOOP_LEDGER = args['open-loop-ledger'].split(',').map((v) => {
  const value = v.trim();
  if (value !== 'on' && value !== 'off') throw new Error(`--open-loop-ledger must be on, off or on,off (got ${args['open-loop-ledger']})`);
  return value === 'on';
});
if (!(OPEN_LOOP_LOAD > 0 && OPEN_LOOP_LOAD <= 1)) throw new Error(`--open-loop-load must be in (0, 1] (got ${args['open-loop-load']})`);
const CLIENT_REQUESTS = nonNegativeInt('client-requests', section('client-requests', args['client-requests']));
const scaleOutList = section('scale-out', args['scale-out']);
const SCALE_OUT: number[] =
  scaleOutList === '0' || scaleOutList === 'none' || scaleOutList === '' ? [] : scaleOutList.split(',').map((n) => positiveInt('scale-out', n.trim()));
const SCALE_OUT_COMMANDS = positiveInt('scale-out-commands', args['scale-out-commands']);
const RATE_LIMIT = positiveInt('rate-limit', args['rate-limit']);
const CHURN_SECONDS = nonNegativeInt('churn-seconds', section('churn-seconds', args['churn-seconds']));
/** Issue 20: the share of the open loop's commands sent to a route the service refuses (101301); 0 skips the section. */
const ROUTE_REFUSAL_SHARE = Number(section('route-refusal-share', args['route-refusal-share']));
if (!(ROUTE_REFUSAL_SHARE >= 0 && ROUTE_REFUSAL_SHARE < 1)) throw new Error(`--route-refusal-share must be in [0, 1) (got ${args['route-refusal-share']})`);
/** Its measured seconds: the open loop's (so the ledger-on open-loop run is its all-routable baseline), 60 when that is skipped. */
const ROUTE_REFUSAL_SECONDS =
  args['route-refusal-seconds'] === undefined ? OPEN_LOOP_SECONDS || 60 : positiveInt('route-refusal-seconds', args['route-refusal-seconds']);
/** Issue 20: affordable commands published behind one unaffordable command (105400); 0 skips the section. */
const FUNDS_REFUSAL_COMMANDS = nonNegativeInt('funds-refusal-commands', section('funds-refusal-commands', args['funds-refusal-commands']));
/** Issue 23: steady seconds before a rolling update, before and at 3 in scale 1 → 3 → 1, after the first 10 at start-up; 0 skips. */
const ROLLING_UPDATE_SECONDS = nonNegativeInt('rolling-update-seconds', section('rolling-update-seconds', args['rolling-update-seconds']));
const SCALE_SECONDS = nonNegativeInt('scale-seconds', section('scale-seconds', args['scale-seconds']));
const SCALE_RATE_LIMIT = nonNegativeInt('scale-rate-limit', args['scale-rate-limit'] ?? args['rate-limit']);
const START_UP_SECONDS = nonNegativeInt('start-up-seconds', section('start-up-seconds', args['start-up-seconds']));
/** The issue's load for them: 300 commands/s (its measurement on main). */
const CHANGE_RATE = positiveInt('change-rate', args['change-rate']);
/** Issue 53: the change sections run this many times; each timing target is judged on the median, min and max beside it. */
const REPEAT = positiveInt('repeat', args.repeat);
/** Verification codes on the priority topic beside a bulk backlog: measured seconds (0 skips), the worker's rate limit (the capacity), the backlog and the codes' share of the limit. */
const PRIORITY_SECONDS = nonNegativeInt('priority-seconds', section('priority-seconds', args['priority-seconds']));
const PRIORITY_RATE_LIMIT = positiveInt('priority-rate-limit', args['priority-rate-limit']);
const PRIORITY_BULK_COMMANDS = positiveInt('priority-bulk-commands', args['priority-bulk-commands']);
const PRIORITY_LOAD = Number(args['priority-load']);
const PRIORITY_WORKER_ENV = parseWorkerEnv(args['priority-worker-env']);
if (!(PRIORITY_LOAD > 0 && PRIORITY_LOAD < 1)) throw new Error(`--priority-load must be in (0, 1) (got ${args['priority-load']})`);
/**
 * The open loop's upstream: by default log-normal, p50 50 ms, p99 500 ms (`lognormal:50:500`);
 * `fixed:50` isolates what the worker adds (the ledger's marks) from the upstream's spread.
 */
const OPEN_LOOP_LATENCY = openLoopLatency(args['open-loop-latency']);

function openLoopLatency(spec: string | undefined): { kind: 'lognormal'; medianMs: number; p99Ms: number } | { kind: 'fixed'; ms: number } {
  const [kind, a, b] = (spec ?? 'lognormal:50:500').split(':');
  if (kind === 'fixed' && a !== undefined && b === undefined) return { kind: 'fixed', ms: positiveInt('open-loop-latency', a) };
  if (kind === 'lognormal' && a !== undefined && b !== undefined)
    return { kind: 'lognormal', medianMs: positiveInt('open-loop-latency', a), p99Ms: positiveInt('open-loop-latency', b) };
  throw new Error(`--open-loop-latency must be lognormal:<p50 ms>:<p99 ms> or fixed:<ms> (got ${spec})`);
}
/** Scale-out settings of the issue: 50 ms upstream, MAX_IN_FLIGHT=16 per process. */
const SCALE_OUT_LATENCY_MS = 50;
const SCALE_OUT_IN_FLIGHT = 16;
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const JSON_FILE = args.json ?? join(REPO_ROOT, 'bench', 'results', `bench-${stamp}.json`);

const started = Date.now();
const say = (line: string): void => console.error(`[bench ${((Date.now() - started) / 1000).toFixed(1)}s] ${line}`);

interface RunFigures {
  readonly pipeline: Pipeline;
  readonly latencyMs: number;
  readonly round: number;
  readonly position: number;
  readonly target: number;
  readonly results: number;
  readonly duplicateResults: number;
  readonly perSecond: number;
  readonly perSecondByVisibility: number;
  readonly steadyResults: number;
  readonly steadySeconds: number;
  readonly e2eP50Ms: number;
  readonly e2eP99Ms: number;
  readonly fromStartP50Ms: number;
  readonly fromStartP99Ms: number;
  readonly commitDelayP50Ms: number;
  readonly commitDelayP99Ms: number;
  readonly cpuUsPerCommand: number;
  readonly cpuUsPerCommandWholeRun: number;
  readonly peakRssBytes: number;
  readonly startupMs: number;
  readonly drainMs: number;
  readonly selfReport: unknown;
  /** The worker's own counters at the end of the run (worker pipelines only). */
  readonly worker: WorkerCounters | null;
  /** The second worker that joined and left during the drain (memory check), or null. */
  readonly rebalance: RebalanceFigures | null;
}

interface Context {
  readonly stack: RunningStack;
  readonly kafka: Kafka;
  readonly sandbox: SandboxProcess;
  readonly runId: string;
  readonly topics: string[];
}

function startPipeline(
  ctx: Context,
  pipeline: Pipeline,
  input: string,
  output: string,
  group: string,
  httpPort: number,
  extraEnv: Record<string, string> = {},
): Child {
  if (isWorker(pipeline)) {
    const nodeOptions = args['worker-node-options'];
    // Every run has its own ledger topic: a ledger shared with an earlier run over the same
    // backlog holds that run's checkpoint, and the worker would start after it (nothing to do).
    const overrides: Record<string, string> = { LEDGER_TOPIC: `${output}.ledger`, HTTP_PORT: String(httpPort) };
    if (pipeline === 'worker-no-ledger') overrides['LEDGER_ENABLED'] = 'false';
    if (pipeline === 'worker-guards') Object.assign(overrides, GUARDS_ON);
    if (pipeline === 'worker-marks-fixed') Object.assign(overrides, MARKS_FIXED);
    if (nodeOptions !== undefined) overrides['NODE_OPTIONS'] = nodeOptions;
    Object.assign(overrides, extraEnv);
    return startWorker(
      workerEnv(
        {
          brokers: ctx.stack.kafkaBrokers,
          registryUrl: ctx.stack.schemaRegistryUrl,
          providerUrl: ctx.sandbox.url,
          commands: input,
          results: output,
          deadLetter: `${output}.dlq`,
          group,
        },
        overrides,
      ),
    );
  }
  return startNode(join(REPO_ROOT, 'bench', 'pipelines', `${pipeline}.ts`), [], {
    BENCH_BROKERS: ctx.stack.kafkaBrokers,
    BENCH_REGISTRY_URL: ctx.stack.schemaRegistryUrl,
    BENCH_INPUT_TOPIC: input,
    BENCH_OUTPUT_TOPIC: output,
    BENCH_GROUP: group,
    BENCH_PROVIDER_URL: ctx.sandbox.url,
  });
}

async function runOnce(
  ctx: Context,
  options: {
    pipeline: Pipeline;
    latencyMs: number;
    round: number;
    position: number;
    input: string;
    producedAt: Map<string, number>;
    target: number;
    label: string;
    /** Worker environment on top of the defaults (the chart's memory settings). */
    env?: Record<string, string>;
    /** A second worker joins the group once this share of the target has results, and leaves when ready (issue 23, item 6). */
    rebalanceAt?: number;
  },
): Promise<RunFigures> {
  const { pipeline, target } = options;
  const output = `bench.${ctx.runId}.${options.label}.results`;
  ctx.topics.push(output, `${output}.dlq`);
  if (pipeline === 'worker') ctx.topics.push(`${output}.ledger`);
  await createTopics(ctx.kafka, [
    { topic: output, partitions: PARTITIONS },
    { topic: `${output}.dlq`, partitions: 1 },
  ]);
  const watcher = new ResultWatcher(ctx.kafka, output);
  await watcher.start();
  const runStart = Date.now();
  const httpPort = isWorker(pipeline) ? await freePort() : 0;
  const group = `bench-${ctx.runId}-${options.label}`;
  const child = startPipeline(ctx, pipeline, options.input, output, group, httpPort, options.env);
  const { rebalanceAt } = options;
  const joiner =
    rebalanceAt === undefined
      ? undefined
      : new RebalanceJoiner(
          () => watcher.distinct >= rebalanceAt * target,
          async () => {
            const port = await freePort();
            return { child: startPipeline(ctx, pipeline, options.input, output, group, port, options.env), httpPort: port };
          },
        );
  const sampler = new CpuSampler(child.pid, 50);
  let exited = false;
  void child.exited.then(() => (exited = true));
  // Generous: the floor at 50 ms does ~20/s, the others ≥ 500/s even on a busy machine.
  const timeoutMs = 120_000 + target * (pipeline === 'floor' ? 100 : 2);
  const done = await watcher.waitUntil(
    () => watcher.distinct >= target || exited,
    timeoutMs,
    () => joiner?.tick(),
  );
  const rebalance =
    (await joiner?.finished().catch((error: unknown) => {
      say(`${options.label}: the joining worker failed (${error instanceof Error ? error.message : String(error)}); measured without that rebalance`);
      return undefined;
    })) ?? null;
  sampler.stop();
  const peakRss = peakRssBytes(child.pid) ?? Number.NaN;
  const cpuWhole = cpuMicros(child.pid) ?? Number.NaN;
  if (!done || exited) {
    const output = child.output();
    await stopChild(child);
    await watcher.stop();
    throw new Error(`${options.label}: ${exited ? 'pipeline exited' : 'timed out'} with ${watcher.distinct}/${target} results; its output:\n${output}`);
  }
  const counters = isWorker(pipeline) ? ((await scrapeWorker(httpPort)) ?? null) : null;
  await stopChild(child);
  const selfReportLine = child.lines.find((l) => l.startsWith('{"pipeline"'));
  await watcher.stop();

  // First arrival per key, only the first `target` commands (the floor stops at its sample).
  const first = new Map<string, { visibleAt: number; timestamp: number }>();
  for (const a of watcher.arrivals) if (!first.has(a.key)) first.set(a.key, { visibleAt: a.visibleAt, timestamp: a.timestamp });
  const firsts = [...first.entries()].sort((a, b) => a[1].visibleAt - b[1].visibleAt).slice(0, target);
  const visible = firsts.map(([, v]) => v.visibleAt);
  // Throughput from the results' own timestamps (set when each was produced, ms resolution):
  // visibility comes in fetch-sized lumps, too coarse for a pipeline that drains in a second.
  const window = steadyWindow(firsts.map(([, v]) => v.timestamp));
  const visibleWindow = steadyWindow(visible);
  const e2e = sortedNumbers(firsts.map(([key, v]) => v.visibleAt - (options.producedAt.get(key) ?? Number.NaN)));
  const fromStart = sortedNumbers(visible.map((t) => t - runStart));
  const commitDelay = sortedNumbers(firsts.map(([, v]) => Math.max(0, v.visibleAt - v.timestamp)));
  const windowCpu = sampler.between(window.from, window.to);
  const firstVisible = visible[0] ?? Number.NaN;
  const lastVisible = visible[visible.length - 1] ?? Number.NaN;
  return {
    pipeline,
    latencyMs: options.latencyMs,
    round: options.round,
    position: options.position,
    target,
    results: watcher.arrivals.length,
    duplicateResults: [...watcher.perKey.values()].filter((n) => n > 1).length,
    perSecond: window.perSecond,
    perSecondByVisibility: visibleWindow.perSecond,
    steadyResults: window.results,
    steadySeconds: (window.to - window.from) / 1000,
    e2eP50Ms: percentile(e2e, 50),
    e2eP99Ms: percentile(e2e, 99),
    fromStartP50Ms: percentile(fromStart, 50),
    fromStartP99Ms: percentile(fromStart, 99),
    commitDelayP50Ms: percentile(commitDelay, 50),
    commitDelayP99Ms: percentile(commitDelay, 99),
    cpuUsPerCommand: window.results > 0 ? windowCpu / window.results : Number.NaN,
    cpuUsPerCommandWholeRun: cpuWhole / target,
    peakRssBytes: peakRss,
    startupMs: firstVisible - runStart,
    drainMs: lastVisible - firstVisible,
    selfReport: selfReportLine === undefined ? null : (JSON.parse(selfReportLine) as unknown),
    worker: counters,
    rebalance,
  };
}

/** Where the memory check's rebalance fell (issue 23, item 6). */
function rebalanceNote(r: RunFigures): string {
  const j = r.rebalance;
  if (j === null) return ' (no rebalance: the drain ended before the second worker joined)';
  return `, through a rebalance (a second worker started at ${fmt(100 * RSS_REBALANCE_AT)}% of the results, ready ${ms(j.readyAt - j.startedAt)} later, gone ${ms(j.leftAt - j.readyAt)} after that)`;
}

/** Transactions per second over the drain, and their mean duration, from the worker's counters. */
function commitFigures(r: RunFigures): { perSecond: number; meanMs: number; marks: number } {
  if (r.worker === null) return { perSecond: Number.NaN, meanMs: Number.NaN, marks: Number.NaN };
  const { transactions, commitSeconds, ledgerMarks } = r.worker;
  return {
    perSecond: transactions / Math.max(0.001, r.drainMs / 1000),
    meanMs: transactions > 0 ? (1000 * commitSeconds) / transactions : Number.NaN,
    marks: ledgerMarks,
  };
}

function describeRun(r: RunFigures): string {
  const c = commitFigures(r);
  const commits = r.worker === null ? '' : `, ${fmt(c.perSecond)} commits/s (mean ${fmt(c.meanMs, 1)} ms), ${fmt(c.marks)} ledger marks`;
  return `${r.pipeline} @${r.latencyMs} ms r${r.round + 1}: ${fmt(r.perSecond)} cmd/s steady (${r.steadyResults} in ${fmt(r.steadySeconds, 1)} s), e2e p50 ${ms(r.e2eP50Ms)} p99 ${ms(r.e2eP99Ms)}, ${fmt(r.cpuUsPerCommand)} CPU-µs/cmd, peak RSS ${mb(r.peakRssBytes)}, start-up ${ms(r.startupMs)}${commits}${r.duplicateResults > 0 ? `, ${r.duplicateResults} keys with >1 result` : ''}`;
}

interface Row {
  readonly pipeline: Pipeline;
  readonly latencyMs: number;
  readonly runs: readonly RunFigures[];
}

/** The issue-12 sections' figures (each undefined when skipped). */
interface Issue12Figures {
  rssChart?: RunFigures;
  chart?: ChartMemorySettings;
  client?: ClientOnlyFigures;
  openLoop: OpenLoopFigures[];
  scaleOut: ScaleRun[];
  churn?: ChurnFigures;
}

function report(
  rows: readonly Row[],
  rss: RunFigures | undefined,
  machine: string,
  wallSeconds: number,
  extra: Issue12Figures,
  routeRefusal: RouteRefusalFigures | undefined,
  fundsRefusal: FundsRefusalFigures | undefined,
  changes: readonly ChangeSectionFigures[],
  priority: PriorityFigures | undefined,
): string {
  const agg = (row: Row, pick: (r: RunFigures) => number): number => mean(row.runs.map(pick));
  const find = (pipeline: Pipeline, latencyMs: number): Row | undefined => rows.find((r) => r.pipeline === pipeline && r.latencyMs === latencyMs);
  const lines: string[] = [];
  lines.push(`## sms-worker benchmark`);
  lines.push('');
  const letters = ORDER.map((_, i) => String.fromCharCode(65 + i)).join('');
  const interleaving = ROUNDS > 1 ? `${letters}, ${[...letters].reverse().join('')}, …` : letters;
  const floorNote = ORDER.includes('floor') ? `; the floor drains a sample of ${fmt(FLOOR_COMMANDS)}` : '';
  lines.push(
    `${machine}. Backlog: ${fmt(COMMANDS)} Avro commands (55% single-recipient text, 20% 2–5 recipients, 10% template, 13% voice, 2% invalid) in a ${PARTITIONS}-partition topic${floorNote}. Pipelines ${ORDER.join(', ')}; ${ROUNDS} round(s) per setting, interleaved ${interleaving}; figures are the mean over rounds, cmd/s with its min–max spread. Worker in-flight limit MAX_IN_FLIGHT=${WORKER_IN_FLIGHT} (default). Wall time ${fmt(wallSeconds)} s.`,
  );
  lines.push('');
  const header = [
    'pipeline',
    'latency',
    'cmd/s (steady)',
    'min–max',
    'e2e p50 / p99',
    'from start p50 / p99',
    'commit delay p50 / p99',
    'CPU-µs/cmd',
    'peak RSS',
    'commits/s (mean ms)',
    'worker ÷ ceiling',
    'worker ÷ floor',
  ];
  const body: string[][] = [];
  for (const row of rows) {
    const s = spread(row.runs.map((r) => r.perSecond));
    const ceiling = find('ceiling', row.latencyMs);
    const floor = find('floor', row.latencyMs);
    const tput = (r: Row | undefined): number => (r === undefined ? Number.NaN : agg(r, (x) => x.perSecond));
    const worker = isWorker(row.pipeline);
    body.push([
      row.pipeline,
      `${row.latencyMs} ms`,
      fmt(s.mean),
      `${fmt(s.min)}–${fmt(s.max)}`,
      `${ms(agg(row, (r) => r.e2eP50Ms))} / ${ms(agg(row, (r) => r.e2eP99Ms))}`,
      `${ms(agg(row, (r) => r.fromStartP50Ms))} / ${ms(agg(row, (r) => r.fromStartP99Ms))}`,
      `${ms(agg(row, (r) => r.commitDelayP50Ms))} / ${ms(agg(row, (r) => r.commitDelayP99Ms))}`,
      fmt(agg(row, (r) => r.cpuUsPerCommand)),
      mb(Math.max(...row.runs.map((r) => r.peakRssBytes))),
      worker
        ? `${fmt(agg(row, (r) => commitFigures(r).perSecond))} (${fmt(
            agg(row, (r) => commitFigures(r).meanMs),
            1,
          )})`
        : '',
      worker && ceiling !== undefined ? `${fmt(s.mean / tput(ceiling), 2)}×` : '',
      worker && floor !== undefined ? `${fmt(s.mean / tput(floor), 1)}×` : '',
    ]);
  }
  lines.push(table(header, body, ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r']));
  lines.push('');
  lines.push('Targets (reported, not enforced):');
  for (const latencyMs of LATENCIES) {
    const w = find('worker', latencyMs);
    const c = find('ceiling', latencyMs);
    const f = find('floor', latencyMs);
    if (w === undefined) continue;
    const wt = agg(w, (r) => r.perSecond);
    if (latencyMs > 0) {
      const limit = WORKER_IN_FLIGHT / (latencyMs / 1000);
      lines.push(
        `- ${latencyMs} ms: worker ${fmt(wt)} cmd/s = ${fmt((100 * wt) / limit)}% of the latency ceiling ${fmt(limit)} cmd/s (in-flight ${WORKER_IN_FLIGHT} ÷ ${latencyMs} ms; target ≥ 90%): ${wt >= 0.9 * limit ? 'MET' : 'NOT MET'}`,
      );
      if (f !== undefined) {
        const ft = agg(f, (r) => r.perSecond);
        lines.push(`- ${latencyMs} ms: worker ÷ floor = ${fmt(wt / ft, 1)}× (target ≥ 20×): ${wt >= 20 * ft ? 'MET' : 'NOT MET'}`);
      }
    } else if (c !== undefined) {
      const ct = agg(c, (r) => r.perSecond);
      lines.push(`- 0 ms: worker ÷ ceiling = ${fmt((100 * wt) / ct)}% (target ≥ 40%): ${wt >= 0.4 * ct ? 'MET' : 'NOT MET'}`);
    }
  }
  for (const latencyMs of LATENCIES) {
    const guarded = find('worker-guards', latencyMs);
    const plain = find('worker', latencyMs);
    if (guarded === undefined || plain === undefined) continue;
    const paired = guarded.runs.map((r) => r.perSecond / (plain.runs.find((o) => o.round === r.round)?.perSecond ?? Number.NaN));
    const ps = spread(paired);
    const g = agg(guarded, (r) => r.perSecond);
    const w = agg(plain, (r) => r.perSecond);
    lines.push(
      `- guards on ÷ off at ${latencyMs} ms = ${fmt((100 * g) / w)}% (target ≥ 95%): ${g >= 0.95 * w ? 'MET' : 'NOT MET'}; ${fmt(g)} vs ${fmt(w)} cmd/s, per round ${fmt(100 * ps.min)}–${fmt(100 * ps.max)}%`,
    );
  }
  for (const latencyMs of LATENCIES) {
    const paced = find('worker', latencyMs);
    const fixed = find('worker-marks-fixed', latencyMs);
    if (paced === undefined || fixed === undefined) continue;
    const paired = paced.runs.map((r) => r.perSecond / (fixed.runs.find((o) => o.round === r.round)?.perSecond ?? Number.NaN));
    const ps = spread(paired);
    const p = agg(paced, (r) => r.perSecond);
    const f = agg(fixed, (r) => r.perSecond);
    lines.push(
      `- marks paced ÷ fixed at 2 × MAX_IN_FLIGHT at ${latencyMs} ms = ${fmt((100 * p) / f)}% (target ≥ 95%): ${p >= 0.95 * f ? 'MET' : 'NOT MET'}; ${fmt(p)} vs ${fmt(f)} cmd/s, per round ${fmt(100 * ps.min)}–${fmt(100 * ps.max)}%`,
    );
  }
  for (const latencyMs of LATENCIES) {
    const on = find('worker', latencyMs);
    const off = find('worker-no-ledger', latencyMs);
    if (on === undefined || off === undefined) continue;
    const onT = agg(on, (r) => r.perSecond);
    const offT = agg(off, (r) => r.perSecond);
    // Paired by round: the two ran next to each other, so the pair shares the machine's mood.
    const paired = on.runs.map((r) => r.perSecond / (off.runs.find((o) => o.round === r.round)?.perSecond ?? Number.NaN));
    const ps = spread(paired);
    const latency = `e2e p50 on ${ms(agg(on, (r) => r.e2eP50Ms))} / off ${ms(agg(off, (r) => r.e2eP50Ms))}, p99 on ${ms(agg(on, (r) => r.e2eP99Ms))} / off ${ms(agg(off, (r) => r.e2eP99Ms))}; commit delay p50 on ${ms(agg(on, (r) => r.commitDelayP50Ms))} / off ${ms(agg(off, (r) => r.commitDelayP50Ms))}`;
    const rounds = `per round ${fmt(100 * ps.min)}–${fmt(100 * ps.max)}%`;
    const verdict = latencyMs === LEDGER_TARGET_LATENCY_MS ? ` (target ≥ 90%): ${onT >= 0.9 * offT ? 'MET' : 'NOT MET'}` : ' (the target is at 50 ms)';
    lines.push(`- ledger on ÷ off at ${latencyMs} ms = ${fmt((100 * onT) / offT)}%${verdict}; ${fmt(onT)} vs ${fmt(offT)} cmd/s, ${rounds}; ${latency}`);
    if (latencyMs > 0) {
      // Little's law with the in-flight slots full: each slot is held latency + what the ledger adds.
      const heldOn = (1000 * WORKER_IN_FLIGHT) / onT;
      const heldOff = (1000 * WORKER_IN_FLIGHT) / offT;
      const c = commitFigures;
      lines.push(
        `  - slot time per command (in-flight ${WORKER_IN_FLIGHT} ÷ cmd/s): on ${fmt(heldOn, 1)} ms, off ${fmt(heldOff, 1)} ms (+${fmt(heldOn - heldOff, 1)} ms with the ledger); transactions on ${fmt(agg(on, (r) => c(r).perSecond))}/s of mean ${fmt(
          agg(on, (r) => c(r).meanMs),
          1,
        )} ms, off ${fmt(agg(off, (r) => c(r).perSecond))}/s of mean ${fmt(
          agg(off, (r) => c(r).meanMs),
          1,
        )} ms`,
      );
    }
  }
  if (rss !== undefined) {
    lines.push(
      `- RSS: worker peak ${mb(rss.peakRssBytes)} draining a ${fmt(rss.target)}-command backlog at 0 ms (${fmt(rss.perSecond)} cmd/s steady; target < 300 MB): ${rss.peakRssBytes < 300 * 1024 * 1024 ? 'MET' : 'NOT MET'}`,
    );
  }
  const { rssChart, chart } = extra;
  if (rss !== undefined && rssChart !== undefined && chart !== undefined) {
    const share = rssChart.perSecond / rss.perSecond;
    const limitMiB = chart.memoryLimitBytes / 1024 ** 2;
    lines.push(
      `- memory in a pod: with the chart's settings (helm/sms-worker/values.yaml: limit ${chart.memoryLimit}, ${Object.entries(chart.env)
        .map(([k, v]) => `${k}=${v}`)
        .join(
          ', ',
        )}) peak RSS ${fmt(rssChart.peakRssBytes / 1024 ** 2)} MiB = ${fmt((100 * rssChart.peakRssBytes) / chart.memoryLimitBytes)}% of the limit (target ≤ ${fmt(100 * RSS_LIMIT_SHARE_TARGET)}%, ${fmt(RSS_LIMIT_SHARE_TARGET * limitMiB)} MiB: headroom against an OOM kill): ${rssChart.peakRssBytes <= RSS_LIMIT_SHARE_TARGET * chart.memoryLimitBytes ? 'MET' : 'NOT MET'}${rebalanceNote(rssChart)}; ${fmt(rssChart.perSecond)} cmd/s = ${fmt(100 * share)}% of the uncapped run's ${fmt(rss.perSecond)} cmd/s (peak ${fmt(rss.peakRssBytes / 1024 ** 2)} MiB; target ≥ 90%): ${share >= 0.9 ? 'MET' : 'NOT MET'}`,
    );
  }
  const issue12: string[] = [];
  if (extra.client !== undefined) {
    const w = find('worker', 0);
    issue12.push(
      ...httpLegLines(extra.client, w === undefined ? undefined : { perSecond: agg(w, (r) => r.perSecond), cpuUsPerCommand: agg(w, (r) => r.cpuUsPerCommand) }),
    );
  }
  for (const run of extra.openLoop) issue12.push(...openLoopLines(run));
  issue12.push(...scaleOutLines(extra.scaleOut, SCALE_OUT_IN_FLIGHT, SCALE_OUT_LATENCY_MS, extra.churn));
  if (issue12.length > 0) {
    lines.push('');
    lines.push('Latency, HTTP leg, scale-out and the deployment-wide rate limit (issue 12; targets reported, not enforced):');
    lines.push('');
    lines.push(...issue12);
  }
  if (routeRefusal !== undefined) {
    lines.push('');
    lines.push('A route the service refuses (issue 20; targets reported, not enforced):');
    lines.push('');
    lines.push(...routeRefusalLines(routeRefusal));
  }
  if (fundsRefusal !== undefined) {
    lines.push('');
    lines.push('An unaffordable command among affordable ones (issue 20; targets reported, not enforced):');
    lines.push('');
    lines.push(...fundsRefusalLines(fundsRefusal));
  }
  if (changes.length > 0) {
    lines.push('');
    lines.push('Rolling update, scaling and start-up under load (issue 23; targets reported, not enforced):');
    lines.push('');
    for (const [i, run] of changes.entries()) {
      if (changes.length > 1) lines.push(`Run ${i + 1} of ${changes.length}:`);
      lines.push(...changeSectionLines(run));
    }
    const summary = repeatedChangeLines(changes);
    if (summary.length > 0) {
      lines.push('');
      lines.push(`Each target on the median of the ${changes.length} runs (min and max beside it; counts summed over the runs):`);
      lines.push(...summary);
    }
  }
  if (priority !== undefined) {
    lines.push('');
    lines.push('Verification codes on the priority topic beside a bulk backlog (targets reported, not enforced):');
    lines.push('');
    lines.push(...priorityLines(priority));
  }
  lines.push('');
  lines.push('Columns:');
  lines.push(
    "- cmd/s (steady): results per second between the 10th and the 90th percentile of the results' record timestamps (start-up and tail excluded); the JSON also has the same figure from visibility times.",
  );
  lines.push(
    "- e2e: the command's `sms-worker-produced-at` header → its result visible to a `read_committed` reader. With a pre-loaded backlog this includes the time the backlog waited for earlier runs, so it grows with run position; read it with the next column.",
  );
  lines.push('- from start: pipeline process started → result visible; queueing-dominated by construction (p50 ≈ start-up + half the drain).');
  lines.push(
    "- commit delay: result record timestamp (when produced) → visible to `read_committed`; the cost of transactional batching (worker) or just the reader's fetch (ceiling, floor).",
  );
  lines.push(
    '- CPU-µs/cmd: user+system CPU of the pipeline process (from /proc, 10 ms ticks, sampled every 50 ms) over the steady window ÷ results in it; the sandbox, broker and this harness run in other processes. The ceiling drains in about a second, so its figure is the least precise.',
  );
  lines.push('- peak RSS: VmHWM of the pipeline process (max over rounds).');
  lines.push(
    "- commits/s (mean ms): the worker's committed transactions (`sms_worker_transactions_total`) ÷ its drain time, and their mean duration (`sms_worker_commit_duration_seconds`), read from its /metrics before it stops.",
  );
  lines.push(
    '- ceiling and floor are at-least-once (no transactions); the worker commits results and offsets in Kafka transactions (exactly one result per command); worker-no-ledger is the worker with LEDGER_ENABLED=false (no mark before a send).',
  );
  return lines.join('\n');
}

async function main(): Promise<number> {
  say(`starting (or reusing) Kafka and the schema registry…`);
  const stack = await startStack({ log: say });
  say(`stack (${stack.mode}): ${stack.description}`);
  // The log must hold what arrives between two polls of the open-loop and churn runs' collectors.
  const sandbox = await SandboxProcess.start(['--log-capacity', '50000', '--balance', '1000000000.000000']);
  say(`sandbox at ${sandbox.url} (own process, pid ${sandbox.child.pid})`);
  const kafka = benchKafka(stack.kafkaBrokers, 'bench-orchestrator');
  const registry = createRegistry(stack.schemaRegistryUrl);
  const runId = randomUUID().slice(0, 6);
  const ctx: Context = { stack, kafka, sandbox, runId, topics: [] };
  const runs: RunFigures[] = [];
  let rssRun: RunFigures | undefined;
  const extra: Issue12Figures = { scaleOut: [], openLoop: [] };
  /** Issue 20's route-refusal section (undefined when skipped). */
  let routeRefusal: RouteRefusalFigures | undefined;
  /** Issue 20's funds-refusal section (undefined when skipped). */
  let fundsRefusal: FundsRefusalFigures | undefined;
  /** Issue 23's sections (each undefined when skipped). */
  const changes: ChangeSectionFigures[] = [];
  /** The priority section (undefined when skipped). */
  let priority: PriorityFigures | undefined;
  try {
    const backlog = `bench.${runId}.commands`;
    ctx.topics.push(backlog);
    await createTopics(kafka, [{ topic: backlog, partitions: PARTITIONS }]);
    const loadStart = Date.now();
    const producedAt = await loadBacklog({ kafka, registry, topic: backlog, count: COMMANDS, idPrefix: `b${runId}`, seed: SEED });
    say(`backlog: ${fmt(COMMANDS)} commands in ${backlog} (${PARTITIONS} partitions), loaded in ${fmt((Date.now() - loadStart) / 1000, 1)} s`);

    for (const latencyMs of LATENCIES) {
      await sandbox.setLatency(latencyMs);
      for (let round = 0; round < ROUNDS; round += 1) {
        const order = round % 2 === 0 ? ORDER : [...ORDER].reverse();
        for (const [position, pipeline] of order.entries()) {
          const target = pipeline === 'floor' ? FLOOR_COMMANDS : COMMANDS;
          const figures = await runOnce(ctx, {
            pipeline,
            latencyMs,
            round,
            position,
            input: backlog,
            producedAt,
            target,
            label: `${pipeline}.${latencyMs}ms.r${round + 1}`,
          });
          runs.push(figures);
          say(describeRun(figures));
        }
      }
    }
    await deleteTopics(kafka, ctx.topics.splice(0));

    if (RSS_COMMANDS > 0) {
      await sandbox.setLatency(0);
      const big = `bench.${runId}.rss.commands`;
      ctx.topics.push(big);
      await createTopics(kafka, [{ topic: big, partitions: PARTITIONS }]);
      const loadStart = Date.now();
      const bigProducedAt = await loadBacklog({ kafka, registry, topic: big, count: RSS_COMMANDS, idPrefix: `r${runId}`, seed: SEED + 1 });
      say(`RSS check: ${fmt(RSS_COMMANDS)} commands loaded in ${fmt((Date.now() - loadStart) / 1000, 1)} s; worker at 0 ms…`);
      rssRun = await runOnce(ctx, {
        pipeline: 'worker',
        latencyMs: 0,
        round: 0,
        position: 0,
        input: big,
        producedAt: bigProducedAt,
        target: RSS_COMMANDS,
        label: 'worker.rss',
        rebalanceAt: RSS_REBALANCE_AT,
      });
      say(`RSS check: ${describeRun(rssRun)}`);
      // The same backlog again, the worker configured as the Helm chart deploys it.
      const chart = chartMemorySettings();
      extra.chart = chart;
      extra.rssChart = await runOnce(ctx, {
        pipeline: 'worker',
        latencyMs: 0,
        round: 0,
        position: 1,
        input: big,
        producedAt: bigProducedAt,
        target: RSS_COMMANDS,
        label: 'worker.rss-chart',
        env: chart.env,
        rebalanceAt: RSS_REBALANCE_AT,
      });
      say(`RSS check with the chart's settings (${JSON.stringify(chart.env)}): ${describeRun(extra.rssChart)}`);
    }
    await deleteTopics(kafka, ctx.topics.splice(0));

    if (CLIENT_REQUESTS > 0) {
      await sandbox.setLatency(0);
      extra.client = await runClientOnly({ providerUrl: sandbox.url, requests: CLIENT_REQUESTS, inFlight: WORKER_IN_FLIGHT, seed: SEED });
      say(`HTTP leg: provider client alone ${fmt(extra.client.perSecond)} req/s, ${fmt(extra.client.cpuUsPerRequest)} CPU-µs/req`);
    }

    const sectionCtx = {
      kafka,
      registry,
      sandbox,
      brokers: stack.kafkaBrokers,
      registryUrl: stack.schemaRegistryUrl,
      runId,
      topics: ctx.topics,
      say,
      logDir: join(dirname(JSON_FILE), `logs-${stamp}`),
    };
    const meanLatencyMs = OPEN_LOOP_LATENCY.kind === 'fixed' ? OPEN_LOOP_LATENCY.ms : logNormalMeanMs(OPEN_LOOP_LATENCY.medianMs, OPEN_LOOP_LATENCY.p99Ms);
    const capacity = inFlightCapacityPerSecond(WORKER_IN_FLIGHT, meanLatencyMs);
    const rate = args['open-loop-rate'] === undefined ? Math.round(OPEN_LOOP_LOAD * capacity) : positiveInt('open-loop-rate', args['open-loop-rate']);
    const openLoopOptions = (ledger: boolean, seconds: number) => ({
      latency: OPEN_LOOP_LATENCY,
      inFlight: WORKER_IN_FLIGHT,
      ratePerSecond: rate,
      seconds,
      warmupSeconds: OPEN_LOOP_WARMUP,
      seed: SEED + 2,
      meanLatencyMs,
      ledger,
    });
    // Each open-loop run gets a sandbox of its own, so its receive times (half of the time to
    // send) do not depend on what the earlier sections left in the shared one (hundreds of
    // thousands of requests in its log and per-id counts).
    const withOwnSandbox = async <T>(run: (sandbox: SandboxProcess) => Promise<T>, balance = '1000000000.000000'): Promise<T> => {
      const own = await SandboxProcess.start(['--log-capacity', '50000', '--balance', balance]);
      try {
        return await run(own);
      } finally {
        await own.stop();
      }
    };
    if (OPEN_LOOP_SECONDS > 0) {
      for (const ledger of OPEN_LOOP_LEDGER) {
        const run: OpenLoopFigures = await withOwnSandbox((own) => runOpenLoop({ ...sectionCtx, sandbox: own }, openLoopOptions(ledger, OPEN_LOOP_SECONDS)));
        extra.openLoop.push(run);
        say(openLoopLines(run).join(' '));
        await deleteTopics(kafka, ctx.topics.splice(0));
      }
    }
    if (ROUTE_REFUSAL_SHARE > 0) {
      // The all-routable baseline: the ledger-on open-loop run if there was one of the same length, else one of its own.
      const openLoopOn = extra.openLoop.find((r) => r.ledger && r.seconds === ROUTE_REFUSAL_SECONDS && r.ratePerSecond === rate);
      let baseline: { source: 'open loop' | 'own run'; figures: OpenLoopFigures };
      if (openLoopOn !== undefined) baseline = { source: 'open loop', figures: openLoopOn };
      else {
        say(`route refusal: no ledger-on open-loop run of ${ROUTE_REFUSAL_SECONDS} s to compare with; running the all-routable baseline first…`);
        const figures = await withOwnSandbox((own) =>
          runOpenLoop({ ...sectionCtx, sandbox: own }, openLoopOptions(true, ROUTE_REFUSAL_SECONDS), { label: 'route-refusal-baseline', idTag: 'rb' }),
        );
        say(`route refusal, all-routable baseline: ${openLoopLines(figures).join(' ')}`);
        await deleteTopics(kafka, ctx.topics.splice(0));
        baseline = { source: 'own run', figures };
      }
      routeRefusal = await withOwnSandbox((own) =>
        runRouteRefusal({ ...sectionCtx, sandbox: own }, { ...openLoopOptions(true, ROUTE_REFUSAL_SECONDS), refusedShare: ROUTE_REFUSAL_SHARE }, baseline),
      );
      say(routeRefusalLines(routeRefusal).join(' '));
      await deleteTopics(kafka, ctx.topics.splice(0));
    }
    if (FUNDS_REFUSAL_COMMANDS > 0) {
      // A sandbox of its own with the issue's balance, the open loop's upstream latency.
      fundsRefusal = await withOwnSandbox(
        (own) => runFundsRefusal({ ...sectionCtx, sandbox: own }, { commands: FUNDS_REFUSAL_COMMANDS, latency: OPEN_LOOP_LATENCY }),
        FUNDS_BALANCE,
      );
      say(fundsRefusalLines(fundsRefusal).join(' '));
      await deleteTopics(kafka, ctx.topics.splice(0));
    }
    if (SCALE_OUT.length > 0 || CHURN_SECONDS > 0 || ROLLING_UPDATE_SECONDS > 0 || SCALE_SECONDS > 0) mkdirSync(sectionCtx.logDir, { recursive: true });
    if (SCALE_OUT.length > 0) {
      extra.scaleOut = await runScaleOut(sectionCtx, {
        processes: SCALE_OUT,
        inFlight: SCALE_OUT_IN_FLIGHT,
        latencyMs: SCALE_OUT_LATENCY_MS,
        commandsPerProcess: SCALE_OUT_COMMANDS,
        seed: SEED + 3,
      });
      await deleteTopics(kafka, ctx.topics.splice(0));
    }
    if (CHURN_SECONDS > 0) {
      extra.churn = await runChurn(sectionCtx, {
        limitPerSecond: RATE_LIMIT,
        inFlight: SCALE_OUT_IN_FLIGHT,
        latencyMs: SCALE_OUT_LATENCY_MS,
        seconds: CHURN_SECONDS,
        seed: SEED + 4,
      });
      say(scaleOutLines([], SCALE_OUT_IN_FLIGHT, SCALE_OUT_LATENCY_MS, extra.churn).join(' '));
      await deleteTopics(kafka, ctx.topics.splice(0));
    }

    if (ROLLING_UPDATE_SECONDS > 0 || SCALE_SECONDS > 0 || START_UP_SECONDS > 0) {
      for (let run = 1; run <= REPEAT; run += 1) {
        if (REPEAT > 1) say(`change sections: run ${run} of ${REPEAT}`);
        changes.push(
          await runChangeSections(
            sectionCtx,
            {
              latency: OPEN_LOOP_LATENCY,
              meanLatencyMs,
              ratePerSecond: CHANGE_RATE,
              rollingUpdateSeconds: ROLLING_UPDATE_SECONDS,
              scaleSeconds: SCALE_SECONDS,
              scaleRateLimit: SCALE_RATE_LIMIT,
              startUpSeconds: START_UP_SECONDS,
              inFlight: WORKER_IN_FLIGHT,
              seed: SEED + 5,
            },
            withOwnSandbox,
            async () => deleteTopics(kafka, ctx.topics.splice(0)),
          ),
        );
      }
      for (const line of repeatedChangeLines(changes)) say(line);
    }
    if (PRIORITY_SECONDS > 0) {
      priority = await runPriority(
        sectionCtx,
        {
          latency: OPEN_LOOP_LATENCY,
          meanLatencyMs,
          rateLimit: PRIORITY_RATE_LIMIT,
          load: PRIORITY_LOAD,
          bulkCommands: PRIORITY_BULK_COMMANDS,
          seconds: PRIORITY_SECONDS,
          warmupSeconds: OPEN_LOOP_WARMUP,
          inFlight: WORKER_IN_FLIGHT,
          seed: SEED + 6,
          workerEnv: PRIORITY_WORKER_ENV,
        },
        withOwnSandbox,
        async () => deleteTopics(kafka, ctx.topics.splice(0)),
      );
    }

    const rows: Row[] = [];
    for (const latencyMs of LATENCIES)
      for (const pipeline of ORDER) rows.push({ pipeline, latencyMs, runs: runs.filter((r) => r.pipeline === pipeline && r.latencyMs === latencyMs) });
    const sandboxStats = await sandbox.stats();
    const machine = `Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${fmt(totalmem() / 1024 ** 3)} GiB, Node ${process.version}, ${stack.description.split(';')[0] ?? ''} (stack ${stack.mode}); load average at the end ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`;
    const wallSeconds = (Date.now() - started) / 1000;
    const markdown = report(rows, rssRun, machine, wallSeconds, extra, routeRefusal, fundsRefusal, changes, priority);
    console.log(markdown);
    mkdirSync(dirname(JSON_FILE), { recursive: true });
    writeFileSync(
      JSON_FILE,
      JSON.stringify(
        {
          startedAt: new Date(started).toISOString(),
          wallSeconds,
          machine,
          settings: {
            commands: COMMANDS,
            latencies: LATENCIES,
            pipelines: ORDER,
            rounds: ROUNDS,
            floorCommands: FLOOR_COMMANDS,
            rssCommands: RSS_COMMANDS,
            partitions: PARTITIONS,
            workerInFlight: WORKER_IN_FLIGHT,
            seed: SEED,
            openLoopSeconds: OPEN_LOOP_SECONDS,
            openLoopWarmupSeconds: OPEN_LOOP_WARMUP,
            clientRequests: CLIENT_REQUESTS,
            scaleOut: SCALE_OUT,
            scaleOutCommandsPerProcess: SCALE_OUT_COMMANDS,
            rateLimit: RATE_LIMIT,
            churnSeconds: CHURN_SECONDS,
            routeRefusalShare: ROUTE_REFUSAL_SHARE,
            routeRefusalSeconds: ROUTE_REFUSAL_SECONDS,
            fundsRefusalCommands: FUNDS_REFUSAL_COMMANDS,
            rollingUpdateSeconds: ROLLING_UPDATE_SECONDS,
            scaleSeconds: SCALE_SECONDS,
            scaleRateLimit: SCALE_RATE_LIMIT,
            startUpSeconds: START_UP_SECONDS,
            changeRate: CHANGE_RATE,
            repeat: REPEAT,
            prioritySeconds: PRIORITY_SECONDS,
            priorityRateLimit: PRIORITY_RATE_LIMIT,
            priorityBulkCommands: PRIORITY_BULK_COMMANDS,
            priorityLoad: PRIORITY_LOAD,
            priorityWorkerEnv: PRIORITY_WORKER_ENV,
          },
          runs,
          rssRun: rssRun ?? null,
          issue12: extra,
          issue20: { routeRefusal: routeRefusal ?? null, fundsRefusal: fundsRefusal ?? null },
          issue23: changes[0] ?? null,
          issue23Runs: changes,
          priority: priority ?? null,
          sandbox: sandboxStats,
          markdown,
        },
        null,
        2,
      ),
    );
    say(`JSON: ${JSON_FILE}`);
    const duplicates = runs.reduce((n, r) => n + r.duplicateResults, 0);
    if (duplicates > 0) say(`note: ${duplicates} keys had more than one result across the runs (expected 0 after a clean stop)`);
    return 0;
  } finally {
    await deleteTopics(kafka, ctx.topics).catch(() => undefined);
    await sandbox.stop();
    await stack.stop();
  }
}

exitWith('bench', main);

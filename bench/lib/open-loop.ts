/**
 * The open-loop latency run (issue 12, item 2): commands published at a fixed rate, whatever the
 * worker does (a backlog drain is closed-loop: it hides queueing), against a heavy-tailed upstream
 * latency. Per command:
 *   time to send = the sandbox's receive time of its first request (taken when the request
 *                  arrives, before the sandbox's latency wait) − its publish time;
 *   end to end   = its result visible to a `read_committed` reader − its publish time.
 * Publish time is Date.now() just before the batch holding the record is handed to the producer;
 * the sandbox and this harness share the machine's clock.
 *
 * The targets are for a worker that has been running (a deployment's pods run for days): the
 * first `warmupSeconds` of publishing (JIT, fresh connections and transactional ids, the first
 * transactions of each partition) are published at the same rate but left out of the target
 * figures, and reported on their own line so the start-up cost stays visible.
 *
 * observeOpenLoop is the run itself; the route-refusal run (route-refusal.ts, issue 20) is the
 * same run with a share of its commands sent to a route the service refuses, and the priority
 * section (priority.ts) the same run with verification codes published to the worker's priority
 * topic, beside a bulk backlog preloaded in its command topic or without one.
 */
import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import type { Kafka } from 'kafkajs';
import type { CommandResult } from '../../src/contracts/result.ts';
import { resultFromAvro } from '../../src/contracts/result-avro.ts';
import { CommandPublisher } from '../../src/kafka/command-publisher.ts';
import type { LatencySpec } from '../../src/sandbox/faults.ts';
import { openLoopCommand, prng, type OpenLoopKind } from './commands.ts';
import type { SendCommand } from '../../src/contracts/command.ts';
import { createTopics, PRODUCED_AT_HEADER } from './kafka.ts';
import { fmt, ms } from './markdown.ts';
import { cpuMicros, peakRssBytes, sleep, stopChild } from './proc.ts';
import { MachineCpuSampler, machineNote, type MachineLoad } from './machine-cpu.ts';
import { RequestLogCollector, type LoggedRequest } from './request-log.ts';
import { ResultWatcher } from './results.ts';
import type { SandboxProcess } from './sandbox.ts';
import { p99BySecond, percentile, sortedNumbers } from './stats.ts';
import type { Priority } from '../../src/worker/priority/priority.ts';
import type { SendStage } from '../../src/worker/time-to-send.ts';
import { parseSendStages, stagesOver, type StageFigure, type StageScrape } from './send-stages.ts';
import { freePort, scrapeWorker, startWorker, waitReady, workerEnv } from '../pipelines/worker.ts';

/** The targets for the open-loop run. */
export const TIME_TO_SEND_P99_TARGET_MS = 100;
export const E2E_P99_TARGET_MS = 800;
/** Z of the 99th percentile of the standard normal distribution (as the sandbox's sampler). */
const Z99 = 2.3263478740408408;

/** Mean of a log-normal distribution given by its median and 99th percentile: median × e^(σ²/2). */
export function logNormalMeanMs(medianMs: number, p99Ms: number): number {
  const sigma = Math.log(p99Ms / medianMs) / Z99;
  return medianMs * Math.exp((sigma * sigma) / 2);
}

/** What MAX_IN_FLIGHT sends at a mean latency allow (Little's law): in flight ÷ mean latency. */
export function inFlightCapacityPerSecond(inFlight: number, meanLatencyMs: number): number {
  return inFlight / (meanLatencyMs / 1000);
}

/** Added to the seed for the stream that picks the refused-route commands (apart from the mix's). */
const REFUSAL_STREAM_SALT = 0x5eed_0a0;

/** The next command of a stream of a given kind (see publishAtRate's `command`). */
export type CommandMaker = (commandId: string, random: () => number) => { readonly kind: OpenLoopKind; readonly command: SendCommand };

export interface PublishedCommands {
  /** Publish time per commandId. */
  readonly publishedAt: Map<string, number>;
  /** What each command is: a kind of the usual mix, or `refused-route`. */
  readonly kinds: Map<string, OpenLoopKind>;
}

/**
 * Publishes `rate` commands per second for `seconds` (the backlog's mix), in small batches every
 * `tickMs`, catching up if a send was slow; returns the publish time and kind per commandId.
 * `refusedShare` (default 0) of them, picked from the seed, go to the route the service refuses
 * (openLoopCommand); the others are the same commands as with a share of 0.
 */
export async function publishAtRate(options: {
  readonly kafka: Kafka;
  readonly registry: SchemaRegistry;
  readonly topic: string;
  readonly rate: number;
  readonly seconds: number;
  readonly idPrefix: string;
  readonly seed: number;
  readonly refusedShare?: number;
  readonly tickMs?: number;
  readonly shouldStop?: () => boolean;
  /** What to publish instead of the open loop's mix (the priority section's verification codes). */
  readonly command?: CommandMaker;
}): Promise<PublishedCommands> {
  const publisher = new CommandPublisher(options.kafka, options.registry, options.topic);
  await publisher.connect();
  const random = prng(options.seed);
  const share = options.refusedShare ?? 0;
  const refusal = share > 0 ? { random: prng(options.seed + REFUSAL_STREAM_SALT), share } : undefined;
  const publishedAt = new Map<string, number>();
  const kinds = new Map<string, OpenLoopKind>();
  const total = Math.round(options.rate * options.seconds);
  const tickMs = options.tickMs ?? 10;
  const start = Date.now();
  let published = 0;
  try {
    while (published < total && options.shouldStop?.() !== true) {
      const due = Math.min(total, Math.floor((options.rate * (Date.now() - start)) / 1000));
      if (due > published) {
        const records = [];
        const ids: string[] = [];
        for (let i = published; i < due; i += 1) {
          const commandId = `${options.idPrefix}-${i}`;
          const { kind, command } = options.command === undefined ? openLoopCommand(commandId, random, refusal) : options.command(commandId, random);
          ids.push(commandId);
          kinds.set(commandId, kind);
          records.push({
            key: commandId,
            value: await publisher.encode(command),
            headers: {} as Record<string, string>,
          });
        }
        const now = Date.now();
        for (const [i, record] of records.entries()) {
          record.headers[PRODUCED_AT_HEADER] = String(now);
          publishedAt.set(ids[i] as string, now);
        }
        await publisher.publishRaw(records);
        published = due;
      }
      await sleep(tickMs);
    }
  } finally {
    await publisher.disconnect();
  }
  return { publishedAt, kinds };
}

export interface OpenLoopFigures {
  readonly latency: LatencySpec;
  /** The worker's LEDGER_ENABLED. */
  readonly ledger: boolean;
  readonly meanLatencyMs: number;
  readonly inFlight: number;
  readonly capacityPerSecond: number;
  readonly ratePerSecond: number;
  readonly seconds: number;
  /** Published first at the same rate and left out of the figures above (start-up). */
  readonly warmupSeconds: number;
  readonly published: number;
  readonly results: number;
  /** Commands that reached the sandbox (invalid ones never do). */
  readonly sent: number;
  readonly timeToSendP50Ms: number;
  readonly timeToSendP99Ms: number;
  readonly timeToSendMaxMs: number;
  readonly e2eP50Ms: number;
  readonly e2eP99Ms: number;
  readonly e2eMaxMs: number;
  readonly peakRssBytes: number;
  readonly logGaps: number;
  /** The whole machine's load over the measured window (every process, not only the worker's). */
  readonly machine: MachineLoad;
  /** Where the measured window's time to send went (the worker's stages; empty when a scrape failed). */
  readonly stages: Partial<Record<SendStage, StageFigure>>;
  /** The warm-up's own figures (commands published in its first `warmupSeconds`). */
  readonly warmup:
    | {
        readonly published: number;
        readonly timeToSendP99Ms: number;
        readonly timeToSendMaxMs: number;
        readonly e2eP99Ms: number;
        readonly machine: MachineLoad;
        /** Time to send p99 of the commands published in each second of the warm-up (where its tail came from). */
        readonly p99BySecondMs: readonly number[];
        readonly stages: Partial<Record<SendStage, StageFigure>>;
      }
    | undefined;
}

export interface OpenLoopContext {
  readonly kafka: Kafka;
  readonly registry: SchemaRegistry;
  readonly sandbox: SandboxProcess;
  readonly brokers: string;
  readonly registryUrl: string;
  readonly runId: string;
  /** Topics made by the run, for the caller to delete. */
  readonly topics: string[];
  readonly say: (line: string) => void;
}

export interface OpenLoopOptions {
  readonly latency: LatencySpec;
  readonly inFlight: number;
  readonly ratePerSecond: number;
  readonly seconds: number;
  readonly warmupSeconds: number;
  readonly seed: number;
  readonly meanLatencyMs: number;
  readonly ledger: boolean;
  /**
   * Seconds an earlier worker works through the same load on the run's topics, group and
   * transactional ids (then stops) before the measured one starts: a pod of a running deployment
   * rather than a fresh install. 0 or unset: none.
   */
  readonly earlierWorkerSeconds?: number;
}

/** What one open-loop run saw, before any figure is computed from it. */
export interface OpenLoopObservations extends PublishedCommands {
  /** The copy of the sandbox's request log. */
  readonly requests: readonly LoggedRequest[];
  /** Receive time of each command's first request at the sandbox. */
  readonly firstRequest: Map<string, number>;
  /** When each command's first result became visible `read_committed`. */
  readonly firstVisible: Map<string, number>;
  /** Every result per commandId, decoded (only with `decodeResults`). */
  readonly results: Map<string, CommandResult[]> | undefined;
  /** Commands with at least one result. */
  readonly resultCount: number;
  /** Publish times from this on are measured; before it, the warm-up. */
  readonly measureFrom: number;
  /** Still without a result when the wait for them ended (only with `allowMissingResults`). */
  readonly missingResults: number;
  readonly peakRssBytes: number;
  readonly logGaps: number;
  /**
   * The worker's load over the measured window (the warm-up's end → publishing's end): Kafka
   * transactions committed per second (its /metrics) and its CPU (user + system, /proc) as a
   * share of one core, beside the whole machine's (machine-cpu.ts). NaN when a read failed.
   */
  readonly workerLoad: WorkerLoad;
  /** The whole machine's load over the warm-up (publishing's start → the measured window). */
  readonly warmupMachine: MachineLoad;
  /** Where the warm-up's time to send went (the worker's stages between the same two points; empty when a scrape failed). */
  readonly warmupStages: Partial<Record<SendStage, StageFigure>>;
}

export interface WorkerLoad {
  readonly transactionsPerSecond: number;
  readonly cpuShare: number;
  /** Where the published commands' time to send went (sms_worker_send_stage_seconds of their priority). */
  readonly stages: Partial<Record<SendStage, StageFigure>>;
  /** Every process's CPU, not only the worker's: the share of all cores' time that was busy. */
  readonly machine: MachineLoad;
}

/** A point to measure the worker's load from: its committed transactions, its CPU time and the clock. */
async function loadPoint(
  pid: number,
  httpPort: number,
  priority: Priority,
): Promise<{ transactions: number; cpuMicros: number; at: number; stages: StageScrape | undefined }> {
  const counters = await scrapeWorker(httpPort);
  return {
    transactions: counters?.transactions ?? Number.NaN,
    cpuMicros: cpuMicros(pid) ?? Number.NaN,
    at: Date.now(),
    // A scrape that failed is no zero: the window's stages are then not read at all.
    stages: counters === undefined ? undefined : parseSendStages(counters.text, priority),
  };
}

/**
 * One open-loop run of the shipped worker (default settings, MAX_IN_FLIGHT = `inFlight`), in
 * topics and a group named after `label`. With `allowMissingResults` a run whose results do not
 * all arrive within `resultWaitMs` after publishing is reported as it is (missing ones counted),
 * not thrown.
 */
/** What startRunWorker made for one run: its topics, the reader of its results and the worker. */
export interface RunWorker {
  readonly input: string;
  /** The worker's PRIORITY_COMMAND_TOPIC (only with `priorityTopic`). */
  readonly priorityInput: string | undefined;
  readonly output: string;
  readonly watcher: ResultWatcher;
  readonly httpPort: number;
  readonly worker: ReturnType<typeof startWorker>;
}

/**
 * A run's own 12-partition command and result topics (and dead-letter and ledger topics), the
 * sandbox's latency, a watcher of the results and a fresh worker on them (not waited for: the
 * caller waits with `waitReady` inside its own try, so a failed start is still cleaned up).
 * `priorityTopic`: a second 12-partition command topic, the worker's PRIORITY_COMMAND_TOPIC;
 * `preload`: fills the (normal) command topic before the worker starts.
 */
export async function startRunWorker(
  ctx: OpenLoopContext,
  label: string,
  options: {
    readonly latency: LatencySpec;
    readonly keepValues: boolean;
    readonly env?: Record<string, string>;
    readonly priorityTopic?: boolean;
    readonly preload?: (input: string) => Promise<void>;
    /** An earlier worker on the same topics and group first (OpenLoopOptions.earlierWorkerSeconds). */
    readonly earlier?: { readonly seconds: number; readonly ratePerSecond: number; readonly seed: number };
  },
): Promise<RunWorker> {
  const input = `bench.${ctx.runId}.${label}.commands`;
  const output = `bench.${ctx.runId}.${label}.results`;
  const priorityInput = options.priorityTopic === true ? `bench.${ctx.runId}.${label}.priority` : undefined;
  ctx.topics.push(input, output, `${output}.dlq`, `${output}.ledger`, ...(priorityInput === undefined ? [] : [priorityInput]));
  await createTopics(ctx.kafka, [
    { topic: input, partitions: 12 },
    { topic: output, partitions: 12 },
    { topic: `${output}.dlq`, partitions: 1 },
    ...(priorityInput === undefined ? [] : [{ topic: priorityInput, partitions: 12 }]),
  ]);
  await options.preload?.(input);
  await ctx.sandbox.setLatencySpec(options.latency);
  const watcher = new ResultWatcher(ctx.kafka, output, { keepValues: options.keepValues });
  await watcher.start();
  const env = (port: number): Record<string, string> =>
    workerEnv(
      {
        brokers: ctx.brokers,
        registryUrl: ctx.registryUrl,
        providerUrl: ctx.sandbox.url,
        commands: input,
        results: output,
        deadLetter: `${output}.dlq`,
        group: `bench-${ctx.runId}-${label}`,
      },
      {
        LEDGER_TOPIC: `${output}.ledger`,
        HTTP_PORT: String(port),
        ...(priorityInput === undefined ? {} : { PRIORITY_COMMAND_TOPIC: priorityInput }),
        ...options.env,
      },
    );
  const { earlier } = options;
  if (earlier !== undefined && earlier.seconds > 0) {
    const earlierPort = await freePort();
    const previous = startWorker(env(earlierPort));
    try {
      await waitReady(earlierPort, previous, 120_000);
      await publishAtRate({
        kafka: ctx.kafka,
        registry: ctx.registry,
        topic: priorityInput ?? input,
        rate: earlier.ratePerSecond,
        seconds: earlier.seconds,
        idPrefix: `e${ctx.runId}-${label}`,
        seed: earlier.seed,
      });
      // Its last calls answered and committed before it stops (a graceful stop would wait anyway).
      await sleep(2_000);
    } finally {
      await stopChild(previous);
    }
  }
  const httpPort = await freePort();
  const worker = startWorker(env(httpPort));
  return { input, priorityInput, output, watcher, httpPort, worker };
}

export async function observeOpenLoop(
  ctx: OpenLoopContext,
  options: OpenLoopOptions & {
    readonly label: string;
    /** In the commandIds: `o<runId>-<idTag>-<n>` (short: the ids travel in every record and request). */
    readonly idTag: string;
    readonly refusedShare?: number;
    readonly decodeResults?: boolean;
    readonly allowMissingResults?: boolean;
    readonly resultWaitMs?: number;
    /** Worker environment on top of the run's (the priority section's rate limit). */
    readonly env?: Record<string, string>;
    /** Publish to a priority topic of the run's own (PRIORITY_COMMAND_TOPIC) instead of the command topic. */
    readonly priorityTopic?: boolean;
    /** Fills the command topic before the worker starts (the priority section's bulk backlog). */
    readonly preload?: (input: string) => Promise<void>;
    /** What to publish instead of the open loop's mix. */
    readonly command?: CommandMaker;
  },
): Promise<OpenLoopObservations> {
  const { label } = options;
  const { input, priorityInput, watcher, httpPort, worker } = await startRunWorker(ctx, label, {
    latency: options.latency,
    keepValues: options.decodeResults === true,
    env: { LEDGER_ENABLED: String(options.ledger), MAX_IN_FLIGHT: String(options.inFlight), ...options.env },
    ...(options.priorityTopic !== undefined && { priorityTopic: options.priorityTopic }),
    ...(options.preload !== undefined && { preload: options.preload }),
    ...(options.earlierWorkerSeconds !== undefined && {
      earlier: { seconds: options.earlierWorkerSeconds, ratePerSecond: options.ratePerSecond, seed: options.seed + 1 },
    }),
  });
  const log = new RequestLogCollector(ctx.sandbox, { intervalMs: 500 });
  const cpu = new MachineCpuSampler();
  try {
    await waitReady(httpPort, worker, 120_000);
    log.start();
    const refused = (options.refusedShare ?? 0) > 0 ? `, ${fmt(100 * (options.refusedShare ?? 0), 1)}% of them to the refused route` : '';
    ctx.say(
      `${label} (ledger ${options.ledger ? 'on' : 'off'}): worker ready; publishing ${fmt(options.ratePerSecond)} cmd/s for ${options.warmupSeconds} s (warm-up) + ${options.seconds} s${refused}…`,
    );
    let exited = false;
    void worker.exited.then(() => (exited = true));
    const priority: Priority = priorityInput === undefined ? 'normal' : 'high';
    // The warm-up's stages: what the worker observed between publishing's start and the measured window.
    const began = await loadPoint(worker.pid, httpPort, priority);
    const publishBegan = Date.now();
    const windowStart = sleep(options.warmupSeconds * 1000).then(() => loadPoint(worker.pid, httpPort, priority));
    const published = await publishAtRate({
      kafka: ctx.kafka,
      registry: ctx.registry,
      topic: priorityInput ?? input,
      rate: options.ratePerSecond,
      seconds: options.warmupSeconds + options.seconds,
      idPrefix: `o${ctx.runId}-${options.idTag}`,
      seed: options.seed,
      ...(options.refusedShare !== undefined && { refusedShare: options.refusedShare }),
      ...(options.command !== undefined && { command: options.command }),
      shouldStop: () => exited,
    });
    const { publishedAt } = published;
    const [from, to] = [await windowStart, await loadPoint(worker.pid, httpPort, priority)];
    cpu.stop();
    const seconds = (to.at - from.at) / 1000;
    const workerLoad: WorkerLoad = {
      transactionsPerSecond: (to.transactions - from.transactions) / seconds,
      cpuShare: (to.cpuMicros - from.cpuMicros) / 1e6 / seconds,
      stages: from.stages === undefined || to.stages === undefined ? {} : stagesOver(from.stages, to.stages),
      machine: { busyShare: cpu.busyShare(from.at, to.at), cores: cpu.cores },
    };
    // By id: with a preloaded backlog the results topic has other commands' results too.
    const answered = (): number => {
      let n = 0;
      for (const id of publishedAt.keys()) if (watcher.perKey.has(id)) n += 1;
      return n;
    };
    const done = await watcher.waitUntil(() => answered() >= publishedAt.size || exited, options.resultWaitMs ?? 120_000);
    if (exited || (!done && options.allowMissingResults !== true))
      throw new Error(`${label}: ${exited ? 'worker exited' : 'timed out'} with ${answered()}/${publishedAt.size} results:\n${worker.output()}`);
    const peakRss = peakRssBytes(worker.pid) ?? Number.NaN;
    await log.stop();
    const requests = log.all();
    const firstRequest = new Map<string, number>();
    for (const r of requests) if (r.correlationId !== undefined && !firstRequest.has(r.correlationId)) firstRequest.set(r.correlationId, r.receivedAt);
    const firstVisible = new Map<string, number>();
    for (const a of watcher.arrivals) if (!firstVisible.has(a.key)) firstVisible.set(a.key, a.visibleAt);
    let results: Map<string, CommandResult[]> | undefined;
    if (options.decodeResults === true) {
      results = new Map();
      for (const a of watcher.arrivals) {
        if (a.value === null) continue;
        const result = resultFromAvro(await ctx.registry.decode(a.value));
        results.set(result.commandId, [...(results.get(result.commandId) ?? []), result]);
      }
    }
    // The warm-up: commands published in the first `warmupSeconds` after publishing began.
    let firstPublished = Number.POSITIVE_INFINITY;
    for (const at of publishedAt.values()) firstPublished = Math.min(firstPublished, at);
    let missing = 0;
    for (const id of publishedAt.keys()) if (!watcher.perKey.has(id)) missing += 1;
    return {
      ...published,
      requests,
      firstRequest,
      firstVisible,
      results,
      resultCount: publishedAt.size - missing,
      measureFrom: firstPublished + options.warmupSeconds * 1000,
      missingResults: missing,
      peakRssBytes: peakRss,
      logGaps: log.abandonedGaps,
      workerLoad,
      warmupMachine: { busyShare: cpu.busyShare(publishBegan, from.at), cores: cpu.cores },
      warmupStages: began.stages === undefined || from.stages === undefined ? {} : stagesOver(began.stages, from.stages),
    };
  } finally {
    cpu.stop();
    await log.stop().catch(() => undefined);
    await stopChild(worker);
    await watcher.stop();
    await ctx.sandbox.setLatency(0);
  }
}

/** Time to send and end to end of the commands `include` picks, published in the measured window (or the warm-up). */
export function windowTimings(
  o: Pick<OpenLoopObservations, 'publishedAt' | 'firstRequest' | 'firstVisible' | 'measureFrom'>,
  warm: boolean,
  include: (commandId: string) => boolean = () => true,
): { toSend: number[]; e2e: number[]; published: number } {
  const out = { toSend: [] as number[], e2e: [] as number[], published: 0 };
  for (const [id, at] of o.publishedAt) {
    if (at < o.measureFrom !== warm || !include(id)) continue;
    out.published += 1;
    const received = o.firstRequest.get(id);
    if (received !== undefined) out.toSend.push(received - at);
    const visible = o.firstVisible.get(id);
    if (visible !== undefined) out.e2e.push(visible - at);
  }
  out.toSend = sortedNumbers(out.toSend);
  out.e2e = sortedNumbers(out.e2e);
  return out;
}

/** One open-loop run of the shipped worker (default settings, MAX_IN_FLIGHT = `inFlight`); `naming` for its topics, group and commandIds. */
export async function runOpenLoop(
  ctx: OpenLoopContext,
  options: OpenLoopOptions,
  naming: { readonly label: string; readonly idTag: string } = {
    label: `open-loop-ledger-${options.ledger ? 'on' : 'off'}`,
    idTag: options.ledger ? 'on' : 'off',
  },
): Promise<OpenLoopFigures> {
  const o = await observeOpenLoop(ctx, { ...options, ...naming });
  return openLoopFigures(o, options);
}

/** The open loop's figures from what a run saw. */
export function openLoopFigures(o: OpenLoopObservations, options: OpenLoopOptions): OpenLoopFigures {
  const measured = windowTimings(o, false);
  const warm = windowTimings(o, true);
  const send = measured.toSend;
  const end = measured.e2e;
  const warmSend = warm.toSend;
  return {
    latency: options.latency,
    ledger: options.ledger,
    meanLatencyMs: options.meanLatencyMs,
    inFlight: options.inFlight,
    capacityPerSecond: inFlightCapacityPerSecond(options.inFlight, options.meanLatencyMs),
    ratePerSecond: options.ratePerSecond,
    seconds: options.seconds,
    warmupSeconds: options.warmupSeconds,
    published: measured.published,
    results: o.resultCount,
    sent: send.length,
    timeToSendP50Ms: percentile(send, 50),
    timeToSendP99Ms: percentile(send, 99),
    timeToSendMaxMs: send.at(-1) ?? Number.NaN,
    e2eP50Ms: percentile(end, 50),
    e2eP99Ms: percentile(end, 99),
    e2eMaxMs: end.at(-1) ?? Number.NaN,
    peakRssBytes: o.peakRssBytes,
    logGaps: o.logGaps,
    machine: o.workerLoad.machine,
    stages: o.workerLoad.stages,
    warmup:
      options.warmupSeconds > 0
        ? {
            published: warm.published,
            timeToSendP99Ms: percentile(warmSend, 99),
            timeToSendMaxMs: warmSend.at(-1) ?? Number.NaN,
            e2eP99Ms: percentile(warm.e2e, 99),
            machine: o.warmupMachine,
            p99BySecondMs: p99BySecond(o.publishedAt, o.firstRequest, o.measureFrom - options.warmupSeconds * 1000, options.warmupSeconds),
            stages: o.warmupStages,
          }
        : undefined,
  };
}

/** The report's lines for the open-loop run, each target MET/NOT MET. */
export function openLoopLines(f: OpenLoopFigures): string[] {
  const spec =
    f.latency.kind === 'lognormal'
      ? `log-normal p50 ${f.latency.medianMs} ms / p99 ${f.latency.p99Ms} ms (mean ${fmt(f.meanLatencyMs, 1)} ms)`
      : JSON.stringify(f.latency);
  const verdict = (value: number, target: number): string => (value <= target ? 'MET' : 'NOT MET');
  return [
    `Open loop, intent ledger ${f.ledger ? 'on (as shipped)' : 'off (LEDGER_ENABLED=false, for comparison)'}: ${fmt(f.ratePerSecond)} cmd/s for ${f.seconds} s = ${fmt((100 * f.ratePerSecond) / f.capacityPerSecond)}% of the in-flight capacity ${fmt(f.capacityPerSecond)} cmd/s (MAX_IN_FLIGHT ${f.inFlight} ÷ mean latency ${fmt(f.meanLatencyMs, 1)} ms); upstream ${spec}; ${fmt(f.published)} published in the measured ${f.seconds} s, ${fmt(f.sent)} of them reached the service; ${fmt(f.results)} results in all; worker peak RSS ${fmt(f.peakRssBytes / 1024 ** 2)} MiB${machineNote(f.machine)}.`,
    `- time to send (published → request received by the service) p50 ${ms(f.timeToSendP50Ms)}, p99 ${ms(f.timeToSendP99Ms)}, max ${ms(f.timeToSendMaxMs)} (target p99 ≤ ${TIME_TO_SEND_P99_TARGET_MS} ms): ${verdict(f.timeToSendP99Ms, TIME_TO_SEND_P99_TARGET_MS)}`,
    `- end to end (published → result visible read_committed) p50 ${ms(f.e2eP50Ms)}, p99 ${ms(f.e2eP99Ms)}, max ${ms(f.e2eMaxMs)} (target p99 ≤ ${E2E_P99_TARGET_MS} ms): ${verdict(f.e2eP99Ms, E2E_P99_TARGET_MS)}`,
    ...(f.warmup === undefined
      ? []
      : [
          `- warm-up, not counted above: the first ${f.warmupSeconds} s of publishing at the same rate right after the worker was ready (${fmt(f.warmup.published)} commands): time to send p99 ${ms(f.warmup.timeToSendP99Ms)}, max ${ms(f.warmup.timeToSendMaxMs)}; end to end p99 ${ms(f.warmup.e2eP99Ms)}${machineNote(f.warmup.machine)}`,
        ]),
    ...(f.logGaps > 0
      ? [
          `- note: ${f.logGaps} request(s) missing from the copy of the sandbox's log (never logged, or overwritten in its ring buffer before a poll); their commands have no time to send`,
        ]
      : []),
  ];
}

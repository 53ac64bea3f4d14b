/**
 * The hostile pass of the chaos run: inputs and answers that a user measured to loop, crash or
 * wedge a partition on 0.1, published against the live worker one kind at a time.
 *
 * Per kind: every hostile record and, right behind it with the same key (so on the same
 * partition), one canary command. The verdict per kind: records out (results + dead letters) ==
 * records in; requests per command (the sandbox's log, by correlation id = commandId) within the
 * retry policy — 1 for a hostile answer, which comes after a send and must never be retried — and
 * 0 for a command whose result is REJECTED; the canary answered exactly once; the worker's peak
 * RSS while the kind was handled (VmHWM, reset per kind through /proc/<pid>/clear_refs).
 * Outcomes are printed, not judged: what the worker makes of each kind is the finding.
 *
 * The 900 KB kind is a command whose content is 900 KB (its Avro fits below the worker's
 * MAX_COMMAND_BYTES and the broker's 1 MB), so it is decoded and validated (REJECTED by
 * MAX_CONTENT_CHARS), not an undecodable record. The 20 KB metadata kind is over
 * MAX_METADATA_BYTES (4096): REJECTED before any send; its twin with metadata at the limit is sent
 * and exercises fifteen 1,000-message results on one partition.
 */
import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { readFileSync, writeFileSync } from 'node:fs';
import type { Kafka } from 'kafkajs';
import type { SendCommand } from '../../src/contracts/command.ts';
import { deadLetterFromAvro } from '../../src/contracts/dead-letter.ts';
import { resultFromAvro } from '../../src/contracts/result-avro.ts';
import type { CommandResult } from '../../src/contracts/result.ts';
import { CommandPublisher } from '../../src/kafka/command-publisher.ts';
import type { AnswerFaultKind } from '../../src/sandbox/answer-faults.ts';
import type { RequestLogView, SandboxStats } from '../../src/sandbox/state.ts';
import { fmt, mb, table } from './markdown.ts';
import { peakRssBytes, sleep } from './proc.ts';
import { ResultWatcher } from './results.ts';

export const HOSTILE_KINDS = [
  'content-900kb',
  'recipients-50000-invalid',
  'recipients-1000-x15-metadata-20kb',
  'recipients-1000-x15-metadata-4kb',
  'answer-count-overflow',
  'answer-huge-body',
  'answer-never-ends',
  'answer-price-nan',
  'answer-price-negative',
  'answer-price-400-digits',
] as const;

export type HostileKind = (typeof HOSTILE_KINDS)[number];

interface KindPlan {
  readonly description: string;
  readonly commands: (idPrefix: string, now: number) => SendCommand[];
  /** The hostile answer the sandbox gives each of these commands. */
  readonly answer?: AnswerFaultKind;
}

const CN = '+8613800138000';

function text(commandId: string, now: number, to: readonly string[], extra: { content?: string; metadata?: Record<string, string> } = {}): SendCommand {
  return {
    commandId,
    createdAt: now,
    expiresAt: null,
    metadata: extra.metadata ?? { source: 'hostile' },
    operation: { kind: 'text', to, signature: 'Acme', content: extra.content ?? 'Your code is 482913.' },
  };
}

const cnNumbers = (count: number): string[] => Array.from({ length: count }, (_, i) => `+86138${String(i).padStart(8, '0')}`);
/** `entries` metadata entries of `bytes` bytes each (keys m0…, values padded). */
const metadata = (entries: number, bytes: number): Record<string, string> =>
  Object.fromEntries(Array.from({ length: entries }, (_, i) => [`m${i}`, 'x'.repeat(bytes - `m${i}`.length)]));
const one = (answer: AnswerFaultKind, description: string): KindPlan => ({ description, answer, commands: (id, now) => [text(`${id}-0`, now, [CN])] });

export const HOSTILE_PLANS: Readonly<Record<HostileKind, KindPlan>> = {
  'content-900kb': {
    description: 'a command whose content is 900 KB (Avro ≈ 900 KB, below MAX_COMMAND_BYTES)',
    commands: (id, now) => [text(`${id}-0`, now, [CN], { content: 'x'.repeat(900 * 1024) })],
  },
  'recipients-50000-invalid': {
    description: '50,000 invalid recipients',
    commands: (id, now) => [
      text(
        `${id}-0`,
        now,
        Array.from({ length: 50_000 }, (_, i) => `bad${i}`),
      ),
    ],
  },
  'recipients-1000-x15-metadata-20kb': {
    description: '15 × 1,000 recipients with 20 KB metadata each, one partition (over MAX_METADATA_BYTES 4096)',
    commands: (id, now) => Array.from({ length: 15 }, (_, i) => text(`${id}-${i}`, now, cnNumbers(1_000), { metadata: metadata(10, 2_048) })),
  },
  'recipients-1000-x15-metadata-4kb': {
    description: '15 × 1,000 recipients with 4,000 bytes of metadata each (at the limit), one partition',
    commands: (id, now) => Array.from({ length: 15 }, (_, i) => text(`${id}-${i}`, now, cnNumbers(1_000), { metadata: metadata(4, 1_000) })),
  },
  'answer-count-overflow': one('count-overflow', 'an answer with messageCount 3,000,000,000'),
  'answer-huge-body': one('huge-body', 'a 20 MB answer body (valid JSON, chunked)'),
  'answer-never-ends': one('never-ends', 'an answer that never ends (a byte a second)'),
  'answer-price-nan': one('price-nan', 'an answer with price "NaN"'),
  'answer-price-negative': one('price-negative', 'an answer with price "-1"'),
  'answer-price-400-digits': one('price-400-digits', 'an answer with a 400-digit price'),
};

export interface HostilePassOptions {
  readonly kafka: Kafka;
  readonly registry: SchemaRegistry;
  readonly commandTopic: string;
  readonly resultTopic: string;
  readonly deadLetterTopic: string;
  /** The sandbox's base URL (its /_sandbox/ admin routes are used). */
  readonly sandboxUrl: string;
  /** The worker processes now (asked per kind: a supervisor may have restarted one). */
  readonly workerPids: () => readonly number[];
  /** Makes the pass's ids unique in the run. */
  readonly runId: string;
  /** The worker's PROVIDER_RETRY_ATTEMPTS. @defaultValue 4 */
  readonly retryAttempts?: number;
  /** @defaultValue every kind */
  readonly kinds?: readonly HostileKind[];
  /** Per kind, for every record and the canary to be handled. @defaultValue 120000 */
  readonly timeoutMsPerKind?: number;
  readonly log?: (line: string) => void;
}

export interface HostileVerdict {
  readonly kind: HostileKind;
  readonly description: string;
  readonly recordsIn: number;
  readonly results: number;
  readonly deadLetters: number;
  /** "OUTCOME ERROR_CODE" → count, over the hostile records' results (dead letters: "DLQ CODE"). */
  readonly outcomes: Readonly<Record<string, number>>;
  readonly maxRequestsPerCommand: number;
  readonly requestLimit: number;
  /** The canary's outcome, "none", or "OUTCOME ×n" when answered more than once. */
  readonly canary: string;
  readonly seconds: number;
  /** Highest VmRSS over the worker processes when the kind started (a peak below is measured from there). */
  readonly workerRssBeforeBytes: number | undefined;
  /** Highest VmHWM over the worker processes while this kind was handled; undefined when unreadable. */
  readonly workerPeakRssBytes: number | undefined;
  /** Whether the peak could be reset before the kind (else it is the peak since the worker started). */
  readonly rssResetPerKind: boolean;
  readonly problems: readonly string[];
  readonly pass: boolean;
}

export interface KindObservation {
  readonly recordsIn: number;
  /** Results per hostile command id (0 for none). */
  readonly resultsPerCommand: ReadonlyMap<string, readonly CommandResult[]>;
  readonly deadLetterCodes: readonly string[];
  readonly requestsPerCommand: ReadonlyMap<string, number>;
  readonly canaryResults: readonly CommandResult[];
  readonly requestLimit: number;
  readonly requestLogRotated: boolean;
}

const outcomeLabel = (r: CommandResult): string => `${r.outcome}${r.error === null ? '' : ` ${r.error.code}`}`;

/** Pure: the verdict of one kind from what was observed. */
export function judgeKind(observed: KindObservation): {
  problems: string[];
  outcomes: Record<string, number>;
  results: number;
  maxRequests: number;
  canary: string;
} {
  const problems: string[] = [];
  const outcomes: Record<string, number> = {};
  let results = 0;
  let maxRequests = 0;
  for (const [id, list] of observed.resultsPerCommand) {
    results += list.length;
    for (const r of list) outcomes[outcomeLabel(r)] = (outcomes[outcomeLabel(r)] ?? 0) + 1;
    const requests = observed.requestsPerCommand.get(id) ?? 0;
    maxRequests = Math.max(maxRequests, requests);
    if (requests > observed.requestLimit) problems.push(`${id}: ${requests} requests (limit ${observed.requestLimit})`);
    if (requests > 0 && list.some((r) => r.outcome === 'REJECTED')) problems.push(`${id}: REJECTED after ${requests} request(s) to the service`);
  }
  for (const code of observed.deadLetterCodes) outcomes[`DLQ ${code}`] = (outcomes[`DLQ ${code}`] ?? 0) + 1;
  const out = results + observed.deadLetterCodes.length;
  if (out !== observed.recordsIn)
    problems.push(`${observed.recordsIn} records in, ${out} out (${results} results, ${observed.deadLetterCodes.length} dead letters)`);
  const canary =
    observed.canaryResults.length === 0
      ? 'none'
      : `${outcomeLabel(observed.canaryResults[0] as CommandResult)}${observed.canaryResults.length > 1 ? ` ×${observed.canaryResults.length}` : ''}`;
  if (observed.canaryResults.length !== 1) problems.push(`canary answered ${observed.canaryResults.length} times`);
  if (observed.requestLogRotated) problems.push('the sandbox request log rotated during the kind: request counts are lower bounds (raise --log-capacity)');
  return { problems, outcomes, results, maxRequests, canary };
}

/** Current resident set size (VmRSS) in bytes, or undefined once the process is gone. */
function rssBytes(pid: number): number | undefined {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match === null ? undefined : Number(match[1]) * 1024;
  } catch {
    return undefined;
  }
}

/** Resets VmHWM to the current RSS (Linux: "5" to clear_refs); false when not allowed. */
function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

async function sandboxGet<T>(url: string, path: string): Promise<T> {
  const response = await fetch(`${url}/_sandbox/${path}`, { signal: AbortSignal.timeout(30_000) });
  if (!response.ok) throw new Error(`sandbox GET ${path}: HTTP ${response.status}`);
  return (await response.json()) as T;
}

async function sandboxPost(url: string, path: string, body: unknown): Promise<void> {
  const response = await fetch(`${url}/_sandbox/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  if (!response.ok) throw new Error(`sandbox POST ${path}: HTTP ${response.status} ${await response.text()}`);
}

/** Decodes the watchers' arrivals as they come, keeping only the ones of this pass. */
class Outputs {
  readonly results = new Map<string, CommandResult[]>();
  readonly deadLetters = new Map<string, string[]>();
  #resultsSeen = 0;
  #lettersSeen = 0;
  readonly #registry: SchemaRegistry;
  readonly #prefix: string;

  constructor(registry: SchemaRegistry, prefix: string) {
    this.#registry = registry;
    this.#prefix = prefix;
  }

  async update(results: ResultWatcher, letters: ResultWatcher): Promise<void> {
    for (; this.#resultsSeen < results.arrivals.length; this.#resultsSeen += 1) {
      const arrival = results.arrivals[this.#resultsSeen];
      if (arrival?.value == null) continue;
      // Seen once; drop the bytes (the watcher reads the whole topic from its beginning).
      results.arrivals[this.#resultsSeen] = { ...arrival, value: null };
      // Results are keyed by commandId; skip the run's other results without decoding them.
      if (!arrival.key.startsWith(this.#prefix)) continue;
      const result = resultFromAvro(await this.#registry.decode(arrival.value));
      this.results.set(result.commandId, [...(this.results.get(result.commandId) ?? []), result]);
    }
    for (; this.#lettersSeen < letters.arrivals.length; this.#lettersSeen += 1) {
      const arrival = letters.arrivals[this.#lettersSeen];
      if (arrival?.value == null) continue;
      letters.arrivals[this.#lettersSeen] = { ...arrival, value: null };
      const letter = deadLetterFromAvro(await this.#registry.decode(arrival.value));
      const key = letter.key?.toString('utf8') ?? '';
      if (key.startsWith(this.#prefix)) this.deadLetters.set(key, [...(this.deadLetters.get(key) ?? []), letter.error.code]);
    }
  }
}

/**
 * Runs every kind in turn against the live worker and returns one verdict row per kind. Leaves
 * no answer faults behind in the sandbox. Call after the fuzz pass, with the worker still running.
 */
export async function runHostilePass(options: HostilePassOptions): Promise<HostileVerdict[]> {
  const log = options.log ?? (() => undefined);
  const prefix = `hostile-${options.runId}-`;
  const retryAttempts = options.retryAttempts ?? 4;
  const timeoutMs = options.timeoutMsPerKind ?? 120_000;
  const publisher = new CommandPublisher(options.kafka, options.registry, options.commandTopic);
  const resultWatcher = new ResultWatcher(options.kafka, options.resultTopic, { keepValues: true });
  const letterWatcher = new ResultWatcher(options.kafka, options.deadLetterTopic, { keepValues: true });
  const outputs = new Outputs(options.registry, prefix);
  const verdicts: HostileVerdict[] = [];
  await Promise.all([publisher.connect(), resultWatcher.start(), letterWatcher.start()]);
  try {
    for (const kind of options.kinds ?? HOSTILE_KINDS) {
      const plan = HOSTILE_PLANS[kind];
      const key = `${prefix}${kind}`;
      const now = Date.now();
      const commands = plan.commands(key, now);
      const canary = text(`${key}-canary`, now, [CN]);
      const ids = commands.map((c) => c.commandId);
      if (plan.answer !== undefined) await sandboxPost(options.sandboxUrl, 'answer-faults', { set: Object.fromEntries(ids.map((id) => [id, plan.answer])) });
      const statsBefore = await sandboxGet<SandboxStats>(options.sandboxUrl, 'stats');
      const pids = options.workerPids();
      const reset = pids.length > 0 && pids.map(resetPeakRss).every(Boolean);
      const before = pids.map(rssBytes).filter((n): n is number => n !== undefined);
      const started = Date.now();
      await publisher.publishRaw(await Promise.all(commands.map(async (c) => ({ key, value: await publisher.encode(c) }))));
      await publisher.publishRaw([{ key, value: await publisher.encode(canary) }]);
      log(`hostile: ${kind}: published ${commands.length} record(s) and a canary on key ${key}`);

      const handled = (): boolean => ids.filter((id) => outputs.results.has(id)).length + (outputs.deadLetters.get(key)?.length ?? 0) >= ids.length;
      let deadline = false;
      while (!(handled() && outputs.results.has(canary.commandId))) {
        if (Date.now() - started > timeoutMs) {
          deadline = true;
          break;
        }
        await sleep(100);
        await outputs.update(resultWatcher, letterWatcher);
      }
      const seconds = (Date.now() - started) / 1000;
      // A little longer, so a second result for the same command (the thing to catch) can show up.
      await sleep(2_000);
      await outputs.update(resultWatcher, letterWatcher);
      const peaks = options
        .workerPids()
        .map(peakRssBytes)
        .filter((n): n is number => n !== undefined);

      const statsAfter = await sandboxGet<SandboxStats>(options.sandboxUrl, 'stats');
      const requestsPerCommand = new Map<string, number>();
      for (const id of ids) {
        const answer = await sandboxGet<{ entries: RequestLogView[] }>(options.sandboxUrl, `requests?correlationId=${encodeURIComponent(id)}&limit=1000`);
        requestsPerCommand.set(id, answer.entries.length);
      }
      if (plan.answer !== undefined) {
        // The answer-fault counters do not rotate: the authoritative count for targeted commands.
        const view = await sandboxGet<{ requests: Record<string, number> }>(options.sandboxUrl, 'answer-faults');
        for (const id of ids) requestsPerCommand.set(id, Math.max(requestsPerCommand.get(id) ?? 0, view.requests[id] ?? 0));
        await sandboxPost(options.sandboxUrl, 'answer-faults', { remove: ids });
      }
      const requestLimit = plan.answer === undefined ? retryAttempts : 1;
      const judged = judgeKind({
        recordsIn: ids.length,
        resultsPerCommand: new Map(ids.map((id) => [id, outputs.results.get(id) ?? []])),
        deadLetterCodes: outputs.deadLetters.get(key) ?? [],
        requestsPerCommand,
        canaryResults: outputs.results.get(canary.commandId) ?? [],
        requestLimit,
        requestLogRotated: plan.answer === undefined && statsAfter.requests - statsBefore.requests > statsAfter.logCapacity,
      });
      const problems = deadline ? [`not handled within ${fmt(timeoutMs / 1000)} s`, ...judged.problems] : judged.problems;
      const verdict: HostileVerdict = {
        kind,
        description: plan.description,
        recordsIn: ids.length,
        results: judged.results,
        deadLetters: outputs.deadLetters.get(key)?.length ?? 0,
        outcomes: judged.outcomes,
        maxRequestsPerCommand: judged.maxRequests,
        requestLimit,
        canary: judged.canary,
        seconds,
        workerRssBeforeBytes: before.length === 0 ? undefined : Math.max(...before),
        workerPeakRssBytes: peaks.length === 0 ? undefined : Math.max(...peaks),
        rssResetPerKind: reset,
        problems,
        pass: problems.length === 0,
      };
      verdicts.push(verdict);
      log(
        `hostile: ${kind}: ${verdict.pass ? 'PASS' : `FAIL (${problems.join('; ')})`}; ${
          Object.entries(verdict.outcomes)
            .map(([o, n]) => `${o} ×${n}`)
            .join(', ') || 'no output'
        }; canary ${verdict.canary}; ${fmt(seconds, 1)} s; worker RSS ${mb(verdict.workerRssBeforeBytes ?? Number.NaN)} → peak ${mb(verdict.workerPeakRssBytes ?? Number.NaN)}`,
      );
    }
  } finally {
    await Promise.all([publisher.disconnect(), resultWatcher.stop(), letterWatcher.stop()]);
  }
  return verdicts;
}

/** The verdict rows as a markdown table for the chaos report. */
export function hostileTable(verdicts: readonly HostileVerdict[]): string {
  return table(
    [
      'kind',
      'records in',
      'results',
      'dead letters',
      'outcomes',
      'max requests / command (limit)',
      'canary',
      'handled in',
      'worker RSS before → peak',
      'verdict',
    ],
    verdicts.map((v) => [
      v.kind,
      fmt(v.recordsIn),
      fmt(v.results),
      fmt(v.deadLetters),
      Object.entries(v.outcomes)
        .map(([o, n]) => `${o} ×${n}`)
        .join(', ') || '–',
      `${v.maxRequestsPerCommand} (${v.requestLimit})`,
      v.canary,
      `${fmt(v.seconds, 1)} s`,
      `${mb(v.workerRssBeforeBytes ?? Number.NaN)} → ${mb(v.workerPeakRssBytes ?? Number.NaN)}${v.rssResetPerKind ? '' : ' (peak since start)'}`,
      v.pass ? 'PASS' : `FAIL: ${v.problems.join('; ')}`,
    ]),
    ['l', 'r', 'r', 'r', 'l', 'r', 'l', 'r', 'r', 'l'],
  );
}

/** One line per failed kind, for the chaos run's failure list. */
export function hostileFailures(verdicts: readonly HostileVerdict[]): string[] {
  return verdicts.filter((v) => !v.pass).map((v) => `hostile ${v.kind}: ${v.problems.join('; ')}`);
}

/**
 * sms-worker as shipped: the CLI (`node src/cli/main.ts run`) in its own process, configured only
 * by environment. Default settings except what a deployment must set anyway (topics, group,
 * transactional-id prefix, addresses), LOG_LEVEL=warn and HTTP_PORT=0 (a free port).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CLI_MAIN, REPO_ROOT, sleep, startNode, type Child } from '../lib/proc.ts';

export interface WorkerTarget {
  readonly brokers: string;
  readonly registryUrl: string;
  readonly providerUrl: string;
  readonly commands: string;
  readonly results: string;
  readonly deadLetter: string;
  readonly group: string;
}

export function workerEnv(target: WorkerTarget, overrides: Record<string, string> = {}): Record<string, string> {
  return {
    KAFKA_BROKERS: target.brokers,
    SCHEMA_REGISTRY_URL: target.registryUrl,
    PROVIDER_BASE_URL: target.providerUrl,
    PROVIDER_ACCESS_KEY_ID: 'bench-access-key',
    COMMAND_TOPIC: target.commands,
    RESULT_TOPIC: target.results,
    DEAD_LETTER_TOPIC: target.deadLetter,
    LEDGER_TOPIC: `${target.commands}.ledger`,
    CONSUMER_GROUP: target.group,
    TRANSACTIONAL_ID_PREFIX: `${target.group}-tx`,
    TOPICS_CREATE: 'true',
    TOPICS_REPLICATION_FACTOR: '1',
    HTTP_PORT: '0',
    // BENCH_WORKER_LOG_LEVEL: a diagnostic run's workers log more (e.g. info: rebalances, claims and their steps' times).
    LOG_LEVEL: process.env['BENCH_WORKER_LOG_LEVEL'] ?? 'warn',
    ...overrides,
  };
}

export function startWorker(env: Record<string, string>): Child {
  return startNode(CLI_MAIN, ['run'], { ...imageCompileCache(), ...env });
}

let compileCacheDir: string | undefined;

/**
 * The image's V8 compile cache (the Dockerfile's NODE_COMPILE_CACHE, filled at build time by
 * src/cli/compile-cache.ts), so the bench's workers start as the image's pods do: filled once per
 * bench process in a directory of its own, removed at exit. BENCH_COMPILE_CACHE=off: every worker
 * compiles its modules at start, as a source checkout without the cache does (an A/B of the cache).
 */
function imageCompileCache(): Record<string, string> {
  if (process.env['BENCH_COMPILE_CACHE'] === 'off') return {};
  if (compileCacheDir === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'sms-worker-bench-compile-cache-'));
    const module = pathToFileURL(join(REPO_ROOT, 'src', 'cli', 'compile-cache.ts')).href;
    const filled = spawnSync(process.execPath, ['--input-type=module', '-e', `await (await import(${JSON.stringify(module)})).loadShippedModules();`], {
      cwd: REPO_ROOT,
      env: { ...process.env, NODE_COMPILE_CACHE: dir },
      encoding: 'utf8',
    });
    if (filled.status !== 0) throw new Error(`could not fill the compile cache in ${dir}: ${filled.stderr}`);
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    compileCacheDir = dir;
  }
  return { NODE_COMPILE_CACHE: compileCacheDir };
}

/**
 * Resolves once the worker's /readyz says it has joined its group; throws if it exits or `timeoutMs`
 * passes. `probe`: look as a kubelet's readiness probe would (first after a delay, then every period).
 */
export async function waitReady(
  port: number,
  worker: Child,
  timeoutMs: number,
  probe: { readonly initialDelayMs?: number; readonly periodMs?: number; readonly requestTimeoutMs?: number } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  if (probe.initialDelayMs !== undefined) await sleep(probe.initialDelayMs);
  while (Date.now() < deadline) {
    if (worker.process.exitCode !== null || worker.process.signalCode !== null) throw new Error(`worker exited before it was ready:\n${worker.output()}`);
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(probe.requestTimeoutMs ?? 2_000) }).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) return;
    await sleep(probe.periodMs ?? 200);
  }
  throw new Error(`worker not ready after ${timeoutMs} ms:\n${worker.output()}`);
}

/** A free loopback port for the worker's HTTP server, so the harness can read its /metrics. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no TCP address for a free port');
  return address.port;
}

/** What the harness reads from the worker's /metrics at the end of a run (totals since start). */
export interface WorkerCounters {
  /** Kafka transactions committed (results + offsets, and the ledger checkpoint when on). */
  readonly transactions: number;
  /** Sum of their durations, seconds (`sms_worker_commit_duration_seconds_sum`). */
  readonly commitSeconds: number;
  /** Commands marked "attempting" in the ledger (0 with the ledger off). */
  readonly ledgerMarks: number;
  /** The whole /metrics text, for figures read from it elsewhere (send-stages.ts). */
  readonly text: string;
}

/** Reads the worker's counters from its /metrics (Prometheus text); undefined if it does not answer. */
export async function scrapeWorker(port: number): Promise<WorkerCounters | undefined> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5_000) });
    if (!response.ok) return undefined;
    const text = await response.text();
    const value = (pattern: RegExp): number => {
      const match = pattern.exec(text);
      return match === null ? 0 : Number(match[1]);
    };
    return {
      transactions: value(/^sms_worker_transactions_total\{outcome="committed"\} (\S+)$/m),
      commitSeconds: value(/^sms_worker_commit_duration_seconds_sum(?:\{\})? (\S+)$/m),
      ledgerMarks: value(/^sms_worker_ledger_marks_total(?:\{\})? (\S+)$/m),
      text,
    };
  } catch {
    return undefined;
  }
}

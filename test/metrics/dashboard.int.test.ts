/**
 * The dashboard against live data: a real Prometheus (3.16, built from the Go module proxy by
 * `scripts/ensure-promtool.sh prometheus` and cached) scrapes a real worker that processes commands
 * on the test stack, including a retried attempt, an answer lost after the send (UNKNOWN), an
 * invalid command, an undecodable record and a command to a region without an upstream (a paused
 * route, a refusal), and a real receipts receiver to which the sandbox
 * posts a delivery report for each accepted message (and to which one post with a wrong token is
 * made); then every panel query, as Grafana sends it, is run on that Prometheus: each must succeed,
 * and each must return data unless it watches something this run cannot produce (listed below,
 * with why).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { stringify } from 'yaml';
import { createLogger } from '../../src/observability/logger.ts';
import { loadReceiverConfig } from '../../src/receipts/config.ts';
import { startReceiver } from '../../src/receipts/receiver.ts';
import { startSandbox, type RunningSandbox } from '../../src/sandbox/index.ts';
import type { Worker } from '../../src/worker/worker.ts';
import { eventually } from '../../tools/poll.ts';
import { freePort, startDaemon, stopPid } from '../../tools/stack/processes.ts';
import { asSent, queries } from '../helm/dashboard.ts';
import { ensureBuiltTool, TOOL_BUILD_TIMEOUT_MS } from '../helm/tools.ts';
import { createTopics, testBrokers, testKafka, uniqueName } from '../helpers/kafka.ts';
import { publisherFor, ResultCollector, startTestWorker, testTopics, textCommand, workerEnv } from '../helpers/worker.ts';

/** Panels that stay empty in this run, and why: each needs an event the run cannot cause. */
const EMPTY_IN_THIS_RUN: Record<string, string> = {
  'In-doubt commands found (time range)': 'needs a command marked in the ledger by an earlier owner that crashed before its result',
  'Blocked prefixes and regions': 'the guards are off in this run (no VELOCITY_* limit); guard.int and documented-metrics.int move these metrics',
  'Velocity rejections by rule and region': 'the guards are off in this run (no VELOCITY_* limit)',
  "Spend in the caps' windows against the caps": 'the guards are off in this run (no SPEND_CAP_*)',
};

const NAMESPACE = 'dashboard-test';
const JOB = 'sms-worker';
const RECEIPTS_JOB = 'sms-worker-receipts';
const RECEIPTS_TOKEN = `tok_dashboard_${Math.random().toString(36).slice(2, 12)}`;

let sandbox: RunningSandbox;
let worker: Worker;
let prometheusPid: number | undefined;
let prometheusUrl = '';
let dir = '';
const cleanups: (() => Promise<unknown>)[] = [];

interface QueryAnswer {
  status: string;
  error?: string;
  data?: { result: unknown[] };
}

async function query(promql: string): Promise<QueryAnswer> {
  const response = await fetch(`${prometheusUrl}/api/v1/query?query=${encodeURIComponent(promql)}`);
  return (await response.json()) as QueryAnswer;
}

beforeAll(async () => {
  const prometheus = ensureBuiltTool('prometheus');
  const receiptsTopic = uniqueName('receipts');
  await createTopics(testKafka(), [{ topic: receiptsTopic, partitions: 1 }]);
  const receiver = await startReceiver(
    loadReceiverConfig({
      KAFKA_BROKERS: testBrokers().join(','),
      SCHEMA_REGISTRY_URL: inject('schemaRegistryUrl'),
      RECEIPTS_TOPIC: receiptsTopic,
      RECEIPTS_PATH_TOKEN: RECEIPTS_TOKEN,
      RECEIPTS_HOST: '127.0.0.1',
      RECEIPTS_PORT: '0',
      RECEIPTS_HTTP_PORT: '0',
    }),
    { logger: createLogger('silent') },
  );
  cleanups.push(() => receiver.close());
  // A report for every accepted message, some of them saying it failed (receipts by status).
  sandbox = await startSandbox({
    port: 0,
    faults: { latency: { kind: 'fixed', ms: 10 } },
    deliveryReports: { callbackUrl: `${receiver.url}/receipts/${RECEIPTS_TOKEN}`, delayMs: 0, failRate: 0.3 },
  });
  // Someone posting without the token: a rejected post (401).
  const refused = await fetch(`${receiver.url}/receipts/not-the-token`, { method: 'POST', body: '[]', headers: { 'content-type': 'application/json' } });
  expect(refused.status).toBe(401);
  // Two 503s (throttled: retried), then an answer lost after the send (ambiguous: an UNKNOWN result).
  sandbox.setFaults({ retryAfterSec: 0, enqueue: [{ kind: 'http503', count: 2 }, { kind: 'reset-after' }] });
  const topics = testTopics();
  await createTopics(testKafka(), [{ topic: topics.commands, partitions: 2 }, { topic: topics.results }, { topic: topics.deadLetter }]);
  ({ worker } = await startTestWorker(workerEnv(topics, sandbox.url)));
  cleanups.push(() => worker.stop());

  const publisher = await publisherFor(testKafka(), topics.commands);
  cleanups.push(() => publisher.disconnect());
  const commands = Array.from({ length: 30 }, () => textCommand());
  const invalid = textCommand({ to: ['+86 not a number'] });
  await publisher.publish([...commands, invalid].map((command) => ({ command })));
  await publisher.publishRaw([{ key: 'garbage', value: Buffer.from('not an Avro command') }]);
  const results = await ResultCollector.start(topics.results);
  cleanups.push(() => results.stop());
  await results.waitFor([...commands, invalid].map((c) => c.commandId));
  // Then (the faults above used up) a text to AU, where the sandbox has no upstream: the service
  // answers 101301 and the worker pauses that route; it stays paused (nothing to AU goes through).
  await publisher.publish([{ command: textCommand({ to: ['+61412345678'] }) }]);

  dir = mkdtempSync(join(tmpdir(), 'sms-worker-prometheus-'));
  const port = await freePort();
  prometheusUrl = `http://127.0.0.1:${port}`;
  writeFileSync(
    join(dir, 'prometheus.yml'),
    stringify({
      global: { scrape_interval: '1s', evaluation_interval: '1s' },
      scrape_configs: [
        { job_name: JOB, static_configs: [{ targets: [`127.0.0.1:${String(worker.httpPort)}`], labels: { namespace: NAMESPACE, pod: 'worker-0' } }] },
        {
          job_name: RECEIPTS_JOB,
          static_configs: [{ targets: [`127.0.0.1:${String(receiver.httpPort)}`], labels: { namespace: NAMESPACE, pod: 'receipts-0' } }],
        },
      ],
    }),
  );
  const child = startDaemon(
    prometheus,
    [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
    { logFile: join(dir, 'prometheus.log'), detached: false },
  );
  prometheusPid = child.pid;
  // Enough scrapes for rate() over the 20 s window Grafana would use at a 1 s scrape interval.
  await eventually(
    async () => ((await query(`count_over_time(sms_worker_commands_consumed_total{job="${JOB}"}[1m]) >= 8`)).data?.result.length ?? 0) > 0,
    90_000,
    'Prometheus to scrape the worker eight times',
  );
  await eventually(
    async () =>
      ((await query(`sms_worker_route_paused_since_timestamp_seconds{job="${JOB}", operation="text", region="AU"}`)).data?.result.length ?? 0) > 0 &&
      ((await query(`count_over_time(sms_worker_refusals_total{job="${JOB}", code="101301", scope="route"}[1m]) >= 3`)).data?.result.length ?? 0) > 0,
    90_000,
    'Prometheus to see the route to AU paused and its refusal counted',
  );
  // Every message the sandbox accepted (the 30 commands, the UNKNOWN one included) has its report published.
  await eventually(
    async () => ((await query(`sum(sms_receipts_receipts_total{job="${RECEIPTS_JOB}"}) >= ${String(commands.length)}`)).data?.result.length ?? 0) > 0,
    90_000,
    'Prometheus to see the receiver publish a receipt per accepted message',
  );
}, 2 * TOOL_BUILD_TIMEOUT_MS);

afterAll(async () => {
  if (prometheusPid !== undefined) await stopPid(prometheusPid, 10_000);
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  await sandbox?.close();
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

describe('the Grafana dashboard on a Prometheus scraping a live worker', () => {
  it('every panel query succeeds, and returns data unless its panel is listed as empty in this run', async () => {
    const failures: string[] = [];
    const empty = new Set<string>();
    const withData = new Set<string>();
    for (const { panel, expr } of queries) {
      const answer = await query(asSent(expr, { rateInterval: '20s', range: '5m', namespace: NAMESPACE, job: JOB, receiptsJob: RECEIPTS_JOB }));
      if (answer.status !== 'success') failures.push(`${panel}: ${answer.error ?? answer.status}`);
      else if ((answer.data?.result.length ?? 0) === 0) empty.add(panel);
      else withData.add(panel);
    }
    expect(failures).toEqual([]);
    // A panel with several queries shows data when any of them has some.
    const emptyPanels = [...empty].filter((p) => !withData.has(p)).sort();
    expect(emptyPanels).toEqual(Object.keys(EMPTY_IN_THIS_RUN).sort());
  });
});

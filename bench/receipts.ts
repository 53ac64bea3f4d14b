/**
 * `node bench/receipts.ts`: how many delivery reports per second the receipts receiver turns into
 * acknowledged Kafka records, and how long a post waits for its 200, at a few concurrencies.
 * Uses the stack from `npm run stack:up` (or starts one); receiver and client share this process
 * and the machine's cores, so the figures are a floor for a dedicated pod. Not part of `npm test`.
 *
 *   --posts 3000          posts per concurrency level
 *   --concurrency 1,8,32  posts in flight at once (one keep-alive connection each)
 *   --reports 1           reports per post (the service posts one per message)
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { createTopics } from '../src/kafka/admin.ts';
import { createKafka, plaintextKafkaSettings } from '../src/kafka/client.ts';
import { createLogger } from '../src/observability/logger.ts';
import { loadReceiverConfig } from '../src/receipts/config.ts';
import { startReceiver } from '../src/receipts/receiver.ts';
import { startStack } from '../tools/stack/index.ts';
import { fmt, table } from './lib/markdown.ts';
import { percentile, sortedNumbers } from './lib/stats.ts';

const { values } = parseArgs({
  options: { posts: { type: 'string', default: '3000' }, concurrency: { type: 'string', default: '1,8,32' }, reports: { type: 'string', default: '1' } },
});
const posts = Number(values.posts);
const levels = values.concurrency.split(',').map(Number);
const reportsPerPost = Number(values.reports);
const say = (line: string): void => console.error(`[bench:receipts] ${line}`);

function post(agent: http.Agent, url: URL, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function report(): Record<string, unknown> {
  const now = Date.now();
  return {
    id: randomUUID().replaceAll('-', ''),
    status: 'delivered',
    to: '+8613800138000',
    regionCode: 'CN',
    countryCode: '86',
    messageCount: 1,
    price: '0.045000',
    currency: 'CNY',
    errorCode: 'DELIVRD',
    errorMessage: 'Delivered',
    submitDate: new Date(now - 3_000).toISOString(),
    doneDate: new Date(now).toISOString(),
  };
}

const stack = await startStack({ log: say });
const topic = `bench.receipts.${randomUUID().slice(0, 6)}`;
const token = randomUUID().replaceAll('-', '');
await createTopics(createKafka(plaintextKafkaSettings(stack.kafkaBrokers, 'bench-admin'), createLogger('silent')), [{ topic, partitions: 6 }]);
const receiver = await startReceiver(
  loadReceiverConfig({
    KAFKA_BROKERS: stack.kafkaBrokers,
    SCHEMA_REGISTRY_URL: stack.schemaRegistryUrl,
    RECEIPTS_TOPIC: topic,
    RECEIPTS_PATH_TOKEN: token,
    RECEIPTS_HOST: '127.0.0.1',
    RECEIPTS_PORT: '0',
    RECEIPTS_HTTP_PORT: '0',
    // One client address makes every post: the per-source limit must not be what is measured.
    RECEIPTS_RATE_LIMIT_PER_SECOND: '1000000',
    RECEIPTS_RATE_LIMIT_BURST: '1000000',
  }),
  { logger: createLogger('warn', { component: 'receipts' }) },
);
const url = new URL(`${receiver.url}/receipts/${token}`);
const rows: string[][] = [];
try {
  // Warm-up: connections, metadata, schema cache.
  await post(new http.Agent({ keepAlive: true }), url, JSON.stringify(report()));
  for (const concurrency of levels) {
    const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
    const latencies: number[] = [];
    let next = 0;
    let failures = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < posts) {
          next += 1;
          const body = JSON.stringify(reportsPerPost === 1 ? report() : Array.from({ length: reportsPerPost }, report));
          const t0 = performance.now();
          const status = await post(agent, url, body);
          latencies.push(performance.now() - t0);
          if (status !== 200) failures += 1;
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    agent.destroy();
    const sorted = sortedNumbers(latencies);
    rows.push([
      String(concurrency),
      fmt(posts / seconds),
      fmt((posts * reportsPerPost) / seconds),
      fmt(percentile(sorted, 50), 1),
      fmt(percentile(sorted, 99), 1),
      String(failures),
    ]);
    say(`concurrency ${concurrency}: ${fmt(posts / seconds)} posts/s`);
  }
} finally {
  await receiver.close();
  await stack.stop();
}
console.log(
  `## Receipts receiver: ${posts} posts per level, ${reportsPerPost} report(s) per post, ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown CPU'})\n`,
);
console.log(table(['in flight', 'posts/s', 'receipts/s', 'p50 ms', 'p99 ms', 'non-200'], rows, ['r', 'r', 'r', 'r', 'r', 'r']));
process.exit(0);

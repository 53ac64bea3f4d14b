import { createServer, request as httpRequest, type Server } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';
import { decodeDeadLetter } from '../helpers/dead-letters.ts';
import { createTopics, testKafka } from '../helpers/kafka.ts';
import { publisherFor, ResultCollector, startTestWorker, testTopics, textCommand, within, workerEnv } from '../helpers/worker.ts';

/**
 * One hostile input each, measured by a user to loop, crash or wedge a partition on 0.1. Each
 * test checks: one result (or dead letter) for the hostile record, requests within the retry
 * policy, and a canary behind it on the same partition answered (the partition keeps moving).
 */
const sandbox = useSandbox();
let rewrite: ((body: string) => string) | undefined;
let proxy: Server;
let proxyUrl: string;

beforeAll(async () => {
  // The sandbox behind a proxy that can rewrite its answers: a service answering with values
  // the spec does not expect.
  proxy = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const upstream = httpRequest(`${sandbox.url}${req.url ?? '/'}`, { method: req.method, headers: req.headers }, (answer) => {
        const parts: Buffer[] = [];
        answer.on('data', (c: Buffer) => parts.push(c));
        answer.on('end', () => {
          const body = Buffer.concat(parts).toString('utf8');
          const out = rewrite === undefined ? body : rewrite(body);
          res.writeHead(answer.statusCode ?? 500, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) });
          res.end(out);
        });
      });
      upstream.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const address = proxy.address();
  proxyUrl = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
});
afterAll(async () => {
  await new Promise((resolve) => proxy.close(resolve));
});
const cleanups = useCleanups();
afterEach(() => {
  rewrite = undefined;
});

async function setup(url = proxyUrl, overrides: Record<string, string> = {}) {
  const topics = testTopics();
  // One partition: the hostile record and its canary share it.
  await createTopics(testKafka(), [{ topic: topics.commands, partitions: 1 }, { topic: topics.results }, { topic: topics.deadLetter }]);
  const { worker } = await startTestWorker(workerEnv(topics, url, { TOPICS_PARTITIONS: '1', ...overrides }));
  cleanups.add(() => worker.stop());
  const publisher = await publisherFor(testKafka(), topics.commands);
  cleanups.add(() => publisher.disconnect());
  const results = await ResultCollector.start(topics.results);
  cleanups.add(() => results.stop());
  return { worker, topics, publisher, results };
}

function requests(commandId: string): number {
  return sandbox.state.requests({ correlationId: commandId }).length;
}

function cnNumbers(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `+86138${String(i).padStart(8, '0')}`);
}

describe('hostile answers and commands never loop, crash or wedge a partition', () => {
  it('an answer with messageCount 3,000,000,000 (beyond Avro int): one UNKNOWN result, one request, the next command answered', async () => {
    const { publisher, results } = await setup();
    rewrite = (body) => body.replace(/"messageCount":\s*\d+/, '"messageCount":3000000000');
    const hostile = textCommand();
    await within(30_000, 'publishing', publisher.publish([{ command: hostile }]));
    const got = await results.waitFor([hostile.commandId]);
    expect(got.get(hostile.commandId)?.outcome).toBe('UNKNOWN');
    rewrite = undefined;
    const canary = textCommand();
    await within(30_000, 'publishing', publisher.publish([{ command: canary }]));
    expect((await results.waitFor([canary.commandId])).get(canary.commandId)?.outcome).toBe('SENT');
    expect(requests(hostile.commandId)).toBe(1);
    expect(results.byCommand.get(hostile.commandId)?.length).toBe(1);
  });

  it('a 400-digit price: one UNKNOWN result (a malformed answer after the send), the worker stays up, the next command answered', async () => {
    const { worker, publisher, results } = await setup();
    rewrite = (body) => body.replace(/"price":\s*"[^"]*"/, `"price":"${'9'.repeat(400)}"`);
    const hostile = textCommand();
    await within(30_000, 'publishing', publisher.publish([{ command: hostile }]));
    expect((await results.waitFor([hostile.commandId])).get(hostile.commandId)).toMatchObject({
      outcome: 'UNKNOWN',
      error: { code: 'PROVIDER_MALFORMED_RESPONSE' },
    });
    rewrite = undefined;
    const canary = textCommand();
    await within(30_000, 'publishing', publisher.publish([{ command: canary }]));
    expect((await results.waitFor([canary.commandId])).get(canary.commandId)?.outcome).toBe('SENT');
    expect(requests(hostile.commandId)).toBe(1);
    expect(worker.health().live().ok).toBe(true);
    const metrics = await (await fetch(`http://127.0.0.1:${worker.httpPort}/metrics`)).text();
    expect(metrics).toMatch(/sms_worker_results_total/);
  });

  it('an error answer with a 2 MB message: one bounded result (the answer is over the size cap: UNKNOWN), the next command answered once', async () => {
    const { publisher, results } = await setup();
    rewrite = () => JSON.stringify({ code: '999999', message: 'x'.repeat(2_000_000) });
    const hostile = textCommand();
    await within(30_000, 'publishing', publisher.publish([{ command: hostile }]));
    const got = (await results.waitFor([hostile.commandId])).get(hostile.commandId);
    // Over PROVIDER_MAX_RESPONSE_BYTES (1 MiB): not read further, and not trusted to say "not sent".
    expect(got?.outcome).toBe('UNKNOWN');
    expect(got?.error?.code).toBe('PROVIDER_RESPONSE_TOO_LARGE');
    expect(got?.error?.message.length ?? 0).toBeLessThan(10_000);
    expect(requests(hostile.commandId)).toBe(1);
    rewrite = undefined;
    const canary = textCommand();
    await within(30_000, 'publishing', publisher.publish([{ command: canary }]));
    expect((await results.waitFor([canary.commandId])).get(canary.commandId)?.outcome).toBe('SENT');
    expect(requests(canary.commandId)).toBe(1);
  });

  it('15 commands with 1,000 recipients each on one partition: all answered once, the command behind them too', async () => {
    // A long commit interval puts all fifteen results (≈ 2 MB) in one transaction, over the
    // broker's 1 MB limit unless sends are chunked by size.
    const { publisher, results } = await setup(sandbox.url, { COMMIT_INTERVAL_MS: '3000' });
    const big = Array.from({ length: 15 }, () => textCommand({ to: cnNumbers(1_000), metadata: { note: 'm'.repeat(3_000) } }));
    const canary = textCommand();
    await within(60_000, 'publishing', publisher.publish([...big.map((command) => ({ command })), { command: canary }]));
    const got = await results.waitFor([...big.map((c) => c.commandId), canary.commandId], 90_000);
    expect(big.map((c) => got.get(c.commandId)?.outcome)).toEqual(big.map(() => 'SENT'));
    expect(big.map((c) => got.get(c.commandId)?.messages.length)).toEqual(big.map(() => 1_000));
    expect(got.get(canary.commandId)?.outcome).toBe('SENT');
    expect(big.map((c) => requests(c.commandId))).toEqual(big.map(() => 1));
    expect(big.map((c) => results.byCommand.get(c.commandId)?.length)).toEqual(big.map(() => 1));
  });

  it('50,000 invalid recipients: one small REJECTED result, the next command answered', async () => {
    const { publisher, results } = await setup(sandbox.url);
    const hostile = textCommand({ to: Array.from({ length: 50_000 }, (_, i) => `bad${i}`) });
    const canary = textCommand();
    await within(60_000, 'publishing', publisher.publish([{ command: hostile }, { command: canary }]));
    const got = await results.waitFor([hostile.commandId, canary.commandId], 60_000);
    expect(got.get(hostile.commandId)?.outcome).toBe('REJECTED');
    expect(got.get(hostile.commandId)?.error?.details.length ?? 0).toBeLessThanOrEqual(20);
    expect(got.get(canary.commandId)?.outcome).toBe('SENT');
    expect(requests(hostile.commandId)).toBe(0);
  });

  it('an undecodable record of 1,048,485 bytes: one dead letter (value described, not copied), the next command answered', async () => {
    const { publisher, results, topics } = await setup(sandbox.url);
    const huge = Buffer.alloc(1_048_485, 0x7b);
    await within(30_000, 'publishing', publisher.publishRaw([{ key: 'huge', value: huge }]));
    const canary = textCommand();
    await within(30_000, 'publishing', publisher.publish([{ command: canary }]));
    expect((await results.waitFor([canary.commandId], 60_000)).get(canary.commandId)?.outcome).toBe('SENT');
    const [letter] = await decodeDeadLetter(topics.deadLetter, 1);
    expect(letter?.source.offset).toBe('0');
    expect(letter?.value?.length ?? 0).toBeLessThan(huge.length);
  });
});

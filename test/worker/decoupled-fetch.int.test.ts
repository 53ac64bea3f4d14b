import { createServer, request as httpRequest, type Server } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';
import { createTopics, testKafka, withAdmin } from '../helpers/kafka.ts';
import { eventually } from '../helpers/kafka.ts';
import { publisherFor, ResultCollector, startTestWorker, testTopics, textCommand, within, workerEnv } from '../helpers/worker.ts';

/**
 * Fetching does not wait for sending: with a call to the service held open, commands fetched
 * after it (another key, same partition) reach the service meanwhile. On 0.1 a partition's
 * next batch was fetched only once every send of the previous one had returned, so one slow call
 * held up every command behind it.
 */
const sandbox = useSandbox();
let proxy: Server;
let proxyUrl: string;
/** Requests for these commandIds (X-Correlation-Id) wait until released. */
const held = new Map<string, { arrived: () => void; release: Promise<void> }>();

beforeAll(async () => {
  proxy = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const forward = (): void => {
        const upstream = httpRequest(`${sandbox.url}${req.url ?? '/'}`, { method: req.method, headers: req.headers }, (answer) => {
          res.writeHead(answer.statusCode ?? 500, answer.headers);
          answer.pipe(res);
        });
        upstream.end(Buffer.concat(chunks));
      };
      const hold = held.get(String(req.headers['x-correlation-id']));
      if (hold === undefined) return forward();
      hold.arrived();
      void hold.release.then(forward);
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const address = proxy.address();
  proxyUrl = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
});
afterAll(async () => {
  await new Promise((resolve) => proxy.close(resolve));
});
afterEach(() => held.clear());
const cleanups = useCleanups();

describe('fetching is decoupled from sending', () => {
  it('commands fetched after a slow call reach the service, and their results are published, while it is still under way', async () => {
    const topics = testTopics();
    await createTopics(testKafka(), [{ topic: topics.commands, partitions: 1 }, { topic: topics.results }, { topic: topics.deadLetter }]);
    const { worker } = await startTestWorker(workerEnv(topics, proxyUrl, { TOPICS_PARTITIONS: '1', PROVIDER_RESPONSE_TIMEOUT_MS: '60000' }));
    cleanups.add(() => worker.stop());
    const publisher = await publisherFor(testKafka(), topics.commands);
    cleanups.add(() => publisher.disconnect());
    const results = await ResultCollector.start(topics.results);
    cleanups.add(() => results.stop());

    const slow = textCommand();
    let release!: () => void;
    let arrived!: () => void;
    const slowArrived = new Promise<void>((resolve) => (arrived = resolve));
    held.set(slow.commandId, { arrived, release: new Promise<void>((resolve) => (release = resolve)) });
    cleanups.add(async () => release());
    await within(30_000, 'publishing the slow command', publisher.publish([{ command: slow, key: 'slow' }]));
    await within(30_000, 'the slow command reaching the service', slowArrived);

    // Published after the slow call started: a later fetch of the same partition, other keys.
    const behind = [textCommand(), textCommand(), textCommand()];
    await within(30_000, 'publishing', publisher.publish(behind.map((command, i) => ({ command, key: `other-${i}` }))));
    // They reach the service while the slow call is held, and their results are published while
    // it is still held too (the ledger checkpoint lists them as answered; the offset waits).
    await eventually(
      () => (behind.every((c) => sandbox.state.requests({ correlationId: c.commandId }).length === 1) ? true : undefined),
      30_000,
      'the commands behind the slow call reaching the service',
    );
    const early = await results.waitFor(behind.map((c) => c.commandId));
    for (const c of behind) expect(early.get(c.commandId)?.outcome).toBe('SENT');
    expect(results.byCommand.has(slow.commandId)).toBe(false);

    release();
    const answered = await results.waitFor([slow, ...behind].map((c) => c.commandId));
    for (const c of [slow, ...behind]) expect(answered.get(c.commandId)?.outcome).toBe('SENT');
    // Published ahead once, never again when the offset moves past them: exactly one result each.
    for (const c of [slow, ...behind]) expect(results.byCommand.get(c.commandId)).toHaveLength(1);
  });

  it('a rebalance while calls are under way: they finish and get their real results, whichever worker gets the partition next', async () => {
    const topics = testTopics();
    await createTopics(testKafka(), [{ topic: topics.commands, partitions: 2 }, { topic: topics.results }, { topic: topics.deadLetter }]);
    const env = workerEnv(topics, proxyUrl, { TOPICS_PARTITIONS: '2', PROVIDER_RESPONSE_TIMEOUT_MS: '60000' });
    const first = await startTestWorker(env);
    cleanups.add(() => first.worker.stop());
    const publisher = await publisherFor(testKafka(), topics.commands);
    cleanups.add(() => publisher.disconnect());
    const results = await ResultCollector.start(topics.results);
    cleanups.add(() => results.stop());

    // One held call per partition (keys chosen until both partitions have one), on the first worker.
    const slow = Array.from({ length: 8 }, () => textCommand());
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    cleanups.add(async () => release());
    const arrivals = slow.map((c) => {
      let arrived!: () => void;
      const promise = new Promise<void>((resolve) => (arrived = resolve));
      held.set(c.commandId, { arrived, release: released });
      return promise;
    });
    await within(30_000, 'publishing', publisher.publish(slow.map((command) => ({ command, key: command.commandId }))));
    await within(30_000, 'every slow call reaching the service', Promise.all(arrivals));

    // A second worker joins: the group rebalances while the eight calls are under way. It is not
    // ready until it has claimed what it got, and a partition that moved to it is claimed only once
    // the first worker's calls there have their results: wait for the group's new generation (both
    // members in it, settled), not for readiness.
    const second = await startTestWorker(env);
    cleanups.add(() => second.worker.stop());
    await eventually(
      async () => {
        const group = await withAdmin(testKafka(), async (admin) => (await admin.describeGroups([topics.group])).groups[0]);
        return group?.state === 'Stable' && group.members.length === 2 && group.members.every((m) => m.memberAssignment.length > 0) ? true : undefined;
      },
      30_000,
      'the second worker joining the group',
    );
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    release();
    await eventually(() => (second.worker.health().ready().ok ? true : undefined), 30_000, 'the second worker ready once its claims are done');

    const answered = await results.waitFor(slow.map((c) => c.commandId));
    for (const c of slow) {
      expect(answered.get(c.commandId)?.outcome).toBe('SENT');
      expect(results.byCommand.get(c.commandId)).toHaveLength(1);
      expect(sandbox.state.requests({ correlationId: c.commandId })).toHaveLength(1);
    }
  });
});

import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.ts';
import { Worker } from '../../src/worker/worker.ts';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';
import { createTopics, eventually, testKafka } from '../helpers/kafka.ts';
import { publisherFor, ResultCollector, testTopics, textCommand, workerEnv } from '../helpers/worker.ts';

const sandbox = useSandbox();
const cleanups = useCleanups();

describe('warm before ready (issue 23, item 3)', () => {
  it('resolves the command schema and walks the claim reads before it joins the group, and answers /readyz 200 only once its partitions are claimed', async () => {
    const topics = testTopics();
    await createTopics(testKafka(), [{ topic: topics.commands, partitions: 3 }, { topic: topics.results }, { topic: topics.deadLetter }]);
    const publisher = await publisherFor(testKafka(), topics.commands);
    cleanups.add(() => publisher.disconnect());
    // Published before the worker starts, so the command subject has a schema to resolve.
    const command = textCommand();
    const value = await publisher.encode(command);
    await publisher.publishRaw([{ key: command.commandId, value }]);
    const commandSchemaId = value.readInt32BE(1);
    const results = await ResultCollector.start(topics.results);
    cleanups.add(() => results.stop());

    const logs: { msg: string; commandSchemaId?: number; stepMs?: Record<string, unknown> }[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line) as { msg: string }) });
    const worker = new Worker({ config: loadConfig(workerEnv(topics, sandbox.url)), logger });
    cleanups.add(() => worker.stop());
    await worker.start();

    // At the first 200, the worker's own counter tells how many partitions it had claimed by then.
    const base = `http://127.0.0.1:${worker.httpPort}`;
    const claimedAtReady = await eventually(
      async () => ((await fetch(`${base}/readyz`)).status === 200 ? ((await worker.metrics.recoveries.get()).values[0]?.value ?? 0) : undefined),
      60_000,
      '/readyz 200',
    );
    expect(claimedAtReady).toBeGreaterThanOrEqual(3);

    const warmed = logs.findIndex((l) => l.msg === 'warmed up: schemas resolved');
    const joined = logs.findIndex((l) => l.msg === 'joined consumer group');
    expect(warmed).toBeGreaterThanOrEqual(0);
    expect(joined).toBeGreaterThan(warmed);
    expect(logs[warmed]?.commandSchemaId).toBe(commandSchemaId);
    // The claim's Kafka paths (admin offsets and group look-ups, the reader's connections to the
    // command topic's and the ledger's leaders) were walked before the join too, every step of them.
    const reads = logs.findIndex((l) => l.msg === 'warmed up: claim reads');
    expect(reads).toBeGreaterThanOrEqual(0);
    expect(joined).toBeGreaterThan(reads);
    const steps = logs[reads]?.stepMs ?? {};
    expect(Object.keys(steps).sort()).toEqual(['group offset and repeat windows', 'ledger checkpoint', 'producers connected ahead']);
    for (const ms of Object.values(steps)) expect(typeof ms).toBe('number');
    expect((await results.waitFor([command.commandId])).get(command.commandId)?.outcome).toBe('SENT');
  });
});

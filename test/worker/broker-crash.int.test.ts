import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ResultReader } from '../../src/kafka/result-reader.ts';
import { createRegistry } from '../../src/schema/codec.ts';
import type { CommandResult } from '../../src/contracts/result.ts';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';
import { createTopics, eventually } from '../helpers/kafka.ts';
import { startPrivateKafka, type PrivateKafka } from '../helpers/private-kafka.ts';
import { publisherFor, startLoggedWorker, testTopics, textCommand, within, workerEnv } from '../helpers/worker.ts';

const sandbox = useSandbox();
const cleanups = useCleanups();
let broker: PrivateKafka;

beforeAll(async () => {
  broker = await startPrivateKafka();
}, 180_000);
afterAll(async () => {
  await broker?.dispose();
});

interface LogLine {
  readonly level?: number;
  readonly msg: string;
  readonly memberId?: string;
  readonly time?: string;
  readonly err?: { readonly message?: string };
  readonly error?: string;
}

describe('the one broker crashing (SIGKILL) under load', () => {
  it('two workers keep their group membership through a 20 s crash: no consumer crash, the same member ids, every command answered once, none UNKNOWN', async () => {
    sandbox.setFaults({ down: false, rates: {}, latency: { kind: 'lognormal', medianMs: 50, p99Ms: 500 } });
    cleanups.add(() => sandbox.setFaults({ down: false, rates: {}, latency: { kind: 'none' } }));
    const topics = testTopics();
    const kafka = broker.client();
    await createTopics(kafka, [
      { topic: topics.commands, partitions: 6 },
      { topic: topics.results },
      { topic: topics.deadLetter },
      { topic: topics.ledger, partitions: 6 },
    ]);
    // The default session (30 s): shorter than the outage, as it is in production.
    const env = workerEnv(topics, sandbox.url, { KAFKA_BROKERS: broker.bootstrap, KAFKA_SESSION_TIMEOUT_MS: '30000', LOG_LEVEL: 'info' });
    const workers = [await startLoggedWorker<LogLine>(env, cleanups, 'info'), await startLoggedWorker<LogLine>(env, cleanups, 'info')];
    const died: unknown[] = [];
    for (const { worker } of workers) worker.done.catch((error: unknown) => died.push(error));

    // Each result record once, by its place: the reader's own consumer may read a stretch again after the outage.
    const results = new Map<string, CommandResult[]>();
    const seen = new Set<string>();
    const reader = new ResultReader(broker.client(), createRegistry(inject('schemaRegistryUrl')), topics.results);
    const onResult = ({ result, partition, offset }: { result: CommandResult; partition: number; offset: string }): void => {
      if (seen.has(`${partition}@${offset}`)) return;
      seen.add(`${partition}@${offset}`);
      results.set(result.commandId, [...(results.get(result.commandId) ?? []), result]);
    };
    await within(45_000, 'starting the result reader', reader.start(onResult, { fromBeginning: true }));
    cleanups.add(() => reader.stop());

    // About 50 commands a second, published through the outage; a publish the broker did not acknowledge is not counted.
    const publisher = await publisherFor(kafka, topics.commands);
    cleanups.add(() => publisher.disconnect());
    const acknowledged: string[] = [];
    let publishing = true;
    const load = (async () => {
      while (publishing) {
        const batch = Array.from({ length: 5 }, () => textCommand());
        const sent = await publisher.publish(batch.map((command) => ({ command }))).then(
          () => true,
          () => false,
        );
        if (sent) acknowledged.push(...batch.map((c) => c.commandId));
        await new Promise((r) => setTimeout(r, 100));
      }
    })();

    await eventually(() => (results.size >= 100 ? true : undefined), 90_000, '100 results before the crash');
    const joinsBefore = workers.map(({ logs }) => logs.filter((l) => l.msg === 'joined consumer group').at(-1)?.memberId);
    const linesBefore = workers.map(({ logs }) => logs.length);
    await broker.kill();
    await new Promise((r) => setTimeout(r, 20_000));
    await broker.start();
    const backAt = Date.now();
    // Sends again: the first request at the service after the broker answered.
    await eventually(
      () => (sandbox.state.requestSummaries().some((r) => r.receivedAt >= backAt) ? true : undefined),
      120_000,
      'a send after the broker is back',
    );
    const firstSend =
      Math.min(
        ...sandbox.state
          .requestSummaries()
          .filter((r) => r.receivedAt >= backAt)
          .map((r) => r.receivedAt),
      ) - backAt;
    await new Promise((r) => setTimeout(r, 10_000));
    publishing = false;
    await load;
    await eventually(
      () => (acknowledged.every((id) => results.has(id)) ? true : undefined),
      120_000,
      () => `a result for each of ${acknowledged.length} commands (${acknowledged.filter((id) => !results.has(id)).length} missing)`,
    );
    console.log(`[broker-crash] first send ${firstSend} ms after the broker answered again; ${acknowledged.length} commands`);

    // To read what each worker logged after the crash: BROKER_CRASH_DUMP=<file>.
    if (process.env['BROKER_CRASH_DUMP'] !== undefined)
      (await import('node:fs')).writeFileSync(
        process.env['BROKER_CRASH_DUMP'],
        workers
          .map(({ logs }, i) =>
            logs
              .slice(linesBefore[i])
              .map((l) => JSON.stringify(l))
              .join('\n'),
          )
          .join('\n----\n'),
      );
    expect(died).toEqual([]);
    for (const [i, { logs }] of workers.entries()) {
      const after = logs.slice(linesBefore[i]);
      expect(after.filter((l) => l.msg === 'consumer crashed').map((l) => l.err?.message ?? l.error)).toEqual([]);
      // Joined again, if at all, as the same member.
      expect(
        after
          .filter((l) => l.msg === 'joined consumer group')
          .map((l) => l.memberId)
          .filter((id) => id !== joinsBefore[i]),
      ).toEqual([]);
    }
    const outcomes = new Map<string, number>();
    for (const list of results.values()) for (const r of list) outcomes.set(r.outcome, (outcomes.get(r.outcome) ?? 0) + 1);
    expect([...results.values()].filter((list) => list.length > 1).map((list) => list.map((r) => `${r.commandId} ${r.outcome}`))).toEqual([]);
    expect(outcomes.get('UNKNOWN') ?? 0).toBe(0);
    for (const id of acknowledged) expect(sandbox.state.requestSummaries({ correlationId: id }).length, id).toBeLessThanOrEqual(1);
  }, 600_000);
});

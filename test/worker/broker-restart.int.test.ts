import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../src/config/index.ts';
import type { CommandResult } from '../../src/contracts/result.ts';
import { CommandPublisher } from '../../src/kafka/command-publisher.ts';
import { ResultReader } from '../../src/kafka/result-reader.ts';
import { createRegistry } from '../../src/schema/codec.ts';
import { Worker } from '../../src/worker/worker.ts';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';
import { createTopics, eventually } from '../helpers/kafka.ts';
import { startPrivateKafka, type PrivateKafka } from '../helpers/private-kafka.ts';
import { metricTotal, testTopics, textCommand, within, workerEnv } from '../helpers/worker.ts';

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
  readonly msg: string;
  readonly restart?: boolean;
  readonly err?: { readonly message?: string };
}

describe('a single broker restarting', () => {
  // A broker that shuts down closes its connections while the consumer rejoins; kafkajs then gives
  // up its coordinator lookup with a non-retriable error (in 3 of 5 restarts measured: the worker
  // exited), or resumed fetching without a join after the lookup failed otherwise (the member then
  // sat outside its group, fetching in a loop, after the next restart). The broker restarts at
  // least three times, and until a lookup has failed at least once; a command is answered between
  // restarts.
  it('the worker stays up and works on through restarts; a failed rejoin restarts its consumer in place', async () => {
    const topics = testTopics();
    const kafka = broker.client();
    await createTopics(kafka, [
      { topic: topics.commands, partitions: 3 },
      { topic: topics.results },
      { topic: topics.deadLetter },
      { topic: topics.ledger, partitions: 3 },
    ]);
    const logs: LogLine[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line) as LogLine) });
    const config = loadConfig(workerEnv(topics, sandbox.url, { KAFKA_BROKERS: broker.bootstrap, KAFKA_SESSION_TIMEOUT_MS: '6000' }));
    const worker = new Worker({ config, logger, http: false });
    await within(45_000, 'starting the worker', worker.start());
    cleanups.add(() => worker.stop());
    let died: unknown;
    worker.done.catch((error: unknown) => (died = error));
    const registry = createRegistry(inject('schemaRegistryUrl'));

    // Each round: a command published (and answered) before the broker stops, so the worker is at work.
    const publisher = new CommandPublisher(kafka, registry, topics.commands);
    await within(45_000, 'connecting the publisher', publisher.connect());
    cleanups.add(() => publisher.disconnect());
    const published: string[] = [];
    const answered = async (): Promise<true | undefined> =>
      (await metricTotal(worker, 'results')) >= published.length || died !== undefined ? true : undefined;
    const lookupCrashes = (): LogLine[] => logs.filter((line) => line.msg === 'consumer crashed' && /group coordinator/.test(line.err?.message ?? ''));
    for (let restart = 0; restart < 8 && (restart < 3 || lookupCrashes().length === 0) && died === undefined; restart += 1) {
      const command = textCommand();
      published.push(command.commandId);
      await within(60_000, 'publishing a command', publisher.publish([{ command }]));
      await eventually(answered, 90_000, () => `the result of command ${published.length} (round ${restart + 1})`);
      await broker.stop();
      await new Promise((r) => setTimeout(r, 1_000));
      await broker.start();
    }
    expect(died).toBeUndefined();
    expect(lookupCrashes().length).toBeGreaterThan(0);
    expect(logs.filter((line) => line.msg === 'consumer crashed').every((line) => line.restart === true)).toBe(true);

    const after = textCommand();
    published.push(after.commandId);
    await within(60_000, 'publishing after the restarts', publisher.publish([{ command: after }]));
    const results = new Map<string, CommandResult[]>();
    const reader = new ResultReader(broker.client(), registry, topics.results);
    await within(
      45_000,
      'starting the result reader',
      reader.start(({ result }) => void results.set(result.commandId, [...(results.get(result.commandId) ?? []), result]), { fromBeginning: true }),
    );
    cleanups.add(() => reader.stop());
    await eventually(() => (results.has(after.commandId) ? true : undefined), 90_000, 'the result of the command published after the restart');
    expect(died).toBeUndefined();
    for (const commandId of published) expect(results.get(commandId)).toHaveLength(1);
  }, 600_000);
});

import { describe, expect, inject, it } from 'vitest';
import { ResultReader } from '../../src/kafka/result-reader.ts';
import { createRegistry } from '../../src/schema/codec.ts';
import type { Worker } from '../../src/worker/worker.ts';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';
import { createTopics, eventually } from '../helpers/kafka.ts';
import { usePrivateKafka, type PrivateKafka } from '../helpers/private-kafka.ts';
import { metricTotal, publisherFor, startLoggedWorker, testTopics, textCommand, within, workerEnv } from '../helpers/worker.ts';

const sandbox = useSandbox();
const cleanups = useCleanups();
const broker = usePrivateKafka();

interface LogLine {
  readonly level?: number;
  readonly msg: string;
  readonly restart?: boolean;
  readonly err?: { readonly message?: string };
  readonly error?: string;
  readonly retry?: number;
}

/** A worker on the private broker (topics of its own, a 6 s session unless said), its log lines kept. */
async function startWorker(
  sessionTimeoutMs = 6_000,
): Promise<{ topics: ReturnType<typeof testTopics>; kafka: ReturnType<PrivateKafka['client']>; logs: LogLine[]; worker: Worker }> {
  const topics = testTopics();
  const kafka = broker.client();
  await createTopics(kafka, [
    { topic: topics.commands, partitions: 3 },
    { topic: topics.results },
    { topic: topics.deadLetter },
    { topic: topics.ledger, partitions: 3 },
  ]);
  const { worker, logs } = await startLoggedWorker<LogLine>(
    workerEnv(topics, sandbox.url, { KAFKA_BROKERS: broker.bootstrap, KAFKA_SESSION_TIMEOUT_MS: String(sessionTimeoutMs) }),
    cleanups,
  );
  return { topics, kafka, logs, worker };
}

type StartedWorker = Awaited<ReturnType<typeof startWorker>>;

/** Commands published one at a time, each awaited until the worker answered it; at the end, each must have exactly one result. */
async function commandRounds({ topics, kafka, worker }: StartedWorker) {
  let died: unknown;
  worker.done.catch((error: unknown) => (died = error));
  const registry = createRegistry(inject('schemaRegistryUrl'));
  const publisher = await publisherFor(kafka, topics.commands);
  cleanups.add(() => publisher.disconnect());
  const published: string[] = [];
  const answered = async (): Promise<true | undefined> => ((await metricTotal(worker, 'results')) >= published.length || died !== undefined ? true : undefined);
  return {
    died: (): unknown => died,
    /** Publishes one command and waits until the worker has answered every command so far. */
    async answerOne(what: string): Promise<void> {
      const command = textCommand();
      published.push(command.commandId);
      await within(60_000, `publishing ${what}`, publisher.publish([{ command }]));
      await eventually(answered, 120_000, () => `the result of ${what}`);
    },
    /** The worker is up, and the result topic holds exactly one result for each command published. */
    async expectEachAnsweredOnce(): Promise<void> {
      const results = new Map<string, number>();
      const reader = new ResultReader(broker.client(), registry, topics.results);
      await within(
        45_000,
        'starting the result reader',
        reader.start(({ result }) => void results.set(result.commandId, (results.get(result.commandId) ?? 0) + 1), { fromBeginning: true }),
      );
      cleanups.add(() => reader.stop());
      const last = published.at(-1);
      await eventually(() => (last === undefined || results.has(last) ? true : undefined), 90_000, 'the last command’s result');
      expect(died).toBeUndefined();
      for (const commandId of published) expect(results.get(commandId), commandId).toBe(1);
    },
  };
}

describe('a single broker restarting', () => {
  // A broker that shuts down closes its connections while the consumer rejoins: kafkajs then gave
  // up its coordinator lookup with a non-retriable error (in 5 of 7 restarts measured the worker
  // exited), or resumed fetching without a join after the lookup failed otherwise (the member then
  // sat outside its group, fetching in a loop). Since then a failed rejoin crashed the consumer,
  // which kafkajs restarted (a LeaveGroup, every partition fenced and recovered again); now it is
  // tried again in place first. The broker restarts at least three times, and until one restart
  // was ridden out in place; a command is answered before and after each.
  it('the worker stays up and works on through restarts; a failed rejoin is tried again in place, without a crash', async () => {
    const started = await startWorker();
    const { logs } = started;
    const rounds = await commandRounds(started);
    const crashes = (): LogLine[] => logs.filter((line) => line.msg === 'consumer crashed');
    const rejoinRetries = (): LogLine[] => logs.filter((line) => line.msg === 'rejoining the group failed; trying again in place');
    // A restart ridden out in place: the rejoin failed at least once and was tried again, and the consumer did not crash.
    let inPlace = 0;
    for (let restart = 1; restart <= 8 && (restart <= 3 || inPlace === 0) && rounds.died() === undefined; restart += 1) {
      // Each round: a command answered before the broker stops, so the worker is at work.
      await rounds.answerOne(`a command before restart ${restart}`);
      const [crashesBefore, retriesBefore] = [crashes().length, rejoinRetries().length];
      await broker.stop();
      await new Promise((r) => setTimeout(r, 1_000));
      await broker.start();
      // Answered only after the rejoin: the crashes and retries so far are this restart's.
      await rounds.answerOne(`a command after restart ${restart}`);
      if (rejoinRetries().length > retriesBefore && crashes().length === crashesBefore) inPlace += 1;
    }
    expect(rounds.died()).toBeUndefined();
    expect(inPlace, `crashes: ${JSON.stringify(crashes().map((line) => line.err?.message))}`).toBeGreaterThan(0);
    // kafkajs reports REBALANCING before some rejoins only: the worker holds its lanes itself before the first try again.
    const holds = logs.filter((line) => line.msg === 'rejoin tried again in place: no call starts until the join').length;
    expect(holds).toBeGreaterThan(0);
    expect(holds).toBe(rejoinRetries().filter((line) => line.retry === 1).length);
    // A rejoin that failed for good still restarts the consumer in place (its crash is not final).
    expect(crashes().every((line) => line.restart === true)).toBe(true);
    await rounds.expectEachAnsweredOnce();
  }, 600_000);

  // A broker killed (not shut down) drops every connection at once, the fetch's too: kafkajs then
  // takes the broker out of its pool, finds no broker to fetch from, and ended its fetch loop with
  // `No broker available`, a crash (a LeaveGroup, every partition moved away and back). Now the
  // loop asks for metadata again and waits for a broker. Killed under a fetching worker, restarted
  // 2 s later, a few times: no such crash, and every command answered once. Whether a kill finds the
  // fetch loop without a broker is a race (2 of 3 kills on a quiet machine; in one CI run, under the
  // other tests' load, none of 6): the kills go on until one did, up to 6, and the test does not
  // require it, so under load it may not exercise the wait.
  it('a broker killed under a fetching worker: no crash with No broker available, and every command answered once', async () => {
    // The default session: the loop waits for a broker up to it, and a killed broker takes seconds to start.
    const started = await startWorker(30_000);
    const { logs } = started;
    const rounds = await commandRounds(started);
    const noBroker = (): LogLine[] =>
      logs.filter((line) => line.msg === 'consumer crashed' && (line.err?.message ?? line.error ?? '').includes('No broker available'));
    const waits = (): LogLine[] => logs.filter((line) => line.msg === 'no broker to fetch from (their connections closed); waiting for one');
    // At least three kills, and until one found the fetch loop without a broker (2 of 3 kills did before the change).
    for (let kill = 1; kill <= 6 && (kill <= 3 || waits().length === 0) && rounds.died() === undefined; kill += 1) {
      await rounds.answerOne(`a command before kill ${kill}`);
      // Idle now: the consumer's fetch waits at the broker when it dies.
      await new Promise((r) => setTimeout(r, 500));
      await broker.kill();
      await new Promise((r) => setTimeout(r, 2_000));
      await broker.start();
    }
    await rounds.answerOne('a command after the kills');
    expect(noBroker(), `${JSON.stringify(noBroker())} (fetch loops that waited for a broker: ${waits().length})`).toEqual([]);
    await rounds.expectEachAnsweredOnce();
  }, 600_000);

  // Without the stop's signal, the tries went on through the stop, and the crash that ended them
  // was restartable: kafkajs started the consumer again after the worker had stopped it.
  it('a stop while a rejoin is tried again in place ends the tries, and kafkajs does not start the consumer again', async () => {
    const { topics, kafka, logs, worker } = await startWorker();
    const publisher = await publisherFor(kafka, topics.commands);
    await within(60_000, 'publishing a command', publisher.publish([{ command: textCommand() }]));
    await publisher.disconnect();
    await eventually(async () => ((await metricTotal(worker, 'results')) >= 1 ? true : undefined), 90_000, 'the command’s result');

    const retries = (from = 0): LogLine[] => logs.slice(from).filter((line) => line.msg === 'rejoining the group failed; trying again in place');
    const crashed = (from: number): boolean => logs.slice(from).some((line) => line.msg === 'consumer crashed');
    const waitsInPlace = (from: number): boolean =>
      logs.slice(from).some((line) => line.msg === 'no broker to fetch from (their connections closed); waiting for one');
    // The broker stops until a rejoin is tried again in place. Which of the consumer's paths notices
    // the outage first is a race: its fetch's metadata refresh can use up kafkajs's connect retries
    // first and crash it (restarted in place; docs/operations.md), or its fetch loop finds no broker
    // and waits for one in place (up to BROKER_OUTAGE_LIMIT_MS, 5 min, sending no heartbeat, so no
    // rejoin comes meanwhile: a CI run waited 60 s for one in vain). Then the broker comes back, the
    // consumer answers a command again, and the outage is tried again. The rejoin path wins only
    // when a heartbeat reaches the broker in its ~1 s of shutting down, before the fetch's
    // connection closes: 9 of 21 outages under load (a CI run saw four crashes in a row), so up to
    // ten outages.
    let outageFrom = 0;
    let answered = 1;
    for (let outage = 1; outage <= 10; outage += 1) {
      outageFrom = logs.length;
      await broker.stop();
      // Two minutes: a CI run saw none of the three within 60 s. Whether that was a slow crash
      // (kafkajs's connect retries, on a loaded machine) or nothing at all is not known: if it
      // happens again, the message says what the worker logged meanwhile.
      const from = outageFrom;
      await eventually(
        () => (retries(from).length > 0 || crashed(from) || waitsInPlace(from) ? true : undefined),
        120_000,
        () =>
          `a rejoin tried again in place, a crash, or a wait for a broker in place (outage ${outage}); the worker's last log lines since the stop: ${logs
            .slice(from)
            .slice(-20)
            .map(
              (line) =>
                `[${line.level ?? '?'}] ${line.msg}${line.error === undefined ? '' : ` (${line.error})`}${line.err?.message === undefined ? '' : ` (${line.err.message.slice(0, 200)})`}`,
            )
            .join(' | ')}`,
      );
      if (retries(outageFrom).length > 0) break;
      await broker.start();
      // Back, as a rejoined member or in place: a command published now is answered.
      const again = await publisherFor(kafka, topics.commands);
      await within(60_000, `publishing a command after outage ${outage}`, again.publish([{ command: textCommand() }]));
      await again.disconnect();
      answered += 1;
      const expected = answered;
      await eventually(
        async () => ((await metricTotal(worker, 'results')) >= expected ? true : undefined),
        90_000,
        `a command answered after outage ${outage}`,
      );
    }
    try {
      expect(retries(outageFrom).length, 'no outage reached a rejoin tried again in place').toBeGreaterThan(0);
      const stopAt = logs.length;
      await within(60_000, 'stopping the worker', worker.stop());
      // Longer than the tries left (JOIN_RETRY) and kafkajs's restart delay: what it would do after its stop shows by then.
      await new Promise((r) => setTimeout(r, 8_000));
      expect(retries(stopAt)).toEqual([]);
      expect(logs.slice(stopAt).filter((line) => line.msg === 'consumer crashed' && line.restart === true)).toEqual([]);
      // The stop's end of the tries is a crash kafkajs reports; expected then, so not logged as an error.
      expect(logs.slice(stopAt).filter((line) => line.msg === 'consumer crashed' && (line.level ?? 0) >= 50)).toEqual([]);
    } finally {
      await broker.start();
    }
  }, 600_000);
});

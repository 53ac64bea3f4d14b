import { afterEach, describe, expect, inject, it } from 'vitest';
import type { RunningSandbox } from '../../src/sandbox/index.ts';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';
import { checkpointKey, encodeCheckpoint, type Checkpoint, type OpenMark } from '../../src/worker/lane/ledger-checkpoint.ts';
import { encodeHandover, handoverKey, type HandoverSettlement } from '../../src/worker/ownership/handover-record.ts';
import { failedResult, type CommandResult } from '../../src/contracts/result.ts';
import type { SendCommand } from '../../src/contracts/command.ts';
import { resultToAvro } from '../../src/contracts/result-avro.ts';
import { Codec, createRegistry } from '../../src/schema/codec.ts';
import { eventually, testKafka } from '../helpers/kafka.ts';
import { createWorkerTopics, publisherFor, ResultCollector, startTestWorker, testTopics, textCommand, within, workerEnv } from '../helpers/worker.ts';

const sandbox = useSandbox();
const sandboxB = useSandbox();
afterEach(() => sandbox.state.setBalance('1000.000000'));
const cleanups = useCleanups();

/** Topics of a test whose command topic has `partitions` partitions (the ledger as many). */
/** What an earlier owner of partition 0 left in the ledger. */
async function writeCheckpoint(topics: ReturnType<typeof testTopics>, checkpoint: Checkpoint): Promise<void> {
  const producer = testKafka().producer();
  await producer.connect();
  try {
    await producer.send({
      topic: topics.ledger,
      messages: [{ key: checkpointKey(topics.group, topics.commands), partition: 0, value: encodeCheckpoint(checkpoint) }],
    });
  } finally {
    await producer.disconnect();
  }
}

/** What an earlier owner of partition 0 hands over for one of its marks (outside any transaction, as it does). */
async function writeHandover(topics: ReturnType<typeof testTopics>, mark: OpenMark, settlement: HandoverSettlement): Promise<void> {
  const producer = testKafka().producer();
  await producer.connect();
  try {
    await producer.send({
      topic: topics.ledger,
      messages: [{ key: handoverKey(topics.group, topics.commands), partition: 0, value: encodeHandover(mark.offset, mark, settlement) ?? null }],
    });
  } finally {
    await producer.disconnect();
  }
}

/** What the earlier owner's call of the command at offset 0 ended with: FAILED 101301, with its request id. */
function earlierOwnersResult(topics: ReturnType<typeof testTopics>, command: SendCommand, requestId: string, message: string): CommandResult {
  return failedResult(
    { command, source: { topic: topics.commands, partition: 0, offset: '0' }, completedAt: Date.now() },
    { code: '101301', message, stage: 'PROVIDER', retryable: false, attempts: 1, requestId },
  );
}

/** A result already in the result topic, as an earlier owner's transaction left it (keyed by its commandId, Avro as the worker writes it). */
async function writeResult(topics: ReturnType<typeof testTopics>, result: CommandResult): Promise<void> {
  const codec = await Codec.create(createRegistry(inject('schemaRegistryUrl')), { results: topics.results, deadLetter: topics.deadLetter });
  const producer = testKafka().producer();
  await producer.connect();
  try {
    await producer.send({ topic: topics.results, messages: [{ key: result.commandId, value: await codec.encodeResult(resultToAvro(result)) }] });
  } finally {
    await producer.disconnect();
  }
}

function sends(on: RunningSandbox, commandId: string): number {
  return on.state.requests({ correlationId: commandId }).length;
}

describe('intent ledger: sends at most once', () => {
  it('a repeated command record (same commandId) is sent once and answered once', async () => {
    const topics = testTopics();
    const { worker } = await startTestWorker(workerEnv(topics, sandbox.url));
    cleanups.add(() => worker.stop());
    const publisher = await publisherFor(testKafka(), topics.commands);
    cleanups.add(() => publisher.disconnect());
    const results = await ResultCollector.start(topics.results);
    cleanups.add(() => results.stop());

    const repeated = textCommand();
    const other = textCommand();
    // An upstream producer that retried: the same command twice, then again after the first result.
    await within(
      30_000,
      'publishing',
      publisher.publish([
        { command: repeated, key: 'k1' },
        { command: repeated, key: 'k1' },
        { command: other, key: 'k2' },
      ]),
    );
    await results.waitFor([repeated.commandId, other.commandId]);
    await within(30_000, 'publishing again', publisher.publish([{ command: repeated, key: 'k1' }]));
    await eventually(
      async () => {
        const text = await (await fetch(`http://127.0.0.1:${worker.httpPort}/metrics`)).text();
        return /sms_worker_duplicate_commands_total 2/.test(text) ? true : undefined;
      },
      30_000,
      'both repeats to be skipped',
    );
    expect(sends(sandbox, repeated.commandId)).toBe(1);
    expect(results.byCommand.get(repeated.commandId)?.map((r) => r.outcome)).toEqual(['SENT']);
    expect(sends(sandbox, other.commandId)).toBe(1);
  });

  it('starts at the ledger checkpoint when the group offset is behind it, and reports its in-doubt mark UNKNOWN without sending, naming the account the mark names', async () => {
    const topics = testTopics();
    const kafka = testKafka();
    await createWorkerTopics(topics, 1);
    const publisher = await publisherFor(kafka, topics.commands);
    cleanups.add(() => publisher.disconnect());
    const commands = Array.from({ length: 6 }, () => textCommand());
    await within(30_000, 'publishing', publisher.publish(commands.map((command) => ({ command, key: 'one-partition' }))));
    // What an earlier owner left: results up to offset 2 committed (the group offset read later
    // can lag behind it without KIP-447), and offset 3 marked as being sent, without a result.
    const markedAt = Date.now() - 5_000;
    await writeCheckpoint(topics, { next: 3n, open: [{ offset: 3n, commandId: commands[3]?.commandId ?? '', at: markedAt, account: 'backup' }] });

    const results = await ResultCollector.start(topics.results);
    cleanups.add(() => results.stop());
    const { worker } = await startTestWorker(workerEnv(topics, sandbox.url, { TOPICS_PARTITIONS: '1' }));
    cleanups.add(() => worker.stop());

    const ids = commands.map((c) => c.commandId);
    const got = await results.waitFor(ids.slice(3));
    expect(got.get(ids[3] ?? '')).toMatchObject({
      outcome: 'UNKNOWN',
      attemptedAt: markedAt,
      attempts: 0,
      account: 'backup',
      error: { code: 'SEND_OUTCOME_UNKNOWN', retryable: false, message: expect.stringContaining('through account backup') },
    });
    expect(ids.slice(4).map((id) => got.get(id)?.outcome)).toEqual(['SENT', 'SENT']);
    // Below the checkpoint: already answered by the earlier owner, not sent again; the marked one not either.
    await new Promise((r) => setTimeout(r, 500));
    expect(ids.slice(0, 4).map((id) => sends(sandbox, id))).toEqual([0, 0, 0, 0]);
    expect(ids.slice(0, 3).filter((id) => results.byCommand.has(id))).toEqual([]);
  });

  it('skips the records an earlier owner published ahead of its offset: neither sent nor answered again, and a repeat of one is a repeat', async () => {
    const topics = testTopics();
    const kafka = testKafka();
    await createWorkerTopics(topics, 1);
    const publisher = await publisherFor(kafka, topics.commands);
    cleanups.add(() => publisher.disconnect());
    const commands = Array.from({ length: 4 }, () => textCommand());
    // Offset 4 repeats offset 2's commandId (an upstream retry).
    const records = [...commands, commands[2]!].map((command) => ({ command, key: 'one-partition' }));
    await within(30_000, 'publishing', publisher.publish(records));
    // What an earlier owner left: offset 0 committed, offset 1 still under way (marked), offset 2
    // answered ahead of it.
    const markedAt = Date.now() - 5_000;
    await writeCheckpoint(topics, {
      next: 1n,
      open: [{ offset: 1n, commandId: commands[1]?.commandId ?? '', at: markedAt }],
      done: [{ offset: 2n, commandId: commands[2]?.commandId ?? '' }],
    });

    const results = await ResultCollector.start(topics.results);
    cleanups.add(() => results.stop());
    const { worker } = await startTestWorker(workerEnv(topics, sandbox.url, { TOPICS_PARTITIONS: '1' }));
    cleanups.add(() => worker.stop());

    const ids = commands.map((c) => c.commandId);
    const got = await results.waitFor([ids[1]!, ids[3]!]);
    expect([ids[1], ids[3]].map((id) => got.get(id ?? '')?.outcome)).toEqual(['UNKNOWN', 'SENT']);
    await new Promise((r) => setTimeout(r, 500));
    // Offset 0 (below the checkpoint), offset 1 (marked), offset 2 (answered ahead) and its repeat at
    // offset 4: never sent, and no result for 0 or 2.
    expect([ids[0], ids[1], ids[2]].map((id) => sends(sandbox, id!))).toEqual([0, 0, 0]);
    expect([ids[0], ids[2]].filter((id) => results.byCommand.has(id!))).toEqual([]);
  });

  it('IN_DOUBT_POLICY=resend sends an in-doubt command again', async () => {
    const topics = testTopics();
    const kafka = testKafka();
    await createWorkerTopics(topics, 1);
    const publisher = await publisherFor(kafka, topics.commands);
    cleanups.add(() => publisher.disconnect());
    const command = textCommand();
    await within(30_000, 'publishing', publisher.publish([{ command }]));
    await writeCheckpoint(topics, { next: 0n, open: [{ offset: 0n, commandId: command.commandId, at: Date.now() }] });
    const results = await ResultCollector.start(topics.results);
    cleanups.add(() => results.stop());
    const { worker } = await startTestWorker(workerEnv(topics, sandbox.url, { TOPICS_PARTITIONS: '1', IN_DOUBT_POLICY: 'resend' }));
    cleanups.add(() => worker.stop());
    expect((await results.waitFor([command.commandId])).get(command.commandId)?.outcome).toBe('SENT');
    expect(sends(sandbox, command.commandId)).toBe(1);
  });

  it('a rebalance while commands wait at the funds pause: the old owner gives them up unsent and never sends them later', async () => {
    const topics = testTopics();
    const kafka = testKafka();
    await createWorkerTopics(topics, 2);
    // Each command is refused once, then held for the probe; the first probe comes after the
    // rebalance, so the held commands are what the rebalance finds.
    const env = { TOPICS_PARTITIONS: '2', FUNDS_PROBE_INITIAL_MS: '15000', FUNDS_PROBE_MAX_MS: '15000' };
    const { worker: first } = await startTestWorker(workerEnv(topics, sandbox.url, env));
    cleanups.add(() => first.stop());
    const results = await ResultCollector.start(topics.results);
    cleanups.add(() => results.stop());
    const publisher = await publisherFor(kafka, topics.commands);
    cleanups.add(() => publisher.disconnect());

    // The first worker's account is empty: its commands wait at the funds pause.
    sandbox.state.setBalance('0.000000');
    const commands = Array.from({ length: 8 }, (_, i) => textCommand({ commandId: `held-${i}-${Date.now()}` }));
    await within(30_000, 'publishing', publisher.publish(commands.map((command, i) => ({ command, key: `key-${i}` }))));
    await eventually(() => (first.pauseReason === 'insufficient_funds' ? true : undefined), 30_000, 'funds pause');

    // A second worker (another account, with money) joins: partitions move while commands are held.
    const { worker: second } = await startTestWorker(workerEnv(topics, sandboxB.url, env));
    cleanups.add(() => second.stop());
    const ids = commands.map((c) => c.commandId);
    const handledBySecond = await eventually(
      () => {
        const sent = ids.filter((id) => sends(sandboxB, id) > 0);
        return sent.length > 0 ? sent : undefined;
      },
      60_000,
      'the second worker to send commands of the partition it took over',
    );
    // The first account gets its money back: the first worker must not send what it gave up.
    sandbox.state.setBalance('1000.000000');
    await results.waitFor(ids, 60_000);
    await new Promise((r) => setTimeout(r, 1_500));
    for (const id of handledBySecond) expect(sandbox.state.acceptedSends(id), id).toBe(0);
    for (const id of ids)
      expect(sandbox.state.acceptedSends(id) + sandboxB.state.acceptedSends(id), `${id}: ${JSON.stringify(results.byCommand.get(id)?.[0]?.error)}`).toBe(1);
    expect(ids.map((id) => results.byCommand.get(id)?.length)).toEqual(ids.map(() => 1));
  }, 180_000); // two rebalances and a 15 s probe: slow on a loaded 2-core machine, so more than the project's 120 s
});

describe('intent ledger: handovers from an earlier owner', () => {
  /** Three commands of three keys on one partition, the first marked by an earlier owner still finishing its call. */
  async function earlierOwnerMarked(markedAt = Date.now()) {
    const topics = testTopics();
    const kafka = testKafka();
    await createWorkerTopics(topics, 1);
    const publisher = await publisherFor(kafka, topics.commands);
    cleanups.add(() => publisher.disconnect());
    const commands = Array.from({ length: 3 }, () => textCommand());
    await within(30_000, 'publishing', publisher.publish(commands.map((command, i) => ({ command, key: `key-${i}` }))));
    const mark: OpenMark = { offset: 0n, commandId: commands[0]?.commandId ?? '', at: markedAt, by: 'earlier-owner.1' };
    await writeCheckpoint(topics, { next: 0n, open: [mark] });
    const results = await ResultCollector.start(topics.results);
    cleanups.add(() => results.stop());
    return { topics, commands, mark, results, ids: commands.map((c) => c.commandId) };
  }

  it('publishes the result the earlier owner handed over for its in-doubt mark, without sending the command', async () => {
    const { topics, commands, mark, results, ids } = await earlierOwnerMarked();
    const command = commands[0]!;
    const handedOver = earlierOwnersResult(topics, command, 'earlier-request', 'refused by the earlier owner’s call');
    await writeHandover(topics, mark, { kind: 'result', result: handedOver });
    const { worker } = await startTestWorker(workerEnv(topics, sandbox.url, { TOPICS_PARTITIONS: '1' }));
    cleanups.add(() => worker.stop());
    const got = await results.waitFor(ids);
    expect(got.get(command.commandId)).toMatchObject({ outcome: 'FAILED', providerRequestId: 'earlier-request', error: { code: '101301' } });
    expect(ids.slice(1).map((id) => got.get(id)?.outcome)).toEqual(['SENT', 'SENT']);
    await new Promise((r) => setTimeout(r, 500));
    expect(ids.map((id) => sends(sandbox, id))).toEqual([0, 1, 1]);
    expect(ids.map((id) => results.byCommand.get(id)?.length)).toEqual([1, 1, 1]);
  });

  it('IN_DOUBT_POLICY=resend still takes the earlier owner’s handed-over result rather than send the command again', async () => {
    const { topics, commands, mark, results, ids } = await earlierOwnerMarked();
    const command = commands[0]!;
    const handedOver = earlierOwnersResult(topics, command, 'earlier-request', 'refused by the earlier owner’s call');
    await writeHandover(topics, mark, { kind: 'result', result: handedOver });
    const { worker } = await startTestWorker(workerEnv(topics, sandbox.url, { TOPICS_PARTITIONS: '1', IN_DOUBT_POLICY: 'resend' }));
    cleanups.add(() => worker.stop());
    const got = await results.waitFor(ids);
    expect(got.get(command.commandId)).toMatchObject({ outcome: 'FAILED', providerRequestId: 'earlier-request' });
    expect(sends(sandbox, command.commandId)).toBe(0);
  });

  it('sends a command whose in-doubt mark the earlier owner handed over as withdrawn (it never called it), once', async () => {
    const { topics, mark, results, ids } = await earlierOwnerMarked();
    await writeHandover(topics, mark, { kind: 'withdrawn' });
    const { worker } = await startTestWorker(workerEnv(topics, sandbox.url, { TOPICS_PARTITIONS: '1' }));
    cleanups.add(() => worker.stop());
    const got = await results.waitFor(ids);
    expect(ids.map((id) => got.get(id)?.outcome)).toEqual(['SENT', 'SENT', 'SENT']);
    expect(ids.map((id) => sends(sandbox, id))).toEqual([1, 1, 1]);
  });

  it('an in-doubt command waits for its handover while the partition’s other keys are sent; it comes after the claim, and is what is published', async () => {
    const { topics, commands, mark, results, ids } = await earlierOwnerMarked();
    // A grace long enough for this test's steps on a loaded machine (22 s from the mark).
    const { worker } = await startTestWorker(workerEnv(topics, sandbox.url, { TOPICS_PARTITIONS: '1', PROVIDER_RESPONSE_TIMEOUT_MS: '20000' }));
    cleanups.add(() => worker.stop());
    // The other keys go on at once; the marked command has no result while its call may be under way.
    await results.waitFor(ids.slice(1));
    expect(results.byCommand.has(ids[0]!)).toBe(false);
    const command = commands[0]!;
    const handedOver = earlierOwnersResult(topics, command, 'late-request', 'answered after the move');
    // A handover of another mark of the same record (an owner before) settles nothing.
    await writeHandover(topics, { ...mark, by: 'older-owner.4' }, { kind: 'withdrawn' });
    await writeHandover(topics, mark, { kind: 'result', result: handedOver });
    const got = await results.waitFor([ids[0]!]);
    expect(got.get(ids[0]!)).toMatchObject({ outcome: 'FAILED', providerRequestId: 'late-request' });
    expect(sends(sandbox, ids[0]!)).toBe(0);
  });

  it('an in-doubt command whose handover never comes is reported UNKNOWN once its grace is over, never sent', async () => {
    // Marked 4 s ago: the grace (PROVIDER_RESPONSE_TIMEOUT_MS, 3 s in the tests, + 2 s) ends in a second.
    const { topics, results, ids } = await earlierOwnerMarked(Date.now() - 4_000);
    const { worker } = await startTestWorker(workerEnv(topics, sandbox.url, { TOPICS_PARTITIONS: '1' }));
    cleanups.add(() => worker.stop());
    const got = await results.waitFor(ids);
    expect(got.get(ids[0]!)).toMatchObject({ outcome: 'UNKNOWN', attempts: 0 });
    expect(ids.map((id) => sends(sandbox, id))).toEqual([0, 1, 1]);
  });

  it('an in-doubt command with no handover whose result is in the result topic already (the ledger lost its transaction’s marker) gets no second result, and is not sent', async () => {
    // Marked 4 s ago: the grace (PROVIDER_RESPONSE_TIMEOUT_MS, 3 s in the tests, + 2 s) ends in a second.
    const { topics, commands, results, ids } = await earlierOwnerMarked(Date.now() - 4_000);
    const command = commands[0]!;
    // What the earlier owner's transaction committed to the result topic while the ledger partition
    // lost its marker: the command's result, naming the record (partition 0, offset 0).
    await writeResult(topics, earlierOwnersResult(topics, command, 'committed-request', 'answered in a transaction the ledger lost'));
    const { worker } = await startTestWorker(workerEnv(topics, sandbox.url, { TOPICS_PARTITIONS: '1' }));
    cleanups.add(() => worker.stop());
    await results.waitFor(ids);
    await eventually(
      async () => {
        const text = await (await fetch(`http://127.0.0.1:${worker.httpPort}/metrics`)).text();
        return /sms_worker_in_doubt_commands_total\{action="published"\} 1/.test(text) ? true : undefined;
      },
      30_000,
      'the in-doubt command counted as published',
    );
    // A second result for it would come with the claim's next transaction: one more command through the partition.
    const publisher = await publisherFor(testKafka(), topics.commands);
    cleanups.add(() => publisher.disconnect());
    const after = textCommand();
    await within(30_000, 'publishing', publisher.publish([{ command: after }]));
    await results.waitFor([after.commandId]);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(results.byCommand.get(command.commandId)?.map((r) => r.providerRequestId)).toEqual(['committed-request']);
    expect(ids.map((id) => sends(sandbox, id))).toEqual([0, 1, 1]);
  });

  it('a result of the same commandId for another record does not count: the in-doubt command is UNKNOWN', async () => {
    const { topics, commands, results, ids } = await earlierOwnerMarked(Date.now() - 4_000);
    const command = commands[0]!;
    const other = earlierOwnersResult(topics, command, 'other-record', 'the same commandId at another offset');
    await writeResult(topics, { ...other, source: { ...other.source, offset: '7' } });
    const { worker } = await startTestWorker(workerEnv(topics, sandbox.url, { TOPICS_PARTITIONS: '1' }));
    cleanups.add(() => worker.stop());
    await eventually(() => (results.byCommand.get(command.commandId)?.some((r) => r.outcome === 'UNKNOWN') ? true : undefined), 30_000, 'its UNKNOWN');
    expect(results.byCommand.get(command.commandId)?.map((r) => r.outcome)).toEqual(['FAILED', 'UNKNOWN']);
    expect(sends(sandbox, command.commandId)).toBe(0);
    await results.waitFor(ids);
  });
});

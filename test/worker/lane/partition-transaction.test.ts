import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { FencedError } from '../../../src/kafka/ports.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import type { RecordOutcome } from '../../../src/worker/send/record-handler.ts';
import {
  chunkBySize,
  commitTransaction,
  TransactionLostError,
  type CommitTarget,
  type TransactionWrite,
} from '../../../src/worker/lane/partition-transaction.ts';
import { checkpointKey, decodeCheckpoint, encodeCheckpoint, type Checkpoint } from '../../../src/worker/lane/ledger-checkpoint.ts';
import { readBackFor } from '../../../src/worker/protocol/transaction-plan.ts';
import { publishesRecord } from '../../../src/worker/lane/record-outcomes.ts';
import { FakeProducers } from '../../helpers/fake-producers.ts';

const log = createLogger('silent');
const target: CommitTarget = {
  topic: 'cmds',
  partition: 3,
  consumerGroup: 'g',
  resultTopic: 'res',
  deadLetterTopic: 'dlq',
  ledgerTopic: 'ledger',
  maxBatchBytes: 1_000_000,
  generation: 1,
  standing: { maySend: () => true, mayReinitialise: () => true },
};

/** What the machine plans for these: their read-back as readBackFor has it (results or dead letters publish; the checkpoint is the one written). */
function write(outcomes: readonly RecordOutcome[], commitOffset: string | undefined, ledgerRecord: Buffer | undefined): TransactionWrite {
  const key = checkpointKey(target.consumerGroup, target.topic);
  const written = ledgerRecord === undefined ? undefined : decodeCheckpoint(Buffer.from(key), ledgerRecord, key);
  const publishes = outcomes.some(publishesRecord);
  return { outcomes, commitOffset, ledgerRecord, readBack: readBackFor(commitOffset === undefined ? undefined : BigInt(commitOffset), publishes, written) };
}

function resultOutcome(commandId: string): RecordOutcome {
  // Only key and value reach the transaction; the result itself is for metrics and logs.
  return { kind: 'result', key: commandId, value: Buffer.from(`result of ${commandId}`), result: undefined as never };
}

const outcomes: RecordOutcome[] = [resultOutcome('a'), { kind: 'duplicate', commandId: 'a', firstOffset: 0n }, resultOutcome('b')];

/** The checkpoint of a transaction that published a (offset 5) and b (offset 7) ahead of offset 4. */
const AHEAD = encodeCheckpoint({
  next: 4n,
  open: [],
  done: [
    { offset: 5n, commandId: 'a' },
    { offset: 7n, commandId: 'b' },
  ],
});

/** The target with the ledger read back as the fake broker has it: its newest committed checkpoint. */
function readingLedgerOf(producers: FakeProducers): CommitTarget {
  return { ...target, latestCheckpoint: async () => producers.checkpoints('ledger').at(-1) };
}

describe('commitTransaction', () => {
  it('writes results, the ledger checkpoint and the next offset in one committed transaction', async () => {
    const producers = new FakeProducers();
    const counts = await commitTransaction(producers, target, write(outcomes, '12', Buffer.from('{}')), log, async () => producers.groupOffset('cmds', 3));
    // Where each topic-partition's records went: what a read-back looks in should Kafka lose this transaction.
    expect(counts).toEqual({
      results: 2,
      deadLetters: 0,
      sent: outcomes,
      written: [
        { topic: 'res', partition: 0, baseOffset: 0n },
        { topic: 'ledger', partition: 3, baseOffset: 0n },
      ],
    });
    expect(producers.transactions).toHaveLength(1);
    const [tx] = producers.transactions;
    expect(tx?.state).toBe('committed');
    expect(tx?.sends.map((s) => [s.topic, s.messages.map((m) => m.key)])).toEqual([
      ['res', ['a', 'b']],
      ['ledger', ['checkpoint/g/cmds']],
    ]);
    // The checkpoint goes to the ledger partition that belongs to the command partition.
    expect(tx?.sends[1]?.messages[0]?.partition).toBe(3);
    expect(tx?.offsets).toEqual({ consumerGroupId: 'g', topics: [{ topic: 'cmds', partitions: [{ partition: 3, offset: '12' }] }] });
  });

  it('does not resend when a failed commit had committed after all (the offset says so)', async () => {
    const producers = new FakeProducers();
    producers.fate = (tx) => (tx.id === 0 ? 'lost-answer' : 'ok');
    await commitTransaction(producers, target, write(outcomes, '12', undefined), log, async () => producers.groupOffset('cmds', 3));
    expect(producers.transactions).toHaveLength(1);
    expect(producers.committedKeys('res')).toEqual(['a', 'b']);
    // The failed producer was dropped and a fresh one initialised before the offset was read.
    expect(producers.discards).toBe(1);
    expect(producers.sessions).toBe(2);
  });

  it('retries, once aborted, when the failed commit did not commit (the offset is behind)', async () => {
    const producers = new FakeProducers();
    producers.fate = (tx) => (tx.id === 0 ? 'fail' : 'ok');
    await commitTransaction(producers, target, write(outcomes, '12', undefined), log, async () => producers.groupOffset('cmds', 3));
    expect(producers.transactions.map((t) => t.state)).toEqual(['aborted', 'committed']);
    expect(producers.committedKeys('res')).toEqual(['a', 'b']);
    expect(producers.groupOffset('cmds', 3)).toBe(12n);
  });

  it('says so when the failed transaction could not be aborted either (it stays open until the next initialisation)', async () => {
    const producers = new FakeProducers();
    producers.fate = (tx) => (tx.id === 0 ? 'fail' : 'ok');
    producers.abortFails = (tx) => tx.id === 0;
    const lines: { msg: string; partition?: number; failure?: string; err?: { message?: string } }[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) });
    await commitTransaction(producers, target, write(outcomes, '12', undefined), logger, async () => producers.groupOffset('cmds', 3));
    const abortFailed = lines.filter((line) => line.msg.startsWith('aborting the failed transaction failed'));
    expect(abortFailed).toHaveLength(1);
    expect(abortFailed[0]).toMatchObject({
      partition: 3,
      failure: 'The coordinator is not available',
      err: { message: 'This is not the correct coordinator for this group' },
    });
    // The open transaction is left as it was; the retry, after initialising again, commits.
    expect(producers.transactions.map((t) => t.state)).toEqual(['open', 'committed']);
  });

  it('does not resend while the committed offset cannot be read: it asks again at the next attempt', async () => {
    const producers = new FakeProducers();
    producers.fate = (tx) => (tx.id === 0 ? 'fail' : 'ok');
    let reads = 0;
    await commitTransaction(producers, target, write(outcomes, '12', undefined), log, async () => {
      reads += 1;
      if (reads === 1) throw new Error('coordinator loading');
      return producers.groupOffset('cmds', 3);
    });
    expect(reads).toBe(2);
    expect(producers.transactions.map((t) => t.state)).toEqual(['aborted', 'committed']);
  });

  it('gives up rather than resend when the committed offset never can be read (the next claim reads what the broker has)', async () => {
    const producers = new FakeProducers();
    producers.fate = (tx) => (tx.id === 0 ? 'lost-answer' : 'ok');
    const failing = commitTransaction(
      producers,
      target,
      write(outcomes, '12', undefined),
      log,
      async () => {
        throw new Error('coordinator loading');
      },
      3,
    );
    await expect(failing).rejects.toThrow('coordinator loading');
    // The one transaction committed (its answer was lost) and nothing was sent again.
    expect(producers.transactions).toHaveLength(1);
    expect(producers.committedKeys('res')).toEqual(['a', 'b']);
  });

  it('retries a failed ledger-only transaction without asking for the offset', async () => {
    const producers = new FakeProducers();
    producers.fate = (tx) => (tx.id === 0 ? 'lost-answer' : 'ok');
    let reads = 0;
    await commitTransaction(producers, target, write([], undefined, Buffer.from('{}')), log, async () => {
      reads += 1;
      return 0n;
    });
    expect(reads).toBe(0);
    // Writing the checkpoint twice is harmless: compaction keeps the newest.
    expect(producers.committedKeys('ledger')).toEqual(['checkpoint/g/cmds', 'checkpoint/g/cmds']);
  });

  it('does not resend results published ahead of the offset when the failed commit had committed after all (the ledger says so)', async () => {
    const producers = new FakeProducers();
    producers.fate = (tx) => (tx.id === 0 ? 'lost-answer' : 'ok');
    const withLedger = readingLedgerOf(producers);
    let offsetReads = 0;
    await commitTransaction(producers, withLedger, write(outcomes, undefined, AHEAD), log, async () => {
      offsetReads += 1;
      return 0n;
    });
    expect(producers.transactions).toHaveLength(1);
    expect(producers.committedKeys('res')).toEqual(['a', 'b']);
    expect(offsetReads).toBe(0);
    expect(producers.sessions).toBe(2);
  });

  it('resends results published ahead when the failed commit did not commit (the ledger has the checkpoint before it)', async () => {
    const producers = new FakeProducers();
    const before = encodeCheckpoint({
      next: 4n,
      open: [
        { offset: 5n, commandId: 'a', at: 1 },
        { offset: 7n, commandId: 'b', at: 1 },
      ],
    });
    await commitTransaction(producers, { ...target, latestCheckpoint: async () => undefined }, write([], undefined, before), log, async () => 0n);
    producers.fate = (tx) => (tx.id === 1 ? 'fail' : 'ok');
    const withLedger = readingLedgerOf(producers);
    await commitTransaction(producers, withLedger, write(outcomes, undefined, AHEAD), log, async () => 0n);
    expect(producers.transactions.map((t) => t.state)).toEqual(['committed', 'aborted', 'committed']);
    expect(producers.committedKeys('res')).toEqual(['a', 'b']);
  });

  describe('a failed commit whose ledger marker Kafka lost (the ledger says not committed)', () => {
    /** The ledger as it reads after the lost marker: the checkpoint before the failed transaction (its marks of a and b). */
    const before = {
      next: 4n,
      open: [
        { offset: 5n, commandId: 'a', at: 1 },
        { offset: 7n, commandId: 'b', at: 1 },
      ],
    };

    it('does not resend when readers see the attempt’s results: it committed; the batches it wrote are what it keeps', async () => {
      const producers = new FakeProducers();
      producers.fate = (tx) => (tx.id === 0 ? 'lost-answer' : 'ok');
      const asked: string[] = [];
      const lostMarker: CommitTarget = {
        ...target,
        latestCheckpoint: async () => before,
        fateOfWritten: async (topic, partition, baseOffset, candidates) => {
          asked.push(`${topic}[${partition}] from ${baseOffset}: ${candidates.map(String).join(', ')}`);
          return { ours: [...candidates], fate: [] };
        },
      };
      const { written, sent } = await commitTransaction(producers, lostMarker, write(outcomes, undefined, AHEAD), log, async () => 0n);
      expect(producers.transactions).toHaveLength(1);
      expect(producers.committedKeys('res')).toEqual(['a', 'b']);
      expect(asked).toEqual(['res[0] from 0: result of a, result of b']);
      expect(written?.map((w) => w.topic)).toEqual(['res', 'ledger']);
      expect(sent).toBe(outcomes);
    });

    /** The first attempt fails; its read-back finds the ledger before it and asks `fateOfWritten` about the batches it wrote. */
    async function failedOnceAsking(fateOfWritten: NonNullable<CommitTarget['fateOfWritten']>): Promise<FakeProducers> {
      const producers = new FakeProducers();
      producers.fate = (tx) => (tx.id === 0 ? 'fail' : 'ok');
      await commitTransaction(
        producers,
        { ...target, latestCheckpoint: async () => before, fateOfWritten },
        write(outcomes, undefined, AHEAD),
        log,
        async () => 0n,
      );
      return producers;
    }

    it('does not resend when its results still hang as its own open transaction: the retry’s commit would publish them beside their copy', async () => {
      const producers = await failedOnceAsking(async (_t, _p, _b, candidates) => ({ ours: [...candidates], fate: 'open' }));
      expect(producers.transactions.map((t) => t.state)).toEqual(['aborted']);
    });

    it('resends when its results were aborted, or their fate is not told (not found): as before', async () => {
      const fates: NonNullable<CommitTarget['fateOfWritten']>[] = [
        async (_t, _p, _b, candidates) => ({ ours: [...candidates], fate: [...candidates] }),
        async () => ({ ours: [], fate: undefined }),
      ];
      for (const fateOfWritten of fates) {
        const producers = await failedOnceAsking(fateOfWritten);
        expect(producers.transactions.map((t) => t.state)).toEqual(['aborted', 'committed']);
      }
    });

    it('still asks after a read-back that failed: the next attempt has the batches the failed commit wrote', async () => {
      const producers = new FakeProducers();
      producers.fate = (tx) => (tx.id === 0 ? 'lost-answer' : 'ok');
      let reads = 0;
      const asked: bigint[] = [];
      const flaky: CommitTarget = {
        ...target,
        latestCheckpoint: async () => {
          reads += 1;
          if (reads === 1) throw new Error('the ledger could not be read (the broker is away)');
          return before;
        },
        fateOfWritten: async (_topic, _partition, baseOffset, candidates) => {
          asked.push(baseOffset);
          return { ours: [...candidates], fate: [] };
        },
      };
      await commitTransaction(producers, flaky, write(outcomes, undefined, AHEAD), log, async () => 0n);
      expect(reads).toBe(2);
      expect(asked).toHaveLength(1);
      expect(producers.transactions).toHaveLength(1);
    });
  });

  it('reads a failed transaction that moved the offset back from the ledger (ledger on), not from the group offset, which may be read stale', async () => {
    const producers = new FakeProducers();
    producers.fate = (tx) => (tx.id === 0 ? 'lost-answer' : 'ok');
    const moved = encodeCheckpoint({ next: 12n, open: [] });
    const withLedger = readingLedgerOf(producers);
    // Without KIP-447 the admin client can still see the offset before the commit.
    await commitTransaction(producers, withLedger, write(outcomes, '12', moved), log, async () => 0n);
    expect(producers.transactions).toHaveLength(1);
    expect(producers.committedKeys('res')).toEqual(['a', 'b']);
  });

  it('does not take an earlier checkpoint with the same next offset and part of the answered records for the failed one', async () => {
    const producers = new FakeProducers();
    const earlier = encodeCheckpoint({ next: 4n, open: [{ offset: 7n, commandId: 'b', at: 1 }], done: [{ offset: 5n, commandId: 'a' }] });
    await commitTransaction(producers, { ...target, latestCheckpoint: async () => undefined }, write([], undefined, earlier), log, async () => 0n);
    producers.fate = (tx) => (tx.id === 1 ? 'fail' : 'ok');
    const withLedger = readingLedgerOf(producers);
    await commitTransaction(producers, withLedger, write([resultOutcome('b')], undefined, AHEAD), log, async () => 0n);
    expect(producers.transactions.map((t) => t.state)).toEqual(['committed', 'aborted', 'committed']);
    expect(producers.committedKeys('res')).toEqual(['b']);
  });

  describe('a transaction this claim committed, lost by Kafka (its markers lost in a broker restart, then aborted)', () => {
    const key = checkpointKey(target.consumerGroup, target.topic);
    const decoded = (record: Buffer): Checkpoint => decodeCheckpoint(Buffer.from(key), record, key) as Checkpoint;
    const lastCheckpoint = encodeCheckpoint({ next: 9n, open: [] });
    const failing = encodeCheckpoint({ next: 12n, open: [] });
    /** The failed transaction: `z`, the offset to 12, read back against the floor 9 (the last checkpoint the claim committed). */
    const failed = (previous: TransactionWrite['previous']): TransactionWrite => ({
      outcomes: [resultOutcome('z')],
      commitOffset: '12',
      ledgerRecord: failing,
      readBack: { by: 'checkpoint', written: decoded(failing), floor: decoded(lastCheckpoint) },
      previous,
    });

    /** Commits the claim's last transaction (`x`, `y`, checkpoint 9, written on floor 5), then fails the next one once. */
    async function lastCommittedThenFailing(producers: FakeProducers): Promise<NonNullable<TransactionWrite['previous']>> {
      const last = [resultOutcome('x'), resultOutcome('y')];
      const { written } = await commitTransaction(producers, target, { ...write(last, '9', lastCheckpoint), previous: undefined }, log, async () => 9n);
      producers.fate = (tx) => (tx.id === 1 ? 'fail' : 'ok');
      return { outcomes: last, floor: { next: 5n, open: [] }, written };
    }

    it('publishes again what Kafka aborted of it, with the failed transaction, and nothing it kept', async () => {
      const producers = new FakeProducers();
      const previous = await lastCommittedThenFailing(producers);
      const asked: string[] = [];
      const lost: CommitTarget = {
        ...target,
        // The ledger's newest is the checkpoint before the last one (5): the initialisation's ABORT ended it.
        latestCheckpoint: async () => ({ next: 5n, open: [] }),
        // Of its results, x was aborted with it; y's marker had been written.
        fateOfWritten: async (topic, partition, baseOffset, candidates) => {
          asked.push(`${topic}[${partition}] from ${baseOffset}: ${candidates.map(String).join(', ')}`);
          return { ours: [...candidates], fate: [Buffer.from('result of x')] };
        },
      };
      const { sent } = await commitTransaction(producers, lost, failed(previous), log, async () => 0n);
      expect(producers.transactions.map((t) => t.state)).toEqual(['committed', 'aborted', 'committed']);
      expect(producers.transactions[2]?.sends.find((s) => s.topic === 'res')?.messages.map((m) => m.key)).toEqual(['x', 'z']);
      expect(asked).toEqual(['res[0] from 0: result of x, result of y']);
      // What the lane keeps as its last committed transaction: both.
      expect(sent.map((o) => (o.kind === 'result' ? o.key : o.kind))).toEqual(['x', 'z']);
    });

    it('publishes nothing of it again where it still hangs (the producer’s next marker there commits it)', async () => {
      const producers = new FakeProducers();
      const previous = await lastCommittedThenFailing(producers);
      const lost: CommitTarget = {
        ...target,
        latestCheckpoint: async () => ({ next: 5n, open: [] }),
        fateOfWritten: async (_topic, _partition, _baseOffset, candidates) => ({ ours: [...candidates], fate: 'open' }),
      };
      await commitTransaction(producers, lost, failed(previous), log, async () => 0n);
      expect(producers.transactions[2]?.sends.find((s) => s.topic === 'res')?.messages.map((m) => m.key)).toEqual(['z']);
    });

    it('publishes all of it again when what was aborted cannot be read, or not yet told (twice rather than lost)', async () => {
      const undecided: CommitTarget['fateOfWritten'] = async (_topic, _partition, _baseOffset, candidates) => ({ ours: [...candidates], fate: undefined });
      const notFound: CommitTarget['fateOfWritten'] = async () => ({ ours: [], fate: undefined });
      for (const fateOfWritten of [undefined, undecided, notFound]) {
        const producers = new FakeProducers();
        const previous = await lastCommittedThenFailing(producers);
        const lost: CommitTarget = { ...target, latestCheckpoint: async () => ({ next: 5n, open: [] }), ...(fateOfWritten && { fateOfWritten }) };
        await commitTransaction(producers, lost, failed(previous), log, async () => 0n);
        expect(producers.transactions[2]?.sends.find((s) => s.topic === 'res')?.messages.map((m) => m.key)).toEqual(['x', 'y', 'z']);
      }
    });

    it('asks again at the next attempt when what was aborted cannot be read (the broker away)', async () => {
      const producers = new FakeProducers();
      const previous = await lastCommittedThenFailing(producers);
      let reads = 0;
      const lost: CommitTarget = {
        ...target,
        latestCheckpoint: async () => ({ next: 5n, open: [] }),
        fateOfWritten: async (_topic, _partition, _baseOffset, candidates) => {
          if (++reads === 1) throw new Error('the result partition could not be read (the broker is away)');
          return { ours: [...candidates], fate: [Buffer.from('result of x')] };
        },
      };
      await commitTransaction(producers, lost, failed(previous), log, async () => 0n);
      expect(reads).toBe(2);
      expect(
        producers.transactions
          .at(-1)
          ?.sends.find((s) => s.topic === 'res')
          ?.messages.map((m) => m.key),
      ).toEqual(['x', 'z']);
    });

    it('ends the claim, sending nothing again, when more than its last transaction was lost or the last is not known', async () => {
      for (const [latest, previous] of [
        [{ next: 3n, open: [] }, 'known'],
        [{ next: 5n, open: [] }, 'unknown'],
      ] as const) {
        const producers = new FakeProducers();
        const last = await lastCommittedThenFailing(producers);
        const lost: CommitTarget = { ...target, latestCheckpoint: async () => latest };
        await expect(commitTransaction(producers, lost, failed(previous === 'known' ? last : undefined), log, async () => 0n)).rejects.toThrow(
          TransactionLostError,
        );
        expect(producers.transactions.map((t) => t.state)).toEqual(['committed', 'aborted']);
      }
    });
  });

  describe('an earlier transaction whose result markers Kafka lost, ended by the abort of a failed one (the ledger shows no loss)', () => {
    const key = checkpointKey(target.consumerGroup, target.topic);
    const decoded = (record: Buffer): Checkpoint => decodeCheckpoint(Buffer.from(key), record, key) as Checkpoint;
    const published = encodeCheckpoint({ next: 9n, open: [] });
    const marks = encodeCheckpoint({ next: 9n, open: [{ offset: 10n, commandId: 'w', at: 1 }] });
    const failing = encodeCheckpoint({ next: 12n, open: [] });

    /**
     * The claim commits T (results x and y, offset 9), then a transaction of marks only (its
     * ledger marker commits T's ledger records, should T's have been lost), then fails the next
     * one (z, offset 12) once. What the lane passes as the claim's last committed transaction (the
     * marks) and its last that published records (T), and the failed write.
     */
    async function publishedMarksThenFailing(producers: FakeProducers): Promise<TransactionWrite> {
      const published0 = [resultOutcome('x'), resultOutcome('y')];
      const t = await commitTransaction(producers, target, write(published0, '9', published), log, async () => 9n);
      const m = await commitTransaction(producers, target, write([], undefined, marks), log, async () => 9n);
      producers.fate = (tx) => (tx.id === 2 ? 'fail' : 'ok');
      return {
        outcomes: [resultOutcome('z')],
        commitOffset: '12',
        ledgerRecord: failing,
        readBack: { by: 'checkpoint', written: decoded(failing), floor: decoded(marks) },
        previous: { outcomes: [], floor: decoded(published), written: m.written },
        lastPublished: { outcomes: published0, floor: undefined, written: t.written },
      };
    }

    /** The ledger reads its newest checkpoint (the marks: no loss shows); T's result batch (res at 0) has `fate`, the failed one's was aborted. */
    function withResultFate(fate: Awaited<ReturnType<NonNullable<CommitTarget['fateOfWritten']>>>['fate'], asked: string[] = []): CommitTarget {
      return {
        ...target,
        latestCheckpoint: async () => decoded(marks),
        fateOfWritten: async (topic, partition, baseOffset, candidates) => {
          asked.push(`${topic}[${partition}] from ${baseOffset}: ${candidates.map(String).join(', ')}`);
          return { ours: [...candidates], fate: topic === 'res' && baseOffset === 0n ? fate : [...candidates] };
        },
      };
    }

    it('publishes again what of it the abort ended, with the failed transaction', async () => {
      const producers = new FakeProducers();
      const failed = await publishedMarksThenFailing(producers);
      const asked: string[] = [];
      const { sent } = await commitTransaction(
        producers,
        withResultFate([Buffer.from('result of x'), Buffer.from('result of y')], asked),
        failed,
        log,
        async () => 9n,
      );
      expect(producers.transactions.map((t) => t.state)).toEqual(['committed', 'committed', 'aborted', 'committed']);
      expect(producers.transactions[3]?.sends.find((s) => s.topic === 'res')?.messages.map((m) => m.key)).toEqual(['x', 'y', 'z']);
      // The failed attempt's own batch (aborted: resent), then T's.
      expect(asked).toEqual(['res[0] from 2: result of z', 'res[0] from 0: result of x, result of y']);
      // What the lane keeps as its last transaction that published: all three.
      expect(sent.map((o) => (o.kind === 'result' ? o.key : o.kind))).toEqual(['x', 'y', 'z']);
    });

    it('publishes nothing of it again when readers see it, when it still hangs (the retry’s commit is its next marker), or when its fate is not told', async () => {
      for (const fate of [[], 'open', undefined] as const) {
        const producers = new FakeProducers();
        const failed = await publishedMarksThenFailing(producers);
        await commitTransaction(producers, withResultFate(fate === undefined ? undefined : fate === 'open' ? 'open' : []), failed, log, async () => 9n);
        expect(producers.transactions.map((t) => t.state)).toEqual(['committed', 'committed', 'aborted', 'committed']);
        expect(producers.transactions[3]?.sends.find((s) => s.topic === 'res')?.messages.map((m) => m.key)).toEqual(['z']);
      }
    });

    it('asks again at the next attempt when the fate cannot be read (the broker away), resending nothing meanwhile', async () => {
      const producers = new FakeProducers();
      const failed = await publishedMarksThenFailing(producers);
      let reads = 0;
      const answering = withResultFate([Buffer.from('result of x')]);
      const flaky: CommitTarget = {
        ...answering,
        fateOfWritten: async (topic, partition, baseOffset, candidates) => {
          if (topic === 'res' && baseOffset === 0n && ++reads === 1) throw new Error('the result partition could not be read (the broker is away)');
          return answering.fateOfWritten!(topic, partition, baseOffset, candidates);
        },
      };
      await commitTransaction(producers, flaky, failed, log, async () => 9n);
      expect(reads).toBe(2);
      expect(producers.transactions.map((t) => t.state)).toEqual(['committed', 'committed', 'aborted', 'committed']);
      expect(producers.transactions[3]?.sends.find((s) => s.topic === 'res')?.messages.map((m) => m.key)).toEqual(['x', 'z']);
    });

    it('asks nothing when the failed transaction published nothing (its abort reached no result partition)', async () => {
      const producers = new FakeProducers();
      const failed = await publishedMarksThenFailing(producers);
      const asked: string[] = [];
      await commitTransaction(
        producers,
        withResultFate([Buffer.from('result of x')], asked),
        { ...failed, outcomes: [], commitOffset: undefined, readBack: readBackFor(undefined, false, decoded(failing)) },
        log,
        async () => 9n,
      );
      expect(asked).toEqual([]);
      expect(producers.transactions.at(-1)?.sends.map((s) => s.topic)).toEqual(['ledger']);
    });
  });

  it('does not resend while the ledger cannot be read back: it asks again at the next attempt', async () => {
    const producers = new FakeProducers();
    producers.fate = (tx) => (tx.id === 0 ? 'lost-answer' : 'ok');
    let reads = 0;
    const flaky = {
      ...target,
      latestCheckpoint: async () => {
        reads += 1;
        if (reads === 1) throw new Error('ledger partition leader moved');
        return producers.checkpoints('ledger').at(-1);
      },
    };
    await commitTransaction(producers, flaky, write(outcomes, undefined, AHEAD), log, async () => 0n);
    expect(reads).toBe(2);
    expect(producers.transactions).toHaveLength(1);
    expect(producers.committedKeys('res')).toEqual(['a', 'b']);
  });

  it('never initialises the producer again while the group rebalances: the claim ends, nothing is sent again', async () => {
    const producers = new FakeProducers();
    producers.fate = (tx) => (tx.id === 0 ? 'fail' : 'ok');
    const rebalancing = { ...target, standing: { maySend: () => true, mayReinitialise: () => false } };
    const error = await commitTransaction(producers, rebalancing, write(outcomes, '12', undefined), log, async () => 0n).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'CLAIM_REBALANCING', retryable: true, message: expect.stringMatching(/rebalances/) });
    expect(producers.transactions).toHaveLength(1);
    expect(producers.sessions).toBe(1);
  });

  it('gives up after the attempts, with the last error', async () => {
    const producers = new FakeProducers();
    producers.fate = () => 'fail';
    await expect(commitTransaction(producers, target, write(outcomes, '12', undefined), log, async () => 0n, 2)).rejects.toThrow(
      'The coordinator is not available',
    );
    expect(producers.transactions.map((t) => t.state)).toEqual(['aborted', 'aborted']);
  });

  it('throws FencedError at once for a fenced producer, naming the partition, and never retries', async () => {
    const producers = new FakeProducers();
    producers.fate = () => 'fenced';
    const error = await commitTransaction(producers, target, write(outcomes, '12', undefined), log, async () => 0n).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FencedError);
    expect((error as FencedError).message).toBe('transactional producer for cmds[3] was fenced: the partition is owned by another instance');
    expect((error as FencedError).code).toBe('PRODUCER_FENCED');
    expect(producers.transactions).toHaveLength(1);
    expect(producers.discards).toBe(1);
  });
});

describe('commitTransaction: a send the broker refuses as too large', () => {
  it('is split finer and committed, never given up on while records can be split', async () => {
    const producers = new FakeProducers();
    // The broker's real limit is lower than the one read at start-up.
    producers.maxSendBytes = 100;
    const many = Array.from({ length: 8 }, (_, i) => resultOutcome(`command-${i}`));
    const counts = await commitTransaction(producers, { ...target, maxBatchBytes: 10_000 }, write(many, '8', undefined), log, async () =>
      producers.groupOffset('cmds', 3),
    );
    expect(counts).toMatchObject({ results: 8, deadLetters: 0 });
    const committed = producers.transactions.filter((t) => t.state === 'committed');
    expect(committed).toHaveLength(1);
    expect(committed[0]?.sends.flatMap((s) => s.messages.map((m) => m.key))).toEqual(many.map((_, i) => `command-${i}`));
  });
});

describe('commitTransaction: trace headers', () => {
  it('publishes each result and dead letter with the headers of its command span; a record without them gets none', async () => {
    const producers = new FakeProducers();
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const traced: RecordOutcome[] = [
      { kind: 'result', key: 'a', value: Buffer.from('result of a'), result: undefined as never, headers: { traceparent } },
      resultOutcome('b'),
      { kind: 'dead-letter', key: null, value: Buffer.from('dl'), record: undefined as never, headers: { traceparent } },
    ];
    await commitTransaction(producers, target, write(traced, '3', undefined), log, async () => producers.groupOffset('cmds', 3));
    const sends = producers.transactions[0]?.sends ?? [];
    expect(sends.map((s) => [s.topic, s.messages.map((m) => m.headers)])).toEqual([
      ['res', [{ traceparent }, undefined]],
      ['dlq', [{ traceparent }]],
    ]);
  });
});

describe('chunkBySize', () => {
  const item = (bytes: number) => ({ key: 'k', value: Buffer.alloc(bytes) });

  it('splits records into sends below the byte limit, counting key, value and overhead', () => {
    // 64 overhead + 1 key + 100 value = 165 bytes each: two fit in 400, three do not.
    const chunks = chunkBySize([item(100), item(100), item(100), item(100), item(100)], 400);
    expect(chunks.map((c) => c.length)).toEqual([2, 2, 1]);
  });

  it('counts header keys and values too', () => {
    // 165 bytes each plus a 66-byte header: 231, so only one fits in 400.
    const withHeader = { ...item(100), headers: { traceparent: 'x'.repeat(55) } };
    expect(chunkBySize([withHeader, withHeader, withHeader], 400).map((c) => c.length)).toEqual([1, 1, 1]);
  });

  it('sends a record larger than the limit alone', () => {
    expect(chunkBySize([item(10), item(1_000), item(10)], 200).map((c) => c.length)).toEqual([1, 1, 1]);
  });

  it('makes no send for no records', () => {
    expect(chunkBySize([], 100)).toEqual([]);
  });
});

describe('commitTransaction: a worker that no longer owns the partition', () => {
  const stale = { ...target, standing: { maySend: () => false, mayReinitialise: () => false } };

  it('commits nothing and never touches a producer when its claim is stale or its lease expired, and no producer of its generation is left', async () => {
    const producers = new FakeProducers();
    producers.present = false;
    await expect(commitTransaction(producers, stale, write(outcomes, '12', Buffer.from('{}')), log, async () => 0n)).rejects.toBeInstanceOf(FencedError);
    expect(producers.sessions).toBe(0);
    expect(producers.transactions).toEqual([]);
  });

  it("commits what a retiring claim had done while its generation's producer is still there (using it fences nobody)", async () => {
    const producers = new FakeProducers();
    await commitTransaction(producers, stale, write(outcomes, '12', Buffer.from('{}')), log, async () => 0n);
    expect(producers.transactions.map((t) => t.state)).toEqual(['committed']);
  });
});

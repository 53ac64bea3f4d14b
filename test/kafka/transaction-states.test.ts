import { describe, expect, it } from 'vitest';
import {
  decodeDescribeProducers,
  decodeDescribeTransactions,
  describeProducersRequest,
  describeTransactionsRequest,
  markerOutlook,
  type OpenTransaction,
} from '../../src/kafka/transaction-states.ts';

/** A minimal writer of the flexible encoding, for answers as a broker sends them. */
class Bytes {
  readonly parts: Buffer[] = [];
  uvarint(v: number): this {
    const out: number[] = [];
    while (v >= 0x80) {
      out.push((v & 0x7f) | 0x80);
      v >>>= 7;
    }
    out.push(v);
    this.parts.push(Buffer.from(out));
    return this;
  }
  int(size: 2 | 4 | 8, v: number | bigint): this {
    const b = Buffer.alloc(size);
    if (size === 2) b.writeInt16BE(Number(v));
    else if (size === 4) b.writeInt32BE(Number(v));
    else b.writeBigInt64BE(BigInt(v));
    this.parts.push(b);
    return this;
  }
  str(s: string | null): this {
    if (s === null) return this.uvarint(0);
    const b = Buffer.from(s);
    this.uvarint(b.length + 1);
    this.parts.push(b);
    return this;
  }
  /** One tagged field of `size` bytes (a newer broker's addition a v0 reader must skip). */
  tag(size: number): this {
    return this.uvarint(1).uvarint(7).uvarint(size).raw(Buffer.alloc(size, 9));
  }
  raw(b: Buffer): this {
    this.parts.push(b);
    return this;
  }
  get buffer(): Buffer {
    return Buffer.concat(this.parts);
  }
}

const producer = (producerId: bigint, producerEpoch: number, startOffset: bigint): OpenTransaction => ({ producerId, producerEpoch, startOffset });

describe('whether a transaction open in a partition can still get its markers', () => {
  it('abandoned: open, of the producer its coordinator holds, the coordinator done (Empty after a fence, or Complete with the marker lost)', () => {
    for (const state of ['Empty', 'CompleteCommit', 'CompleteAbort'])
      expect(markerOutlook([producer(42n, 3, 100n)], { producerId: 42n, producerEpoch: state === 'Empty' ? 4 : 3, state }, [100n, 100n]), state).toBe(
        'abandoned',
      );
  });

  it('due: the coordinator still writing or about to (Ongoing, Prepare*), or nothing open any more', () => {
    for (const state of ['Ongoing', 'PrepareCommit', 'PrepareAbort', 'PrepareEpochFence'])
      expect(markerOutlook([producer(42n, 3, 100n)], { producerId: 42n, producerEpoch: 3, state }, [100n, 100n]), state).toBe('due');
    expect(markerOutlook([], { producerId: 42n, producerEpoch: 3, state: 'Empty' }, [100n, 100n])).toBe('due');
    // A state not taken as done (an expired id) waits as before.
    expect(markerOutlook([producer(42n, 3, 100n)], { producerId: 42n, producerEpoch: 4, state: 'Dead' }, [100n, 100n])).toBe('due');
  });

  it('unknown: another producer id open there, or an epoch newer than the coordinator holds', () => {
    expect(markerOutlook([producer(41n, 3, 100n)], { producerId: 42n, producerEpoch: 9, state: 'Empty' }, [100n, 100n])).toBe('unknown');
    expect(markerOutlook([producer(42n, 3, 100n), producer(7n, 0, 105n)], { producerId: 42n, producerEpoch: 4, state: 'Empty' }, [100n, 100n])).toBe('unknown');
    expect(markerOutlook([producer(42n, 5, 100n)], { producerId: 42n, producerEpoch: 4, state: 'Empty' }, [100n, 100n])).toBe('unknown');
  });

  it('unknown: producers told by a broker whose last stable offset as the leader is not that transaction’s start, before and after (a follower catching up)', () => {
    const done = { producerId: 42n, producerEpoch: 4, state: 'Empty' };
    // The leader has the marker (its stable offset past the start): the answer came from a lagging follower.
    expect(markerOutlook([producer(42n, 3, 100n)], done, [130n, 130n])).toBe('unknown');
    // The stable offset moved while the producers were asked.
    expect(markerOutlook([producer(42n, 3, 100n)], done, [100n, 130n])).toBe('unknown');
    // Not asked of the leader at all.
    expect(markerOutlook([producer(42n, 3, 100n)], done, [])).toBe('unknown');
  });
});

describe('DescribeProducers and DescribeTransactions v0 on the wire', () => {
  it('encodes each request with the header tags first, compact strings and arrays', async () => {
    const producers = describeProducersRequest('t.ledger', 3);
    expect([producers.apiKey, producers.apiVersion]).toEqual([61, 0]);
    expect((await producers.encode()).buffer).toEqual(new Bytes().uvarint(0).uvarint(2).str('t.ledger').uvarint(2).int(4, 3).uvarint(0).uvarint(0).buffer);
    const transactions = describeTransactionsRequest('sms-worker-t-3');
    expect([transactions.apiKey, transactions.apiVersion]).toEqual([65, 0]);
    expect((await transactions.encode()).buffer).toEqual(new Bytes().uvarint(0).uvarint(2).str('sms-worker-t-3').uvarint(0).buffer);
  });

  const producersAnswer = (errorCode: number, startOffsets: readonly bigint[]): Buffer => {
    const b = new Bytes().tag(2).int(4, 0).uvarint(2).str('t.ledger').uvarint(3);
    b.int(4, 1).int(2, 0).str(null).uvarint(1).uvarint(0); // another partition, no producers
    b.int(4, 3)
      .int(2, errorCode)
      .str(errorCode === 0 ? null : 'no')
      .uvarint(startOffsets.length + 1);
    startOffsets.forEach((offset, i) =>
      b
        .int(8, 40n + BigInt(i))
        .int(4, 2)
        .int(4, 7)
        .int(8, 1_700_000_000_000n)
        .int(4, 1)
        .int(8, offset)
        .tag(1),
    );
    return b.uvarint(0).uvarint(0).uvarint(0).buffer;
  };

  it('reads the open transactions of the partition asked for (start offset ≥ 0), skipping tagged fields and other partitions', () => {
    expect(decodeDescribeProducers(producersAnswer(0, [120n, -1n]), 't.ledger', 3)).toEqual([{ producerId: 40n, producerEpoch: 2, startOffset: 120n }]);
    expect(decodeDescribeProducers(producersAnswer(0, []), 't.ledger', 3)).toEqual([]);
  });

  it('throws on a partition error, a missing partition and a truncated answer, never reads past the end', () => {
    expect(() => decodeDescribeProducers(producersAnswer(6, []), 't.ledger', 3)).toThrow(/DescribeProducers answered error code 6/);
    expect(() => decodeDescribeProducers(producersAnswer(0, []), 't.ledger', 2)).toThrow(/without t\.ledger\[2\]/);
    const whole = producersAnswer(0, [120n]);
    for (const cut of [1, 5, 20, whole.length - 4]) expect(() => decodeDescribeProducers(whole.subarray(0, cut), 't.ledger', 3)).toThrow();
    // An array length past the answer is refused before any element is read.
    expect(() => decodeDescribeProducers(new Bytes().uvarint(0).int(4, 0).uvarint(1_000_000).buffer, 't.ledger', 3)).toThrow(/ends/);
  });

  it('reads what the coordinator holds for the transactional id asked for', () => {
    const answer = (errorCode: number): Buffer =>
      new Bytes()
        .uvarint(0)
        .int(4, 0)
        .uvarint(2)
        .int(2, errorCode)
        .str('sms-worker-t-3')
        .str('CompleteCommit')
        .int(4, 60_000)
        .int(8, 1_700_000_000_000n)
        .int(8, 42n)
        .int(2, 5)
        .uvarint(2)
        .str('t.ledger')
        .uvarint(2)
        .int(4, 3)
        .uvarint(0)
        .tag(3)
        .uvarint(0).buffer;
    expect(decodeDescribeTransactions(answer(0), 'sms-worker-t-3')).toEqual({ producerId: 42n, producerEpoch: 5, state: 'CompleteCommit' });
    expect(() => decodeDescribeTransactions(answer(105), 'sms-worker-t-3')).toThrow(/error code 105/);
    expect(() => decodeDescribeTransactions(answer(0), 'another')).toThrow(/without the transactional id/);
  });
});

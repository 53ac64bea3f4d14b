import { describe, expect, it } from 'vitest';
import { abortedRecords, filterAbortedRecords, type FetchedRecord } from '../../src/kafka/aborted-transactions.ts';

const ABORT = Buffer.from([0, 0, 0, 0]);
const COMMIT = Buffer.from([0, 0, 0, 1]);

function record(offset: number, producerId: string, options: { inTransaction?: boolean; control?: Buffer } = {}): FetchedRecord & { label: string } {
  return {
    offset: String(offset),
    key: options.control ?? Buffer.from(`k${offset}`),
    isControlRecord: options.control !== undefined,
    batchContext: { producerId, inTransaction: options.inTransaction ?? true },
    label: `${producerId}@${offset}`,
  };
}

const kept = (records: readonly (FetchedRecord & { label: string })[]): string[] => records.filter((r) => !r.isControlRecord).map((r) => r.label);

describe('filterAbortedRecords (read_committed)', () => {
  it('drops the records of every aborted transaction, whatever order the broker lists them in', () => {
    // Producers A and B both aborted (fenced together), C committed; the broker lists aborted
    // transactions in abort-marker order: B's marker came first although A started earlier.
    const records = [
      record(10, 'A'),
      record(11, 'C'),
      record(12, 'B'),
      record(13, 'A'),
      record(14, 'B'),
      record(15, 'C', { control: COMMIT }),
      record(16, 'B', { control: ABORT }),
      record(17, 'A', { control: ABORT }),
      record(18, 'A', { inTransaction: false }),
    ];
    const aborted = [
      { producerId: 'B', firstOffset: '12' },
      { producerId: 'A', firstOffset: '10' },
    ];
    expect(kept(filterAbortedRecords(records, aborted))).toEqual(['C@11', 'A@18']);
  });

  it('drops records of transactions that began before the first fetched record', () => {
    const records = [record(20, 'A'), record(21, 'B'), record(22, 'A', { control: ABORT }), record(23, 'B', { control: ABORT })];
    const aborted = [
      { producerId: 'A', firstOffset: '5' },
      { producerId: 'B', firstOffset: '7' },
    ];
    expect(kept(filterAbortedRecords(records, aborted))).toEqual([]);
  });

  it('keeps a producer’s records after its abort marker, and non-transactional records always', () => {
    const records = [record(1, 'A'), record(2, 'A', { control: ABORT }), record(3, 'A'), record(4, 'D', { inTransaction: false })];
    expect(kept(filterAbortedRecords(records, [{ producerId: 'A', firstOffset: '1' }]))).toEqual(['A@3', 'D@4']);
  });

  it('keeps everything when nothing was aborted', () => {
    const records = [record(1, 'A'), record(2, 'B')];
    expect(kept(filterAbortedRecords(records, []))).toEqual(['A@1', 'B@2']);
    expect(kept(filterAbortedRecords(records, undefined))).toEqual(['A@1', 'B@2']);
  });
});

describe('abortedRecords (what read_committed drops, by the abort that ended it)', () => {
  const named = (found: ReturnType<typeof abortedRecords<FetchedRecord & { label: string }>>): string[] =>
    found.map((f) => `${f.record.label} in ${f.transaction}`);

  it('names each aborted record by its producer id and the first offset of the aborted transaction it was ended with', () => {
    // A wrote two transactions with no marker between (the first's marker lost), then one ABORT;
    // B committed; C aborted once.
    const records = [
      record(10, 'A'),
      record(11, 'B'),
      record(12, 'A'),
      record(13, 'C'),
      record(14, 'B', { control: COMMIT }),
      record(15, 'A', { control: ABORT }),
      record(16, 'C', { control: ABORT }),
      record(17, 'A'),
    ];
    const aborted = [
      { producerId: 'A', firstOffset: '10' },
      { producerId: 'C', firstOffset: '13' },
    ];
    expect(named(abortedRecords(records, aborted))).toEqual(['A@10 in A@10', 'A@12 in A@10', 'C@13 in C@13']);
  });

  it('names none when nothing was aborted, and never a control record or a record outside a transaction', () => {
    expect(abortedRecords([record(1, 'A'), record(2, 'A', { control: COMMIT })], [])).toEqual([]);
    expect(abortedRecords([record(1, 'A')], undefined)).toEqual([]);
    const records = [record(1, 'A', { inTransaction: false }), record(2, 'A'), record(3, 'A', { control: ABORT })];
    expect(named(abortedRecords(records, [{ producerId: 'A', firstOffset: '1' }]))).toEqual(['A@2 in A@1']);
  });
});

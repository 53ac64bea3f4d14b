import { describe, expect, it } from 'vitest';
import { filterAbortedRecords, type FetchedRecord } from '../../src/kafka/aborted-transactions.ts';

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

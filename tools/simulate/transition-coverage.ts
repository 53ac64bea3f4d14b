import { CLAIM_MOVES, RECORD_MOVES } from '../../src/worker/protocol/table.ts';
import { replaceProperty } from './shipped-variants.ts';

/**
 * The record moves of table.ts the shipped-lane simulation does not make, and why. Its test keeps
 * this list exact: a move made that is listed here, or one not made that is not, fails it.
 */
export const RECORD_MOVES_NOT_SIMULATED: Readonly<Record<string, string>> = {
  'handling|want-send|marking': 'a machine without mark permits: the worker always gives its lanes mark permits (SendPermits)',
  'calling|abandoned|given-up':
    "a call cut under way by the client's close(): a graceful stop closes the client once its lanes retired, a forced one exits with the call under way (a crash)",
  'done|committed|removed': 'not a move the machine checks: the record book lets a record go when a transaction takes it (RecordBook.takePrefix)',
  'published|committed|removed': 'not a move the machine checks: the record book lets a record go when a transaction takes it (RecordBook.takePrefix)',
};

/**
 * Which moves of the partition protocol's tables (src/worker/protocol/table.ts) the shipped code
 * made in a simulation run. Counted where the shipped machine checks each move against its table
 * (`moveRecord` and `moveClaim` ask the table's sets), so a move is counted as the machine made it,
 * not as a driver guessed it from states before and after. While installed, the two sets' `has`
 * also counts; `restore` puts them back.
 */
export class TransitionCoverage {
  readonly records = new Map<string, number>();
  readonly claims = new Map<string, number>();

  /** Counts the machine's moves until the returned function is called. */
  install(): () => void {
    const restores = [count(RECORD_MOVES, this.records), count(CLAIM_MOVES, this.claims)];
    return () => restores.forEach((restore) => restore());
  }

  /** The moves of each table never made. */
  missed(): { records: string[]; claims: string[] } {
    return {
      records: [...RECORD_MOVES].filter((move) => !this.records.has(move)),
      claims: [...CLAIM_MOVES].filter((move) => !this.claims.has(move)),
    };
  }

  /** One line for a run's summary. */
  summary(): string {
    const { records, claims } = this.missed();
    return (
      `transitions made: record ${RECORD_MOVES.size - records.length} of ${RECORD_MOVES.size}, ` +
      `claim ${CLAIM_MOVES.size - claims.length} of ${CLAIM_MOVES.size}` +
      (records.length + claims.length === 0 ? '' : `; never: ${[...records, ...claims].join(', ')}`)
    );
  }
}

function count(moves: ReadonlySet<string>, counts: Map<string, number>): () => void {
  const has = Set.prototype.has;
  return replaceProperty(moves, 'has', {
    value: (move: string): boolean => {
      const allowed = has.call(moves, move);
      if (allowed) counts.set(move, (counts.get(move) ?? 0) + 1);
      return allowed;
    },
  });
}

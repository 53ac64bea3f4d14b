/**
 * The partition machine's own cost per record, alone (no I/O, no lane): one PartitionMachine
 * driven through take → identify → mark → slot → finish → commit for `--records` records, with
 * `--in-hand` records taken ahead of the one finishing, every effect drained (and so every
 * invariant check run) after each event. Prints the best of three runs after a warm-up. To compare
 * two versions of the machine, run it in each tree, alternating.
 *
 *   node bench/machine-events.ts [--records 50000] [--in-hand 100]
 */
import { parseArgs } from 'node:util';
import { DedupWindow } from '../src/worker/lane/dedup-window.ts';
import type { PartitionClaim } from '../src/worker/protocol/claim.ts';
import { PartitionMachine } from '../src/worker/protocol/partition-machine.ts';

const { values } = parseArgs({ options: { records: { type: 'string', default: '50000' }, 'in-hand': { type: 'string', default: '100' } } });
const RECORDS = BigInt(values.records);
const IN_HAND = BigInt(values['in-hand']);

function freshClaim(): PartitionClaim {
  return {
    topic: 'bench',
    partition: 0,
    generation: 1,
    start: 0n,
    inDoubt: new Map(),
    open: new Map(),
    dedup: new DedupWindow(1_000),
    position: { committed: 0n },
    marks: { owner: 'bench', made: 0 },
  };
}

/** One run: ms for every record through the machine. */
function run(): number {
  const m = new PartitionMachine<string>({ claim: freshClaim(), ledger: true, markPermits: true, maxRunAhead: Number.MAX_SAFE_INTEGER, commitIntervalMs: 50 });
  const started = performance.now();
  let taken = 0n;
  for (let done = 0n; done < RECORDS; done++) {
    for (; taken - done < IN_HAND && taken < RECORDS; taken++) {
      m.offer(taken, true, 0);
      m.take(taken, `k${taken}`);
      m.identify(taken, `c${taken}`);
      m.drain();
    }
    const events = [
      () => m.wantSend(done, true, 1, 0),
      () => m.permitGranted(done, 1, 0),
      () => m.commitDue(0),
      () => m.transactionCommitted(1),
      () => m.slotGranted(done, true),
      () => m.finished(done, 'sent', 2),
      () => m.commitDue(3),
      () => m.transactionCommitted(4),
    ];
    for (const event of events) {
      event();
      m.drain();
    }
  }
  return performance.now() - started;
}

run();
const times = [run(), run(), run()];
const best = Math.min(...times);
console.log(
  `machine-events: ${RECORDS} records, ${IN_HAND} in hand: ${times.map((t) => t.toFixed(0)).join(', ')} ms; best ${((best * 1000) / Number(RECORDS)).toFixed(2)} µs a record`,
);

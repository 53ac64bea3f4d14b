// docs/partition-protocol.md shows the protocol's states, events, transitions and invariants as
// src/worker/protocol/table.ts has them (the machine refuses any move not in that table).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { END, PAGE, START, withTables } from '../../tools/protocol-doc.ts';
import { RECORD_TRANSITIONS, CLAIM_TRANSITIONS, MEMBERSHIP_TRANSITIONS } from '../../src/worker/protocol/table.ts';

const page = readFileSync(PAGE, 'utf8');

describe('docs/partition-protocol.md', () => {
  it('has the tables exactly as table.ts renders them (node tools/protocol-doc.ts --write)', () => {
    expect(page).toContain(START);
    expect(page).toContain(END);
    expect(withTables(page)).toBe(page);
  });

  it('lists every transition of the machine, one row each', () => {
    const rows = page.split('\n').filter((line) => /^\| `[\w-]+` \| [\w-]+ \| `[\w-]+` \|/.test(line));
    expect(rows).toHaveLength(RECORD_TRANSITIONS.length + CLAIM_TRANSITIONS.length + MEMBERSHIP_TRANSITIONS.length);
  });

  it('fails the comparison when a membership row is changed by hand', () => {
    const edited = page.replace('| `left` | joined | `left` |', '| `left` | joined | `member` |');
    expect(edited).not.toBe(page);
    expect(withTables(edited)).not.toBe(edited);
  });

  it('fails the comparison when a row is changed by hand', () => {
    const edited = page.replace('| `queued` | predecessor-ended | `handling` |', '| `queued` | predecessor-ended | `calling` |');
    expect(edited).not.toBe(page);
    expect(withTables(edited)).not.toBe(edited);
  });
});

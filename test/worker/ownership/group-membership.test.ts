import { describe, expect, it } from 'vitest';
import { GroupMembership } from '../../../src/worker/ownership/group-membership.ts';

describe('GroupMembership: the very next generation, or maybe not', () => {
  it('is the next generation after REBALANCING, one JoinGroup and the same member id', () => {
    const m = new GroupMembership();
    m.joining();
    expect(m.joined('a')).toBe(false); // the first assignment: nothing to keep
    m.rebalancing();
    m.joining();
    expect(m.joined('a')).toBe(true);
  });

  it('may have missed one after two JoinGroups (a sync cut by a newer rebalance), a new member id (dropped from the group), or no REBALANCING notice', () => {
    const m = new GroupMembership();
    m.joining();
    m.joined('a');
    m.rebalancing();
    m.joining();
    m.joining();
    expect(m.joined('a')).toBe(false);
    m.rebalancing();
    m.joining();
    expect(m.joined('b')).toBe(false);
    m.joining();
    expect(m.joined('b')).toBe(false);
  });
});

// The failover simulation (tools/simulate/failover.ts) runs the shipped FailoverSender and
// GuardedSenders against seeded simulated accounts. These tests run it, and prove its checks see a
// bug in the shipped path: a sender that fails over after an answer that may hide a send, and one
// that leaves its mark open when it declines.
import { describe, expect, it } from 'vitest';
import { isProviderError } from '../../src/provider/provider-error.ts';
import type { GuardedSender } from '../../src/worker/send/guarded-sender.ts';
import { runFailoverSchedules, type WrapSender } from '../../tools/simulate/failover.ts';

/** Declines (as if unreachable) what the account answered ambiguously: the bug failover must never have. */
const declineAfterMaybe: WrapSender = (inner) =>
  ({
    destinations: inner.destinations,
    send: (...args: Parameters<GuardedSender['send']>) => inner.send(...args),
    sendOrDecline: async (...args: Parameters<GuardedSender['sendOrDecline']>) => {
      const outcome = await inner.sendOrDecline(...args);
      if (outcome.kind === 'failed' && isProviderError(outcome.error) && outcome.error.ambiguous) {
        return { kind: 'declined', reason: 'unreachable', code: outcome.error.code, message: 'bug', attempts: outcome.attempts };
      }
      return outcome;
    },
  }) as unknown as GuardedSender;

/** Never tells the caller a declined call is over: the command's mark stays open into the next account. */
const keepMarkOnDecline: WrapSender = (inner) =>
  ({
    destinations: inner.destinations,
    send: (...args: Parameters<GuardedSender['send']>) => inner.send(...args),
    sendOrDecline: (...[request, id, signal, expiresAt, hooks, footprint]: Parameters<GuardedSender['sendOrDecline']>) =>
      inner.sendOrDecline(
        request,
        id,
        signal,
        expiresAt,
        hooks === undefined ? undefined : { ...hooks, kept: (reached) => (reached ? hooks.kept?.(reached) : undefined) },
        footprint,
      ),
  }) as unknown as GuardedSender;

describe('failover simulation over the shipped senders', () => {
  it('300 schedules: no command sent by two accounts, none failed over after a maybe, every call under a mark', { timeout: 60_000 }, async () => {
    expect(await runFailoverSchedules(1, 300)).toEqual([]);
  });

  it('sees a sender that fails over after an answer that may hide a send (at-most-one-send, no-failover-after-maybe)', { timeout: 60_000 }, async () => {
    const kinds = new Set((await runFailoverSchedules(1, 300, declineAfterMaybe)).map((v) => v.kind));
    expect(kinds).toContain('no-failover-after-maybe');
    expect(kinds).toContain('at-most-one-send');
  });

  it('sees a sender that leaves the mark of a declined call open (marks)', { timeout: 60_000 }, async () => {
    const kinds = new Set((await runFailoverSchedules(1, 300, keepMarkOnDecline)).map((v) => v.kind));
    expect(kinds).toContain('marks');
  });
});

import { describe, expect, it } from 'vitest';
import type { SendFootprint } from '../../../src/contracts/validate.ts';
import { describeRoute, RefusalScopes, routeKey, type RefusalScopeSettings } from '../../../src/worker/send/refusal-scopes.ts';

const SETTINGS: RefusalScopeSettings = {
  maxWaitMs: 2_000,
  routeProbe: { initialMs: 1_000, maxMs: 4_000 },
  fundsProbe: { initialMs: 1_500, maxMs: 20_000 },
  accountWideAfterRoutes: 3,
  escalationWindowMs: 60_000,
  maxPausedRoutes: 4,
};

const text = (regions: string[], costUnits = 1): SendFootprint => ({ operation: 'sms.message.send', regions, costUnits });
const voice = (region: string): SendFootprint => ({ operation: 'sms.voice.verification.send', regions: [region], costUnits: 1 });

function scopes(settings: Partial<RefusalScopeSettings> = {}): RefusalScopes {
  return new RefusalScopes({ ...SETTINGS, ...settings });
}

describe('RefusalScopes: 101301 pauses a route', () => {
  it('holds only commands of the same operation whose regions include the route', () => {
    const s = scopes();
    const refused = s.ticket(text(['AU']));
    expect(s.refused(refused, '101301', 0)).toBe('route');
    expect(s.pausedRoutes.map((r) => r.key)).toEqual([routeKey('sms.message.send', ['AU'])]);
    expect(s.admit(s.ticket(text(['CN'])), 10).kind).toBe('go');
    expect(s.admit(s.ticket(voice('AU')), 10).kind).toBe('go');
    expect(s.admit(s.ticket(text(['AU', 'NZ'])), 10)).toEqual({ kind: 'wait', untilMs: 1_000 });
    expect(s.admit(s.ticket(text(['AU'])), 10).kind).toBe('wait');
  });

  it('a paused set of regions holds only commands that include all of them', () => {
    const s = scopes();
    s.refused(s.ticket(text(['AU', 'NZ'])), '101301', 0);
    expect(s.admit(s.ticket(text(['AU'])), 10).kind).toBe('go');
    expect(s.admit(s.ticket(text(['AU', 'CN', 'NZ'])), 10).kind).toBe('wait');
  });

  it('a held command waits until the probe time, then is the one probe; others wait for its outcome', () => {
    const s = scopes();
    s.refused(s.ticket(text(['AU'])), '101301', 0);
    const a = s.ticket(text(['AU']));
    const b = s.ticket(text(['AU']));
    expect(s.admit(a, 100)).toEqual({ kind: 'wait', untilMs: 1_000 });
    expect(s.admit(b, 200)).toEqual({ kind: 'wait', untilMs: 1_000 });
    expect(s.admit(a, 1_000)).toEqual({ kind: 'go' });
    expect(a.probeOf).toEqual({ routes: [routeKey('sms.message.send', ['AU'])], funds: false });
    // b is held until its own bound (200 + 2,000) while a probes.
    expect(s.admit(b, 1_001)).toEqual({ kind: 'wait', untilMs: 2_200 });
    // The probe was abandoned: b may probe now.
    s.release(a);
    expect(s.admit(b, 1_002)).toEqual({ kind: 'go' });
  });

  it('a probe refused again doubles the delay, capped', () => {
    const s = scopes({ maxWaitMs: 10_000 });
    s.refused(s.ticket(text(['AU'])), '101301', 0);
    const probes = [1_000, 3_000, 7_000, 11_000];
    for (const [n, at] of probes.entries()) {
      const t = s.ticket(text(['AU']));
      expect(s.admit(t, at)).toEqual({ kind: 'go' });
      s.refused(t, '101301', at);
      const next = probes[n + 1];
      if (next !== undefined) expect(s.admit(s.ticket(text(['AU'])), at + 1)).toEqual({ kind: 'wait', untilMs: next });
    }
    // 2 s, 4 s, then capped at 4 s.
    expect(s.admit(s.ticket(text(['AU'])), 14_999)).toMatchObject({ kind: 'wait', untilMs: 15_000 });
  });

  it('gives a held command up after maxWaitMs while another command probes, naming the route and code 101301', () => {
    const s = scopes();
    s.refused(s.ticket(text(['AU'])), '101301', 0);
    const t = s.ticket(text(['AU']));
    expect(s.admit(t, 500)).toEqual({ kind: 'wait', untilMs: 1_000 });
    const probe = s.ticket(text(['AU']));
    expect(s.admit(probe, 1_000)).toEqual({ kind: 'go' });
    expect(s.admit(t, 1_000)).toEqual({ kind: 'wait', untilMs: 2_500 });
    const admission = s.admit(t, 2_500);
    expect(admission).toMatchObject({ kind: 'give-up', code: '101301' });
    expect(admission.kind === 'give-up' && admission.detail).toMatch(
      /no valid upstream for text to AU \(101301\) since 1970-01-01T00:00:00.000Z; it stayed refused for the 2000 ms/,
    );
  });

  it('gives a held command up at once when no probe is under way or due within its wait: only a probe can lift the route', () => {
    const s = scopes({ routeProbe: { initialMs: 60_000, maxMs: 60_000 } });
    s.refused(s.ticket(text(['AU'])), '101301', 0);
    const admission = s.admit(s.ticket(text(['AU'])), 500);
    expect(admission).toMatchObject({ kind: 'give-up', code: '101301' });
    expect(admission.kind === 'give-up' && admission.detail).toContain('its next probe is not due within the 2000 ms this command may wait');
    // Within reach of the probe, it waits.
    expect(s.admit(s.ticket(text(['AU'])), 58_000)).toEqual({ kind: 'wait', untilMs: 60_000 });
  });

  it('a success resumes every paused route of its operation that it covered', () => {
    const s = scopes();
    s.refused(s.ticket(text(['AU'])), '101301', 0);
    s.refused(s.ticket(text(['NZ'])), '101301', 0);
    const probe = s.ticket(text(['AU', 'NZ']));
    expect(s.admit(probe, 1_000).kind).toBe('go');
    s.succeeded(probe, 1_001);
    expect(s.pausedRoutes).toEqual([]);
  });

  it('the refused command itself is the first probe while it waits; another may probe once it has gone', () => {
    const s = scopes();
    const refused = s.ticket(text(['AU']));
    s.refused(refused, '101301', 0);
    const other = s.ticket(text(['AU']));
    expect(s.admit(other, 10).kind).toBe('wait');
    expect(s.admit(refused, 20).kind).toBe('wait');
    // The other's timer fires first: it waits for the refused one's turn.
    expect(s.admit(other, 1_000)).toEqual({ kind: 'wait', untilMs: 2_010 });
    expect(s.admit(refused, 1_000)).toEqual({ kind: 'go' });
    s.release(refused);
    expect(s.admit(other, 1_001)).toEqual({ kind: 'go' });
  });

  it('a refusal already explained by a paused route (a command to AU and NZ while AU is paused) adds no route and no evidence', () => {
    const s = scopes();
    expect(s.refused(s.ticket(text(['AU'])), '101301', 0)).toBe('route');
    expect(s.refused(s.ticket(text(['AU', 'NZ'])), '101301', 1)).toBe('route');
    expect(s.refused(s.ticket(text(['AU', 'CN'])), '101301', 2)).toBe('route');
    expect(s.pausedRoutes.map((r) => r.key)).toEqual([routeKey('sms.message.send', ['AU'])]);
  });

  it('holds at most maxPausedRoutes routes, dropping the oldest', () => {
    const s = scopes({ accountWideAfterRoutes: 64 });
    for (const region of ['AU', 'NZ', 'BR', 'ZA', 'AR']) s.refused(s.ticket(text([region])), '101301', 0);
    expect(s.pausedRoutes.map((r) => r.regions[0])).toEqual(['NZ', 'BR', 'ZA', 'AR']);
  });
});

describe('RefusalScopes: when a 101301 is about the account', () => {
  it('escalates on the third distinct route refused with no success in between', () => {
    const s = scopes();
    expect(s.refused(s.ticket(text(['AU'])), '101301', 0)).toBe('route');
    // The same route again is no new evidence.
    expect(s.refused(s.ticket(text(['AU'])), '101301', 1)).toBe('route');
    expect(s.refused(s.ticket(text(['BR'])), '101301', 2)).toBe('route');
    expect(s.refused(s.ticket(text(['ZA'])), '101301', 3)).toBe('account');
  });

  it('a success in between, or refusals older than the window, do not count', () => {
    const s = scopes();
    s.refused(s.ticket(text(['AU'])), '101301', 0);
    s.refused(s.ticket(text(['BR'])), '101301', 1);
    s.succeeded(s.ticket(text(['CN'])), 2);
    expect(s.refused(s.ticket(text(['ZA'])), '101301', 3)).toBe('route');
    const late = scopes();
    late.refused(late.ticket(text(['AU'])), '101301', 0);
    late.refused(late.ticket(text(['BR'])), '101301', 1);
    expect(late.refused(late.ticket(text(['ZA'])), '101301', 60_002)).toBe('route');
  });

  it('any other code (401/403/404/407) is about the account at once', () => {
    const s = scopes();
    expect(s.refused(s.ticket(text(['CN'])), 'PROVIDER_HTTP_401', 0)).toBe('account');
    expect(s.pausedRoutes).toEqual([]);
  });
});

describe('RefusalScopes: 105400 for one command', () => {
  it('a refused command of more than one unit sets a cost ceiling: cheaper commands go, as large ones wait', () => {
    const s = scopes();
    const big = s.ticket(text(['CN'], 1_000));
    expect(s.refused(big, '105400', 0)).toBe('command');
    expect(s.costCeiling).toBe(1_000);
    expect(s.admit(s.ticket(text(['CN'], 999)), 1).kind).toBe('go');
    expect(s.admit(s.ticket(text(['CN'], 1_000)), 1)).toEqual({ kind: 'wait', untilMs: 1_500 });
  });

  it('a cheaper send that succeeds decides it: the refused command is given up at once', () => {
    const s = scopes();
    const big = s.ticket(text(['CN'], 1_000));
    s.refused(big, '105400', 0);
    expect(s.admit(big, 1).kind).toBe('wait');
    const small = s.ticket(text(['CN'], 1));
    expect(s.admit(small, 2).kind).toBe('go');
    s.succeeded(small, 3);
    const admission = s.admit(big, 4);
    expect(admission).toMatchObject({ kind: 'give-up', code: '105400' });
    expect(admission.kind === 'give-up' && admission.detail).toContain('1000 billed units');
  });

  it('a refused command of one unit is about the account: the ceiling gives way to the account-wide pause', () => {
    const s = scopes();
    s.refused(s.ticket(text(['CN'], 50)), '105400', 0);
    expect(s.refused(s.ticket(text(['CN'], 1)), '105400', 1)).toBe('account');
    expect(s.costCeiling).toBeUndefined();
  });

  it('a cheaper refusal lowers the ceiling', () => {
    const s = scopes();
    s.refused(s.ticket(text(['CN'], 1_000)), '105400', 0);
    s.refused(s.ticket(text(['CN'], 10)), '105400', 1);
    expect(s.costCeiling).toBe(10);
    expect(s.admit(s.ticket(text(['CN'], 10)), 2).kind).toBe('wait');
  });

  it('the ceiling is probed by the cheapest command waiting, and a probe that goes through lifts it', () => {
    const s = scopes({ maxWaitMs: 60_000 });
    s.refused(s.ticket(text(['CN'], 100)), '105400', 0);
    const large = s.ticket(text(['CN'], 500));
    const cheaper = s.ticket(text(['CN'], 200));
    expect(s.admit(large, 1).kind).toBe('wait');
    expect(s.admit(cheaper, 2).kind).toBe('wait');
    expect(s.admit(large, 1_500).kind).toBe('wait');
    expect(s.admit(cheaper, 1_500)).toEqual({ kind: 'go' });
    expect(cheaper.probeOf).toEqual({ routes: [], funds: true });
    s.succeeded(cheaper, 1_501);
    expect(s.costCeiling).toBeUndefined();
    expect(s.admit(large, 1_502).kind).toBe('go');
  });

  it('only commands held by the ceiling count for its cheapest probe (a cheaper one held by a route does not)', () => {
    const s = scopes({ maxWaitMs: 60_000 });
    s.refused(s.ticket(text(['AU'])), '101301', 0);
    s.refused(s.ticket(text(['CN'], 100)), '105400', 0);
    const routeHeld = s.ticket(text(['AU'], 1));
    expect(s.admit(routeHeld, 1).kind).toBe('wait');
    const large = s.ticket(text(['CN'], 300));
    expect(s.admit(large, 1_500)).toEqual({ kind: 'go' });
    expect(large.probeOf).toEqual({ routes: [], funds: true });
  });

  it('gives a command held by the ceiling up after maxWaitMs with code 105400 (another command probing), also when no probe is due within it: evidence that the account is empty may still come', () => {
    const s = scopes();
    s.refused(s.ticket(text(['CN'], 100)), '105400', 0);
    const t = s.ticket(text(['CN'], 100));
    expect(s.admit(t, 10)).toEqual({ kind: 'wait', untilMs: 1_500 });
    expect(s.admit(s.ticket(text(['CN'], 100)), 1_500)).toEqual({ kind: 'go' });
    expect(s.admit(t, 2_010)).toMatchObject({ kind: 'give-up', code: '105400' });
    const far = scopes({ fundsProbe: { initialMs: 60_000, maxMs: 60_000 } });
    far.refused(far.ticket(text(['CN'], 100)), '105400', 0);
    const held = far.ticket(text(['CN'], 200));
    expect(far.admit(held, 1)).toEqual({ kind: 'wait', untilMs: 2_001 });
    // The account-wide pause takes over (a one-unit command refused): the ceiling no longer holds it.
    far.clearCostCeiling();
    expect(far.admit(held, 500)).toEqual({ kind: 'go' });
    far.refused(far.ticket(text(['CN'], 100)), '105400', 600);
    const late = far.ticket(text(['CN'], 200));
    expect(far.admit(late, 601)).toEqual({ kind: 'wait', untilMs: 2_601 });
    expect(far.admit(late, 2_601)).toMatchObject({ kind: 'give-up', code: '105400' });
  });
});

describe('describeRoute', () => {
  it('names the operation and the regions, cut after eight', () => {
    expect(describeRoute('sms.message.send', ['AU', 'NZ'])).toBe('text to AU+NZ');
    expect(describeRoute('sms.voice.verification.send', ['CN'])).toBe('voice call to CN');
    const many = ['AR', 'AU', 'BR', 'CA', 'DE', 'ES', 'FR', 'GB', 'IT', 'NZ'];
    expect(describeRoute('sms.message.send', many)).toBe('text to AR+AU+BR+CA+DE+ES+FR+GB+… (10 regions)');
  });
});

describe('RefusalScopes: probes are never lost', () => {
  it('a probe refused by a code about the client (401) gives the route and the ceiling back', () => {
    const s = scopes();
    s.refused(s.ticket(text(['AU'])), '101301', 0);
    const probe = s.ticket(text(['AU']));
    expect(s.admit(probe, 1_000)).toEqual({ kind: 'go' });
    expect(s.refused(probe, 'PROVIDER_HTTP_401', 1_001)).toBe('account');
    expect(s.admit(s.ticket(text(['AU'])), 1_002)).toEqual({ kind: 'go' });
  });
});

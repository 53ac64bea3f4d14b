import { describe, expect, it } from 'vitest';
import { failoverReason, type FailedCall } from '../../src/accounts/failover.ts';

const refused = (code: string, failureClass: FailedCall['failureClass']): FailedCall => ({ failureClass, code, refused: true, surelyNotSent: false });

describe('failoverReason: on to the next account only on proof of not-sent, for a reason of the account', () => {
  it('101301, 105400 and a refused client go on, each with its reason', () => {
    expect(failoverReason(refused('101301', 'configuration'))).toBe('no-route');
    expect(failoverReason(refused('105400', 'insufficient-funds'))).toBe('funds');
    expect(failoverReason(refused('PROVIDER_HTTP_401', 'configuration'))).toBe('refused-client');
    expect(failoverReason(refused('PROVIDER_HTTP_407', 'configuration'))).toBe('refused-client');
  });

  it('a request that never reached the service goes on (unreachable)', () => {
    expect(failoverReason({ failureClass: 'transport', code: 'PROVIDER_CONNECTION_REFUSED', refused: false, surelyNotSent: true })).toBe('unreachable');
  });

  it('stays after anything that may have been a send: ambiguous, malformed, or a transport failure after an earlier ambiguous attempt', () => {
    expect(failoverReason({ failureClass: 'ambiguous', code: 'PROVIDER_HTTP_500', refused: false, surelyNotSent: false })).toBeUndefined();
    expect(failoverReason({ failureClass: 'malformed', code: 'PROVIDER_MALFORMED', refused: false, surelyNotSent: false })).toBeUndefined();
    // ProviderError says neither refused nor surelyNotSent once an earlier attempt may have reached the service.
    expect(failoverReason({ failureClass: 'transport', code: 'PROVIDER_CONNECTION_REFUSED', refused: false, surelyNotSent: false })).toBeUndefined();
    expect(failoverReason({ failureClass: 'configuration', code: '101301', refused: false, surelyNotSent: false })).toBeUndefined();
  });

  it('stays on an error about the command (the next account would refuse it too), a throttle, and a call cut by shutdown', () => {
    expect(failoverReason(refused('102001', 'business'))).toBeUndefined();
    expect(failoverReason({ failureClass: 'throttled', code: 'PROVIDER_HTTP_429', refused: false, surelyNotSent: true })).toBeUndefined();
    expect(failoverReason({ failureClass: 'transport', code: 'PROVIDER_ABORTED', refused: false, surelyNotSent: true, aborted: true })).toBeUndefined();
  });
});

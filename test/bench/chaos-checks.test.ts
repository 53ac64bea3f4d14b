import { describe, expect, it } from 'vitest';
import { checkStream, inFlightAt, orderViolations, sendsPerCommand } from '../../bench/lib/chaos-checks.ts';
import type { LoggedRequest } from '../../bench/lib/request-log.ts';

const req = (seq: number, correlationId: string | undefined, accepted: boolean, receivedAt = seq * 10): LoggedRequest => ({
  seq,
  receivedAt,
  correlationId,
  httpStatus: accepted ? 200 : 503,
  answerCode: accepted ? '0' : undefined,
  accepted,
});

describe('sendsPerCommand', () => {
  it('counts requests and accepted sends per correlation id and keeps the first request', () => {
    const sends = sendsPerCommand([req(3, 'a', true), req(1, 'a', false), req(2, 'b', true), req(4, undefined, true), req(5, 'a', true)]);
    expect(sends.get('a')).toEqual({ requests: 3, accepted: 2, firstSeq: 1, firstAt: 10 });
    expect(sends.get('b')).toEqual({ requests: 1, accepted: 1, firstSeq: 2, firstAt: 20 });
    expect(sends.size).toBe(2);
  });
});

describe('orderViolations', () => {
  it('counts adjacent sent commands of a key whose first requests arrived out of publish order', () => {
    const sends = sendsPerCommand([req(1, 'a1', true), req(2, 'a3', true), req(3, 'a2', true), req(4, 'b1', true), req(5, 'b2', true)]);
    const report = orderViolations(
      new Map([
        ['a', ['a1', 'a2', 'a3']],
        ['b', ['b1', 'b2']],
      ]),
      sends,
    );
    expect(report).toMatchObject({ keys: 2, pairs: 3, violations: 1 });
    expect(report.violating).toEqual([{ key: 'a', earlier: 'a2', later: 'a3' }]);
  });

  it('skips commands that never reached the service', () => {
    const sends = sendsPerCommand([req(1, 'a1', true), req(2, 'a3', true)]);
    expect(orderViolations(new Map([['a', ['a1', 'a2', 'a3']]]), sends)).toMatchObject({ pairs: 1, violations: 0 });
  });
});

describe('inFlightAt', () => {
  it('holds the commands first requested by then whose result was not yet visible', () => {
    const sends = sendsPerCommand([req(1, 'done', true, 100), req(2, 'flying', true, 200), req(3, 'later', true, 600), req(4, 'slow', true, 300)]);
    const visible = new Map([
      ['done', 250],
      ['slow', 900],
    ]);
    expect(inFlightAt(500, ['done', 'flying', 'later', 'slow', 'never'], sends, visible)).toEqual(['flying', 'slow']);
  });
});

describe('checkStream', () => {
  const results = (entries: [string, string[]][]): Map<string, { outcome: string }[]> =>
    new Map(entries.map(([id, outcomes]) => [id, outcomes.map((outcome) => ({ outcome }))]));

  it('passes a stream whose every command has one result and at most one accepted send', () => {
    const check = checkStream({
      expected: 3,
      recordsPerCommand: new Map([
        ['h1', 1],
        ['h2', 2],
        ['h3', 1],
      ]),
      results: results([
        ['h1', ['SENT']],
        ['h2', ['UNKNOWN']],
        ['h3', ['REJECTED']],
        ['other', ['SENT', 'SENT']],
      ]),
      sends: sendsPerCommand([req(1, 'h1', true), req(2, 'h2', false), req(3, 'h2', true), req(4, 'other', true), req(5, 'other', true)]),
      orderByKey: new Map([['k', ['h1', 'h2']]]),
    });
    expect(check).toMatchObject({ commandsIn: 3, records: 4, resultsOut: 3, missing: [], duplicated: [], sentTwice: [], unknownResults: 1, failures: [] });
    expect(check.order).toMatchObject({ pairs: 1, violations: 0 });
  });

  it('fails a stream with a command lost, answered twice, sent twice or missing from its topic; the other ids do not count', () => {
    const check = checkStream({
      expected: 4,
      recordsPerCommand: new Map([
        ['h1', 1],
        ['h2', 1],
        ['h3', 1],
      ]),
      results: results([
        ['h2', ['SENT', 'SENT']],
        ['h3', ['SENT']],
      ]),
      sends: sendsPerCommand([req(1, 'h3', true), req(2, 'h3', true), req(3, 'h2', true)]),
      orderByKey: new Map([['k', ['h2', 'h3']]]),
    });
    expect(check).toMatchObject({ missing: ['h1'], duplicated: ['h2'], sentTwice: ['h3'] });
    expect(check.order.violations).toBe(1);
    expect(check.failures).toEqual([
      '1 commands without a result',
      '1 commands with more than one result',
      '1 commands sent more than once',
      'only 3 of 4 commands reached the command topic',
    ]);
  });
});

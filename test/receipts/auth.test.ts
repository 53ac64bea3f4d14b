import { describe, expect, it } from 'vitest';
import { basicCredentials, credentialDigests, isAuthorised, matchReportPath } from '../../src/receipts/auth.ts';

const TOKEN = 'tok_0123456789abcdef';
const basicHeader = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('matchReportPath', () => {
  it('takes the base path and one segment below it as the token', () => {
    expect(matchReportPath('/receipts', '/receipts')).toEqual({ kind: 'report', token: undefined });
    expect(matchReportPath(`/receipts/${TOKEN}`, '/receipts')).toEqual({ kind: 'report', token: TOKEN });
    expect(matchReportPath('/receipts/a%2Db', '/receipts')).toEqual({ kind: 'report', token: 'a-b' });
  });

  it('finds nothing anywhere else', () => {
    for (const path of ['/', '/receiptsX', '/receipts/', '/receipts/a/b', '/metrics', '/receipts/%E0%A4%A']) {
      expect(matchReportPath(path, '/receipts'), path).toEqual({ kind: 'not-found' });
    }
  });
});

describe('basicCredentials', () => {
  it('reads user:password from a Basic header, nothing from anything else', () => {
    expect(basicCredentials(basicHeader('svc', 'pw:with:colons'))).toBe('svc:pw:with:colons');
    expect(basicCredentials(undefined)).toBeUndefined();
    expect(basicCredentials('Bearer abc')).toBeUndefined();
    expect(basicCredentials(`Basic ${Buffer.from('nocolon').toString('base64')}`)).toBeUndefined();
    expect(basicCredentials(`Basic ${'A'.repeat(2000)}`)).toBeUndefined();
  });
});

describe('isAuthorised', () => {
  const tokenOnly = credentialDigests({ pathToken: TOKEN });
  const basicOnly = credentialDigests({ basic: { username: 'svc', password: 'a-long-password-123' } });
  const both = credentialDigests({ pathToken: TOKEN, basic: { username: 'svc', password: 'a-long-password-123' } });

  it('path token: exactly the token', () => {
    expect(isAuthorised(tokenOnly, { token: TOKEN, authorization: undefined })).toBe(true);
    expect(isAuthorised(tokenOnly, { token: `${TOKEN}x`, authorization: undefined })).toBe(false);
    expect(isAuthorised(tokenOnly, { token: TOKEN.slice(0, -1), authorization: undefined })).toBe(false);
    expect(isAuthorised(tokenOnly, { token: undefined, authorization: undefined })).toBe(false);
    // The digest of '' must not stand in for "no token".
    expect(isAuthorised(credentialDigests({ pathToken: '' }), { token: undefined, authorization: undefined })).toBe(false);
  });

  it('basic auth: exactly the user and password; a token in the path is refused when none is configured', () => {
    expect(isAuthorised(basicOnly, { token: undefined, authorization: basicHeader('svc', 'a-long-password-123') })).toBe(true);
    expect(isAuthorised(basicOnly, { token: undefined, authorization: basicHeader('svc', 'wrong') })).toBe(false);
    expect(isAuthorised(basicOnly, { token: undefined, authorization: basicHeader('other', 'a-long-password-123') })).toBe(false);
    expect(isAuthorised(basicOnly, { token: undefined, authorization: undefined })).toBe(false);
    expect(isAuthorised(basicOnly, { token: 'anything', authorization: basicHeader('svc', 'a-long-password-123') })).toBe(false);
  });

  it('both configured: both needed', () => {
    expect(isAuthorised(both, { token: TOKEN, authorization: basicHeader('svc', 'a-long-password-123') })).toBe(true);
    expect(isAuthorised(both, { token: TOKEN, authorization: undefined })).toBe(false);
    expect(isAuthorised(both, { token: 'nope', authorization: basicHeader('svc', 'a-long-password-123') })).toBe(false);
  });

  it('keeps digests, not the secrets', () => {
    expect(JSON.stringify(both)).not.toContain(TOKEN);
    expect(Buffer.isBuffer(both.pathToken) && both.pathToken.length).toBe(32);
  });
});

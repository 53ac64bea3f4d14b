import { describe, expect, it } from 'vitest';
import { computeSignature, createNonce, signingQuery, stringToSign } from '../../src/provider/signing.ts';
import { redactText, redactUrl } from '../../src/provider/redact.ts';

describe('signing', () => {
  const params = {
    timestamp: '1620269782258',
    action: 'sms.message.send',
    nonce: 'd7041f4746a09b10',
    accessKeyId: 'test-key-id',
    algorithm: 'hmac-sha256',
  };

  it('builds the string to sign from the params sorted by key, without signature', () => {
    expect(stringToSign({ ...params, signature: 'ignored' })).toBe(
      'accessKeyId=test-key-id&action=sms.message.send&algorithm=hmac-sha256&nonce=d7041f4746a09b10&timestamp=1620269782258',
    );
  });

  it('URI-encodes values as the Node SDK does', () => {
    expect(stringToSign({ b: 'a b/c', a: '+=&' })).toBe('a=%2B%3D%26&b=a%20b%2Fc');
  });

  it('matches a vector computed independently with openssl (HMAC-SHA256, base64)', () => {
    // printf '%s' '<string to sign>' | openssl dgst -sha256 -hmac 'test-secret' -binary | base64
    expect(computeSignature(params, 'test-secret')).toBe('PYwmFYBvJsnuxW06hS5pJI7XpJBJ+bwuVVqrCojhneM=');
  });

  it('signingQuery yields the four HMAC params for a given clock and nonce', () => {
    const signed = signingQuery('test-key-id', 'sms.message.send', 'test-secret', 1620269782258, 'd7041f4746a09b10');
    expect(signed).toEqual({
      algorithm: 'hmac-sha256',
      timestamp: '1620269782258',
      nonce: 'd7041f4746a09b10',
      signature: 'PYwmFYBvJsnuxW06hS5pJI7XpJBJ+bwuVVqrCojhneM=',
    });
  });

  it('creates hex nonces inside the 8–64 character range, different each time', () => {
    const a = createNonce();
    const b = createNonce();
    expect(a).toMatch(/^[0-9a-f]{8,64}$/);
    expect(a).not.toBe(b);
  });
});

describe('redaction', () => {
  it('redacts credentials in URLs', () => {
    const redacted = redactUrl('https://u:p@api.example/?action=sms.message.send&accessKeyId=KEY123&signature=abc%2B');
    expect(redacted).toBe('https://api.example/?action=sms.message.send&accessKeyId=REDACTED&signature=REDACTED');
  });

  it('redacts secret values inside free text, leaving short values alone', () => {
    expect(redactText('bad key KEY123 (KEY123)', ['KEY123', 'ab'])).toBe('bad key REDACTED (REDACTED)');
  });
});

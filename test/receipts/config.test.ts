import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.ts';
import { loadReceiverConfig } from '../../src/receipts/config.ts';

const BASE = { KAFKA_BROKERS: 'localhost:9092', SCHEMA_REGISTRY_URL: 'http://localhost:8081', RECEIPTS_PATH_TOKEN: 'tok_0123456789abcdef' };

function problems(env: Record<string, string>): readonly string[] {
  try {
    loadReceiverConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe('loadReceiverConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadReceiverConfig(BASE);
    expect(config).toMatchObject({
      topic: 'sms.receipts',
      host: '0.0.0.0',
      port: 8080,
      path: '/receipts',
      credentials: { pathToken: BASE.RECEIPTS_PATH_TOKEN, basic: undefined },
      maxBodyBytes: 1_048_576,
      maxReports: 1000,
      publishTimeoutMs: 10_000,
      rateLimit: { perSecond: 50, burst: 200, maxSources: 10_000 },
      trustedProxyHops: 0,
      httpPort: 9465,
      logLevel: 'info',
    });
    expect(config.kafka.brokers).toEqual(['localhost:9092']);
  });

  it('takes basic auth instead of (or with) a path token', () => {
    const config = loadReceiverConfig({ ...BASE, RECEIPTS_PATH_TOKEN: '', RECEIPTS_BASIC_USERNAME: 'svc', RECEIPTS_BASIC_PASSWORD: 'a-long-password-123' });
    expect(config.credentials).toEqual({ pathToken: undefined, basic: { username: 'svc', password: 'a-long-password-123' } });
  });

  it('refuses to run without any credential', () => {
    expect(problems({ ...BASE, RECEIPTS_PATH_TOKEN: '' })).toEqual([expect.stringContaining('set at least one')]);
  });

  it('lists every problem at once, without echoing a secret', () => {
    const found = problems({
      ...BASE,
      RECEIPTS_PATH_TOKEN: 'short secret!',
      RECEIPTS_BASIC_PASSWORD: 'pw-too-short',
      RECEIPTS_PORT: '70000',
      RECEIPTS_PATH: 'receipts/',
      RECEIPTS_MAX_BODY_BYTES: '10',
    });
    expect(found.map((p) => p.split(':')[0]).sort()).toEqual(
      ['RECEIPTS_BASIC_PASSWORD', 'RECEIPTS_MAX_BODY_BYTES', 'RECEIPTS_PATH', 'RECEIPTS_PATH_TOKEN', 'RECEIPTS_PORT'].sort(),
    );
    expect(found.join('\n')).not.toContain('short secret!');
    expect(found.join('\n')).not.toContain('pw-too-short');
  });

  it('checks across variables: basic user and password together, ports apart, the connection rules', () => {
    const found = problems({
      ...BASE,
      RECEIPTS_BASIC_USERNAME: 'svc',
      RECEIPTS_PORT: '9000',
      RECEIPTS_HTTP_PORT: '9000',
      KAFKA_SASL_MECHANISM: 'plain',
    });
    expect(found).toEqual([
      expect.stringContaining('KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD'),
      expect.stringContaining('RECEIPTS_BASIC_USERNAME and RECEIPTS_BASIC_PASSWORD'),
      expect.stringContaining('RECEIPTS_PORT and RECEIPTS_HTTP_PORT'),
    ]);
  });
});

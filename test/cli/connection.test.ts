import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { connectionFrom } from '../../src/cli/connection.ts';
import { ConfigError } from '../../src/errors.ts';

const dir = mkdtempSync(join(tmpdir(), 'sms-worker-cli-'));
const caFile = join(dir, 'ca.pem');
writeFileSync(caFile, '-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const base = { KAFKA_BROKERS: 'kafka-0:9093,kafka-1:9093', SCHEMA_REGISTRY_URL: 'https://registry.example:8081/' };

function problemsOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('produce/tail connection settings', () => {
  it('takes TLS, SASL and registry credentials from the worker’s variables', () => {
    const connection = connectionFrom({}, 'COMMAND_TOPIC', {
      ...base,
      KAFKA_SSL: 'true',
      KAFKA_SSL_CA_FILE: caFile,
      KAFKA_SASL_MECHANISM: 'scram-sha-512',
      KAFKA_SASL_USERNAME: 'worker',
      KAFKA_SASL_PASSWORD: 'kafka-secret',
      SCHEMA_REGISTRY_USERNAME: 'reg-user',
      SCHEMA_REGISTRY_PASSWORD: 'reg-secret',
    });
    expect(connection.kafka.brokers).toEqual(['kafka-0:9093', 'kafka-1:9093']);
    expect(connection.kafka.ssl).toEqual({ ca: '-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n', rejectUnauthorized: true });
    expect(connection.kafka.sasl).toEqual({ mechanism: 'scram-sha-512', username: 'worker', password: 'kafka-secret' });
    expect(connection.registry).toEqual({ url: 'https://registry.example:8081', auth: { username: 'reg-user', password: 'reg-secret' } });
    expect(connection.topic).toBe('sms.commands');
  });

  it('is plaintext and anonymous when nothing says otherwise', () => {
    const connection = connectionFrom({}, 'RESULT_TOPIC', { ...base, RESULT_TOPIC: 'my.results' });
    expect(connection.kafka.ssl).toBe(false);
    expect(connection.kafka.sasl).toBeUndefined();
    expect(connection.registry.auth).toBeUndefined();
    expect(connection.topic).toBe('my.results');
  });

  it('lets --brokers, --registry and --topic win over the environment', () => {
    const connection = connectionFrom({ brokers: 'localhost:9092', registry: 'http://127.0.0.1:8081', topic: 'other' }, 'COMMAND_TOPIC', {
      ...base,
      COMMAND_TOPIC: 'sms.commands',
    });
    expect(connection.kafka.brokers).toEqual(['localhost:9092']);
    expect(connection.registry.url).toBe('http://127.0.0.1:8081');
    expect(connection.topic).toBe('other');
  });

  it('names the flag and the variable of each missing setting', () => {
    const message = problemsOf(() => connectionFrom({}, 'COMMAND_TOPIC', {}));
    expect(message).toContain('KAFKA_BROKERS (or --brokers):');
    expect(message).toContain('SCHEMA_REGISTRY_URL (or --registry):');
  });

  it('rejects incomplete credentials as the worker does, without echoing a secret', () => {
    const message = problemsOf(() =>
      connectionFrom({}, 'COMMAND_TOPIC', {
        ...base,
        KAFKA_SASL_MECHANISM: 'plain',
        KAFKA_SASL_PASSWORD: 'kafka-secret',
        SCHEMA_REGISTRY_PASSWORD: 'reg-secret',
      }),
    );
    expect(message).toContain('KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD: both are required when KAFKA_SASL_MECHANISM is plain');
    expect(message).toContain('SCHEMA_REGISTRY_USERNAME and SCHEMA_REGISTRY_PASSWORD: give both or neither');
    expect(message).not.toContain('kafka-secret');
    expect(message).not.toContain('reg-secret');
  });

  it('reports an unreadable CA file by variable and path', () => {
    const missing = join(dir, 'nope.pem');
    expect(problemsOf(() => connectionFrom({}, 'COMMAND_TOPIC', { ...base, KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: missing }))).toContain(
      `KAFKA_SSL_CA_FILE: cannot read ${missing} (ENOENT)`,
    );
  });
});

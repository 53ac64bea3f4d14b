import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeConfig, loadConfig, unknownSettings } from '../../src/config/index.ts';
import { BULK_MARK_LINGER_MS } from '../../src/config/schema.ts';
import { DEFAULT_VALIDATION_POLICY, KNOWN_REGIONS, MAX_GEO_REGIONS } from '../../src/contracts/index.ts';
import { DEFAULT_VELOCITY_SETTINGS, velocityEnabled } from '../../src/worker/guard/velocity.ts';
import { ConfigError } from '../../src/errors.ts';

const minimal = {
  KAFKA_BROKERS: 'localhost:9092',
  SCHEMA_REGISTRY_URL: 'http://localhost:8081',
  PROVIDER_BASE_URL: 'https://uni.example.test',
  PROVIDER_ACCESS_KEY_ID: 'AKID-SECRET-VALUE',
};

function problemsOf(env: NodeJS.ProcessEnv): readonly string[] {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig(minimal);
    expect(config.topics).toEqual({
      commands: 'sms.commands',
      results: 'sms.results',
      deadLetter: 'sms.commands.dlq',
      ledger: 'sms.commands.ledger',
      create: false,
      partitions: 12,
      replicationFactor: 3,
    });
    expect(config.maxInFlight).toBe(64);
    expect(config.ledger).toEqual({ enabled: true, inDoubt: 'report', maxRunAhead: 128, dedupWindow: 2000 });
    expect(config.validation).toEqual(DEFAULT_VALIDATION_POLICY);
    expect(config.maxCommandBytes).toBe(1_000_000);
    expect(config.provider.retry).toEqual({ maxAttempts: 4, budgetMs: 30_000, baseDelayMs: 250, maxDelayMs: 5_000, retryAmbiguous: false });
    expect(config.funds.policy).toBe('pause');
    expect(config.kafka.ssl).toBe(false);
    expect(config.kafka.sasl).toBeUndefined();
    expect(config.httpPort).toBe(9464);
    expect(config.heapGrowingPercent).toBe(0);
  });

  it('reads HEAP_GROWING_PERCENT within 0–900', () => {
    expect(loadConfig({ ...minimal, HEAP_GROWING_PERCENT: '300' }).heapGrowingPercent).toBe(300);
    expect(problemsOf({ ...minimal, HEAP_GROWING_PERCENT: '901' }).join('\n')).toContain('HEAP_GROWING_PERCENT');
    expect(problemsOf({ ...minimal, HEAP_GROWING_PERCENT: '-1' }).join('\n')).toContain('HEAP_GROWING_PERCENT');
  });

  it('reads every command limit into the validation policy', () => {
    const config = loadConfig({
      ...minimal,
      MAX_RECIPIENTS: '10',
      MAX_CONTENT_CHARS: '11',
      MAX_CONTENT_SEGMENTS: '2',
      MAX_TEMPLATE_ID_CHARS: '12',
      MAX_TEMPLATE_VARIABLES: '3',
      MAX_TEMPLATE_KEY_CHARS: '13',
      MAX_TEMPLATE_VALUE_CHARS: '14',
      MAX_METADATA_ENTRIES: '4',
      MAX_METADATA_BYTES: '15',
      MAX_COMMAND_BYTES: '2048',
    });
    expect(config.validation).toEqual({
      homeRegion: 'CN',
      partialRecipients: 'reject',
      maxRecipients: 10,
      maxContentChars: 11,
      maxContentSegments: 2,
      maxTemplateIdChars: 12,
      maxTemplateVariables: 3,
      maxTemplateKeyChars: 13,
      maxTemplateValueChars: 14,
      maxMetadataEntries: 4,
      maxMetadataBytes: 15,
      geo: { mode: 'enforce', all: {}, text: {}, voice: {} },
    });
    expect(config.maxCommandBytes).toBe(2048);
  });

  it('refuses metadata limits above the hard caps results echo within', () => {
    const problems = problemsOf({ ...minimal, MAX_METADATA_ENTRIES: '257', MAX_METADATA_BYTES: '65537', MAX_CONTENT_SEGMENTS: '256' }).join('\n');
    expect(problems).toMatch(/MAX_METADATA_ENTRIES/);
    expect(problems).toMatch(/MAX_METADATA_BYTES/);
    expect(problems).toMatch(/MAX_CONTENT_SEGMENTS/);
  });

  it('lists every problem at once, naming each variable', () => {
    const problems = problemsOf({ KAFKA_BROKERS: 'nohostport', MAX_IN_FLIGHT: '0', PARTIAL_RECIPIENTS: 'some', HOME_REGION: 'china' });
    const text = problems.join('\n');
    for (const variable of [
      'KAFKA_BROKERS',
      'SCHEMA_REGISTRY_URL',
      'PROVIDER_BASE_URL',
      'PROVIDER_ACCESS_KEY_ID',
      'MAX_IN_FLIGHT',
      'PARTIAL_RECIPIENTS',
      'HOME_REGION',
    ]) {
      expect(text).toContain(variable);
    }
    expect(problems.length).toBeGreaterThanOrEqual(7);
  });

  it('checks rules across variables', () => {
    const problems = problemsOf({
      ...minimal,
      KAFKA_SASL_MECHANISM: 'scram-sha-512',
      RESULT_TOPIC: 'sms.commands',
      PROVIDER_RETRY_BASE_MS: '1000',
      PROVIDER_RETRY_MAX_DELAY_MS: '10',
    });
    expect(problems.join('\n')).toMatch(/KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD/);
    expect(problems.join('\n')).toMatch(/four different topics/);
    expect(problems.join('\n')).toMatch(/PROVIDER_RETRY_MAX_DELAY_MS/);
  });

  it('parses booleans and SASL settings', () => {
    const config = loadConfig({
      ...minimal,
      KAFKA_SSL: 'true',
      KAFKA_SASL_MECHANISM: 'plain',
      KAFKA_SASL_USERNAME: 'svc',
      KAFKA_SASL_PASSWORD: 'pw-123',
      PROVIDER_RETRY_AMBIGUOUS: '1',
    });
    expect(config.kafka.ssl).toEqual({ rejectUnauthorized: true });
    expect(config.kafka.sasl).toEqual({ mechanism: 'plain', username: 'svc', password: 'pw-123' });
    expect(config.provider.retry.retryAmbiguous).toBe(true);
  });

  it('never echoes a secret, neither in errors nor in the loggable description', () => {
    const bad = problemsOf({
      ...minimal,
      KAFKA_BROKERS: '',
      PROVIDER_ACCESS_KEY_SECRET: 'SECRET-XYZ',
      KAFKA_SASL_MECHANISM: 'plain',
      KAFKA_SASL_PASSWORD: 'PW-XYZ',
    });
    expect(bad.join('\n')).not.toMatch(/AKID-SECRET-VALUE|SECRET-XYZ|PW-XYZ/);
    const described = JSON.stringify(
      describeConfig(
        loadConfig({
          ...minimal,
          PROVIDER_ACCESS_KEY_SECRET: 'SECRET-XYZ',
          KAFKA_SASL_MECHANISM: 'plain',
          KAFKA_SASL_USERNAME: 'u',
          KAFKA_SASL_PASSWORD: 'PW-XYZ',
        }),
      ),
    );
    expect(described).not.toMatch(/AKID-SECRET-VALUE|SECRET-XYZ|PW-XYZ/);
    expect(described).toContain('[redacted]');
  });
});

describe('loadConfig: geo permissions (GEO_*)', () => {
  it('default to every region allowed, enforce mode', () => {
    expect(loadConfig(minimal).validation.geo).toEqual({ mode: 'enforce', all: {}, text: {}, voice: {} });
    // Blank is unset: the chart renders nothing, an operator may leave a variable empty.
    expect(loadConfig({ ...minimal, GEO_ALLOWED_REGIONS: ' ', GEO_TEXT_DENIED_REGIONS: '' }).validation.geo).toEqual({
      mode: 'enforce',
      all: {},
      text: {},
      voice: {},
    });
  });

  it('reads every list into the policy: trimmed, upper-cased, de-duplicated and sorted; 001 is the non-geographic region', () => {
    const config = loadConfig({
      ...minimal,
      GEO_MODE: 'monitor',
      GEO_ALLOWED_REGIONS: 'cn, hk,US,CN,001',
      GEO_DENIED_REGIONS: 'NG',
      GEO_TEXT_ALLOWED_REGIONS: 'HK,CN',
      GEO_TEXT_DENIED_REGIONS: 'US',
      GEO_VOICE_ALLOWED_REGIONS: 'CN',
      GEO_VOICE_DENIED_REGIONS: '001',
    });
    expect(config.validation.geo).toEqual({
      mode: 'monitor',
      all: { allowed: ['001', 'CN', 'HK', 'US'], denied: ['NG'] },
      text: { allowed: ['CN', 'HK'], denied: ['US'] },
      voice: { allowed: ['CN'], denied: ['001'] },
    });
  });

  it('lists every problem at once: unknown codes (named), too many codes, an unknown mode', () => {
    const problems = problemsOf({
      ...minimal,
      GEO_MODE: 'log',
      GEO_ALLOWED_REGIONS: 'CN,ZZ,china,UK',
      GEO_TEXT_DENIED_REGIONS: Array.from({ length: 251 }, () => 'US').join(','),
      GEO_VOICE_DENIED_REGIONS: 'EU',
    });
    expect(problems).toHaveLength(4);
    const text = problems.join('\n');
    expect(text).toMatch(/^GEO_MODE: /m);
    expect(text).toMatch(/^GEO_ALLOWED_REGIONS: unknown region codes ZZ, CHINA, UK: expected a comma-separated list of ISO 3166-1 alpha-2 codes/m);
    expect(text).toMatch(/^GEO_TEXT_DENIED_REGIONS: at most 250 region codes are allowed; got 251$/m);
    expect(text).toMatch(/^GEO_VOICE_DENIED_REGIONS: unknown region code EU: /m);
  });

  it('accepts every region a parsed number can have, and at most 250 codes', () => {
    const every = [...KNOWN_REGIONS].join(',');
    expect(KNOWN_REGIONS.size).toBeLessThanOrEqual(MAX_GEO_REGIONS);
    expect(loadConfig({ ...minimal, GEO_DENIED_REGIONS: every }).validation.geo.all.denied).toHaveLength(KNOWN_REGIONS.size);
  });

  it('refuses lists that contradict each other', () => {
    const problems = problemsOf({
      ...minimal,
      GEO_ALLOWED_REGIONS: 'CN,US,GB',
      GEO_DENIED_REGIONS: 'GB',
      GEO_TEXT_ALLOWED_REGIONS: 'CN,SG',
      GEO_TEXT_DENIED_REGIONS: 'CN',
    });
    expect(problems).toEqual([
      'GEO_ALLOWED_REGIONS, GEO_DENIED_REGIONS: GB is both allowed and denied',
      'GEO_TEXT_ALLOWED_REGIONS, GEO_TEXT_DENIED_REGIONS: CN is both allowed and denied',
      'GEO_TEXT_ALLOWED_REGIONS: SG is not in GEO_ALLOWED_REGIONS, which applies to every operation, so it would be refused anyway',
    ]);
  });

  it('refuses a voice allow-list without HOME_REGION (voice codes go there only) and says how to stop voice codes', () => {
    expect(problemsOf({ ...minimal, GEO_VOICE_ALLOWED_REGIONS: 'US' })).toEqual([
      'GEO_VOICE_ALLOWED_REGIONS: voice codes are only sent to HOME_REGION (CN), which this list leaves out, so every voice code would be refused; to stop voice codes, put CN in GEO_VOICE_DENIED_REGIONS instead',
    ]);
    expect(loadConfig({ ...minimal, HOME_REGION: 'US', GEO_VOICE_ALLOWED_REGIONS: 'US' }).validation.geo.voice).toEqual({ allowed: ['US'] });
    expect(loadConfig({ ...minimal, GEO_VOICE_DENIED_REGIONS: 'CN' }).validation.geo.voice).toEqual({ denied: ['CN'] });
  });
});

describe('loadConfig: velocity limits and spend caps (VELOCITY_*, SPEND_CAP_*)', () => {
  it('default to off: no limit, no cap (as before)', () => {
    const { guard } = loadConfig(minimal);
    expect(guard.velocity).toEqual(DEFAULT_VELOCITY_SETTINGS);
    expect(velocityEnabled(guard.velocity)).toBe(false);
    expect(guard.spend).toEqual({ caps: { hour: undefined, day: undefined }, hourMs: 3_600_000 });
  });

  it('reads every setting; caps stay decimal strings', () => {
    const { guard } = loadConfig({
      ...minimal,
      VELOCITY_MODE: 'monitor',
      VELOCITY_PREFIX_DIGITS: '4',
      VELOCITY_PREFIX_PER_MINUTE: '20',
      VELOCITY_PREFIX_PER_DAY: '500',
      VELOCITY_REGION_PER_MINUTE: '200',
      VELOCITY_REGION_PER_DAY: '10000',
      VELOCITY_DYNAMIC_MULTIPLE: '2',
      VELOCITY_BLOCK_MS: '3600000',
      VELOCITY_MAX_TRACKED_KEYS: '5000',
      VELOCITY_HOLD_MAX_MS: '20000',
      SPEND_CAP_PER_HOUR: ' 12.5 ',
      SPEND_CAP_PER_DAY: '100',
      SPEND_CAP_HOUR_MS: '60000',
    });
    expect(guard.velocity).toEqual({
      mode: 'monitor',
      prefixDigits: 4,
      limits: { prefix: { minute: 20, day: 500 }, region: { minute: 200, day: 10_000 } },
      dynamicMultiple: 2,
      blockMs: 3_600_000,
      maxTrackedKeys: 5_000,
      holdMaxMs: 20_000,
    });
    expect(guard.spend).toEqual({ caps: { hour: '12.5', day: '100' }, hourMs: 60_000 });
  });

  it('lists every problem at once: bounds, amounts that are not positive decimals, contradictions', () => {
    const text = problemsOf({
      ...minimal,
      VELOCITY_PREFIX_DIGITS: '9',
      VELOCITY_BLOCK_MS: '999',
      VELOCITY_MAX_TRACKED_KEYS: '1000000',
      VELOCITY_DYNAMIC_MULTIPLE: '2',
      SPEND_CAP_PER_HOUR: '1e3',
      SPEND_CAP_PER_DAY: '-5',
    }).join('\n');
    expect(text).toMatch(/^VELOCITY_PREFIX_DIGITS: /m);
    expect(text).toMatch(/^VELOCITY_BLOCK_MS: /m);
    expect(text).toMatch(/^VELOCITY_MAX_TRACKED_KEYS: /m);
    expect(text).toMatch(/^SPEND_CAP_PER_HOUR: must be a positive decimal amount/m);
    expect(text).toMatch(/^SPEND_CAP_PER_DAY: must be a positive decimal amount/m);
    expect(problemsOf({ ...minimal, VELOCITY_DYNAMIC_MULTIPLE: '2' }).join('\n')).toMatch(/^VELOCITY_DYNAMIC_MULTIPLE: .*no VELOCITY_\*_PER_\* limit is set/m);
    expect(problemsOf({ ...minimal, VELOCITY_REGION_PER_DAY: '5', VELOCITY_DYNAMIC_MULTIPLE: '0.5' }).join('\n')).toMatch(
      /^VELOCITY_DYNAMIC_MULTIPLE: must be 0/m,
    );
    expect(problemsOf({ ...minimal, SPEND_CAP_PER_HOUR: '10', SPEND_CAP_PER_DAY: '9.999999' }).join('\n')).toMatch(
      /^SPEND_CAP_PER_DAY: is below SPEND_CAP_PER_HOUR/m,
    );
    expect(problemsOf({ ...minimal, SPEND_CAP_PER_HOUR: '0' }).join('\n')).toMatch(/^SPEND_CAP_PER_HOUR: /m);
  });
});

describe('loadConfig: the priority topic', () => {
  it('has one normal source without PRIORITY_COMMAND_TOPIC', () => {
    const config = loadConfig(minimal);
    expect(config.sources).toEqual([
      { priority: 'normal', topic: 'sms.commands', consumerGroup: 'sms-worker', ledgerTopic: 'sms.commands.ledger', markLingerMs: 0 },
    ]);
    expect(config.normalMinShare).toBe(0.1);
  });

  it('adds the priority topic first, in its own group (CONSUMER_GROUP-priority unless named) with its own ledger', () => {
    const config = loadConfig({ ...minimal, PRIORITY_COMMAND_TOPIC: 'sms.codes', CONSUMER_GROUP: 'acme', PRIORITY_NORMAL_MIN_SHARE: '0.25' });
    expect(config.sources).toEqual([
      { priority: 'high', topic: 'sms.codes', consumerGroup: 'acme-priority', ledgerTopic: 'sms.codes.ledger', markLingerMs: 0 },
      { priority: 'normal', topic: 'sms.commands', consumerGroup: 'acme', ledgerTopic: 'sms.commands.ledger', markLingerMs: BULK_MARK_LINGER_MS },
    ]);
    expect(loadConfig({ ...minimal, PRIORITY_COMMAND_TOPIC: 'sms.codes', PRIORITY_LEDGER_TOPIC: 'codes.ledger' }).sources[0]?.ledgerTopic).toBe('codes.ledger');
    expect(config.normalMinShare).toBe(0.25);
    expect(loadConfig({ ...minimal, PRIORITY_COMMAND_TOPIC: 'sms.codes', PRIORITY_CONSUMER_GROUP: 'codes' }).sources[0]?.consumerGroup).toBe('codes');
    // Empty is unset (a chart value left blank).
    expect(loadConfig({ ...minimal, PRIORITY_COMMAND_TOPIC: '' }).sources).toHaveLength(1);
  });

  it('lingers the bulk topic’s marks by default only beside a priority topic; MARK_LINGER_MS sets the command topic’s, never the codes’', () => {
    expect(BULK_MARK_LINGER_MS).toBeGreaterThan(0);
    const lingers = (env: Record<string, string>): number[] => loadConfig({ ...minimal, ...env }).sources.map((s) => s.markLingerMs);
    expect(lingers({ MARK_LINGER_MS: '30' })).toEqual([30]);
    expect(lingers({ MARK_LINGER_MS: '' })).toEqual([0]);
    expect(lingers({ PRIORITY_COMMAND_TOPIC: 'sms.codes', MARK_LINGER_MS: '0' })).toEqual([0, 0]);
    expect(lingers({ PRIORITY_COMMAND_TOPIC: 'sms.codes', MARK_LINGER_MS: '250', COMMIT_INTERVAL_MS: '500' })).toEqual([0, 250]);
    // Never longer than COMMIT_INTERVAL_MS (a mark would wait longer than a result).
    expect(lingers({ PRIORITY_COMMAND_TOPIC: 'sms.codes', COMMIT_INTERVAL_MS: '40' })).toEqual([0, 40]);
    expect(problemsOf({ ...minimal, MARK_LINGER_MS: '1001' }).join('\n')).toMatch(/^MARK_LINGER_MS: /);
    expect(problemsOf({ ...minimal, MARK_LINGER_MS: 'soon' }).join('\n')).toMatch(/^MARK_LINGER_MS: /);
  });

  it('lists every problem: a clashing topic, a shared group, a share out of range, a group without a topic', () => {
    expect(problemsOf({ ...minimal, PRIORITY_COMMAND_TOPIC: 'sms.results', PRIORITY_CONSUMER_GROUP: 'sms-worker' })).toEqual([
      'PRIORITY_COMMAND_TOPIC: must differ from COMMAND_TOPIC, RESULT_TOPIC, DEAD_LETTER_TOPIC and LEDGER_TOPIC',
      'PRIORITY_CONSUMER_GROUP: must differ from CONSUMER_GROUP (one group per command topic)',
    ]);
    expect(problemsOf({ ...minimal, PRIORITY_CONSUMER_GROUP: 'codes', PRIORITY_LEDGER_TOPIC: 'codes.ledger' })).toEqual([
      'PRIORITY_CONSUMER_GROUP: set without PRIORITY_COMMAND_TOPIC',
      'PRIORITY_LEDGER_TOPIC: set without PRIORITY_COMMAND_TOPIC',
    ]);
    // One ledger per command topic: sharing LEDGER_TOPIC would make each topic's claims wait on the other's open transactions.
    expect(problemsOf({ ...minimal, PRIORITY_COMMAND_TOPIC: 'sms.codes', PRIORITY_LEDGER_TOPIC: 'sms.commands.ledger' })).toEqual([
      'PRIORITY_LEDGER_TOPIC: must differ from every other topic (each command topic has a ledger of its own)',
    ]);
    expect(problemsOf({ ...minimal, PRIORITY_NORMAL_MIN_SHARE: '0.6' }).join('\n')).toMatch(/^PRIORITY_NORMAL_MIN_SHARE: /);
    expect(problemsOf({ ...minimal, PRIORITY_COMMAND_TOPIC: 'bad topic!' }).join('\n')).toMatch(/^PRIORITY_COMMAND_TOPIC: a Kafka topic name/);
  });
});

describe('settings in the ecosystem’s spelling', () => {
  it('takes a SASL mechanism in Kafka’s spelling or kafkajs’s, any case', () => {
    for (const [given, mechanism] of [
      ['SCRAM-SHA-512', 'scram-sha-512'],
      ['Scram-Sha-256', 'scram-sha-256'],
      ['PLAIN', 'plain'],
      ['plain', 'plain'],
    ] as const) {
      const config = loadConfig({ ...minimal, KAFKA_SASL_MECHANISM: given, KAFKA_SASL_USERNAME: 'svc', KAFKA_SASL_PASSWORD: 'pw' });
      expect(config.kafka.sasl?.mechanism, given).toBe(mechanism);
    }
    expect(loadConfig({ ...minimal, KAFKA_SASL_MECHANISM: 'NONE' }).kafka.sasl).toBeUndefined();
    expect(problemsOf({ ...minimal, KAFKA_SASL_MECHANISM: 'GSSAPI' }).join('\n')).toMatch(
      /KAFKA_SASL_MECHANISM: must be PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or none/,
    );
  });

  it('takes IPv6 broker addresses in brackets beside names and IPv4 addresses, and refuses an unbracketed one or a port out of range', () => {
    const config = loadConfig({ ...minimal, KAFKA_BROKERS: '[::1]:9092, [2001:db8::7]:9093,broker-1.example:9094,10.0.0.5:9092' });
    expect(config.kafka.brokers).toEqual(['[::1]:9092', '[2001:db8::7]:9093', 'broker-1.example:9094', '10.0.0.5:9092']);
    for (const bad of ['::1:9092', '[::1]', '[not-an-address]:9092', 'broker:0', 'broker:70000']) {
      expect(problemsOf({ ...minimal, KAFKA_BROKERS: bad }).join('\n'), bad).toMatch(/KAFKA_BROKERS: must be a comma-separated list of host:port/);
    }
  });
});

describe('secrets from files (<NAME>_FILE)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sms-worker-secrets-'));
  const file = (name: string, content: string): string => {
    const path = join(dir, name);
    writeFileSync(path, content);
    return path;
  };

  it('reads every secret from its file, one trailing line break dropped, as the chart mounts them', () => {
    const env: NodeJS.ProcessEnv = {
      KAFKA_BROKERS: 'localhost:9092',
      SCHEMA_REGISTRY_URL: 'http://localhost:8081',
      PROVIDER_BASE_URL: 'https://uni.example.test',
      PROVIDER_ACCESS_KEY_ID_FILE: file('id', 'AKID-FROM-FILE\n'),
      PROVIDER_ACCESS_KEY_SECRET_FILE: file('secret', 'SECRET-FROM-FILE\r\n'),
      KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
      KAFKA_SASL_USERNAME: 'svc',
      KAFKA_SASL_PASSWORD_FILE: file('sasl', 'SASL-FROM-FILE'),
      SCHEMA_REGISTRY_USERNAME: 'reg',
      SCHEMA_REGISTRY_PASSWORD_FILE: file('registry', 'REGISTRY-FROM-FILE\n'),
    };
    const config = loadConfig(env);
    expect(config.provider.accessKeyId).toBe('AKID-FROM-FILE');
    expect(config.provider.accessKeySecret).toBe('SECRET-FROM-FILE');
    expect(config.kafka.sasl?.password).toBe('SASL-FROM-FILE');
    expect(config.registry.auth?.password).toBe('REGISTRY-FROM-FILE');
  });

  it('lists a file that cannot be read, an empty one, and a secret given both ways, naming the variable and path, never the value', () => {
    const problems = problemsOf({
      ...minimal,
      PROVIDER_ACCESS_KEY_ID_FILE: file('both', 'AKID-OTHER'),
      PROVIDER_ACCESS_KEY_SECRET_FILE: join(dir, 'missing'),
      KAFKA_SASL_PASSWORD_FILE: file('empty', '\n'),
    });
    const text = problems.join('\n');
    expect(text).toContain('PROVIDER_ACCESS_KEY_ID and PROVIDER_ACCESS_KEY_ID_FILE: give one, not both');
    expect(text).toContain(`PROVIDER_ACCESS_KEY_SECRET_FILE: cannot read ${join(dir, 'missing')} (ENOENT)`);
    expect(text).toContain(`KAFKA_SASL_PASSWORD_FILE: ${join(dir, 'empty')} is empty`);
    expect(text).not.toMatch(/AKID-SECRET-VALUE|AKID-OTHER/);
  });
});

describe('unknown settings', () => {
  it('names a variable in our prefix and a misspelt setting with the one it is closest to, and leaves everything else alone', () => {
    const found = unknownSettings({
      ...minimal,
      MAX_INFLIGHT: '32',
      kafka_brokers: 'x:1',
      SMS_WORKER_LEDGER: 'on',
      FUNDS_PAUSE_MAX_MS: '0',
      PROVIDER_ACCESS_KEY_ID_FILE: '/run/secrets/id',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      HOME: '/root',
      KUBERNETES_SERVICE_HOST: '10.0.0.1',
      NODE_OPTIONS: '--max-old-space-size=460',
    });
    expect(found).toEqual([
      { name: 'MAX_INFLIGHT', didYouMean: 'MAX_IN_FLIGHT' },
      { name: 'SMS_WORKER_LEDGER' },
      { name: 'kafka_brokers', didYouMean: 'KAFKA_BROKERS' },
    ]);
  });
});

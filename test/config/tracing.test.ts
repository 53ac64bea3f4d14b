import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.ts';
import { loggableEndpoint, tracingSettings, type TracingEnv } from '../../src/config/tracing.ts';
import { ConfigError } from '../../src/errors.ts';

function settings(env: TracingEnv): { settings: ReturnType<typeof tracingSettings>; problems: string[] } {
  const problems: string[] = [];
  return { settings: tracingSettings(env, problems), problems };
}

describe('tracing settings from the OTEL_* variables', () => {
  it('is off without an OTLP endpoint, and says why', () => {
    expect(settings({})).toEqual({ settings: { enabled: false, why: 'no OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' }, problems: [] });
  });

  it('is on with either endpoint variable; the traces one wins; the sampler defaults to parentbased_always_on', () => {
    expect(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).settings).toEqual({
      enabled: true,
      endpoint: 'http://collector:4318/',
      sampler: 'parentbased_always_on',
    });
    expect(
      settings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://b/v1/traces', OTEL_TRACES_SAMPLER: 'traceidratio' })
        .settings,
    ).toEqual({ enabled: true, endpoint: 'https://b/v1/traces', sampler: 'traceidratio' });
  });

  it('OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none turn it off even with an endpoint', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    expect(settings({ ...endpoint, OTEL_SDK_DISABLED: 'TRUE' }).settings).toEqual({ enabled: false, why: 'OTEL_SDK_DISABLED=true' });
    expect(settings({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' }).settings).toEqual({ enabled: false, why: 'OTEL_TRACES_EXPORTER=none' });
  });

  it('lists every value it cannot honour, naming the variable', () => {
    const { settings: s, problems } = settings({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4317',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_TRACES_EXPORTER: 'zipkin',
      OTEL_TRACES_SAMPLER: 'sometimes',
    });
    expect(s.enabled).toBe(false);
    expect(problems.map((p) => p.split(':')[0])).toEqual([
      'OTEL_TRACES_EXPORTER',
      'OTEL_EXPORTER_OTLP_PROTOCOL',
      'OTEL_TRACES_SAMPLER',
      'OTEL_EXPORTER_OTLP_ENDPOINT',
    ]);
  });

  it('checks the ratio only for ratio samplers, from 0 to 1', () => {
    const base = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    expect(settings({ ...base, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' }).problems).toEqual([]);
    expect(settings({ ...base, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '1.5' }).problems).toHaveLength(1);
    expect(settings({ ...base, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: 'half' }).problems).toHaveLength(1);
    expect(settings({ ...base, OTEL_TRACES_SAMPLER: 'always_on', OTEL_TRACES_SAMPLER_ARG: 'ignored' }).problems).toEqual([]);
  });

  it('never echoes an endpoint, which may carry credentials', () => {
    const { problems } = settings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'ftp://user:s3cret@host/' });
    expect(problems).toEqual(['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: must be an http(s) URL']);
    expect(loggableEndpoint('https://user:s3cret@collector:4318/v1/traces?token=s3cret')).toBe('https://collector:4318/v1/traces');
  });

  it("are part of the worker's configuration: problems are listed with the others, exit 2", () => {
    const env = {
      KAFKA_BROKERS: 'k:9092',
      SCHEMA_REGISTRY_URL: 'http://r',
      PROVIDER_BASE_URL: 'http://p',
      PROVIDER_ACCESS_KEY_ID: 'id',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
    };
    expect(loadConfig(env).tracing).toEqual({ enabled: true, endpoint: 'http://c:4318/', sampler: 'parentbased_always_on' });
    let error: unknown;
    try {
      loadConfig({ ...env, MAX_IN_FLIGHT: 'many', OTEL_TRACES_SAMPLER: 'sometimes' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toContain('MAX_IN_FLIGHT');
    expect((error as ConfigError).message).toContain('OTEL_TRACES_SAMPLER');
  });
});

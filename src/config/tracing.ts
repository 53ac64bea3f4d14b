/**
 * Whether traces are exported, decided from the standard OpenTelemetry variables (the SDK and the
 * OTLP exporter read the same variables themselves: sampler, endpoint, headers, timeouts, batch
 * sizes). Pure: the worker's config and the CLI both call it, and it is unit-tested without I/O.
 *
 * Tracing is on only when an OTLP endpoint is given: with none, no SDK is started and the worker
 * pays nothing for it. Values the SDK would silently replace by a default (an unknown sampler, a
 * ratio out of range) or cannot honour (gRPC) are start-up problems instead, listed with the rest.
 */

/** What the SDK reads; everything else of the environment is ignored here. */
export type TracingEnv = Readonly<Record<string, string | undefined>>;

export type TracingSettings =
  | { readonly enabled: false; /** Why not, for the start-up log. */ readonly why: string }
  | {
      readonly enabled: true;
      /** The endpoint without user info or query (safe to log; OTEL_EXPORTER_OTLP_HEADERS is never logged). */
      readonly endpoint: string;
      /** OTEL_TRACES_SAMPLER as the SDK will read it (its default: parentbased_always_on). */
      readonly sampler: string;
    };

export const TRACES_SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

/** The exporter sends JSON over HTTP; collectors take JSON and protobuf on the same OTLP/HTTP path. */
const HTTP_PROTOCOLS = ['http/json', 'http/protobuf'];

function value(env: TracingEnv, name: string): string | undefined {
  const raw = env[name]?.trim();
  return raw === undefined || raw === '' ? undefined : raw;
}

/** The URL as it may be logged: no user info, query or fragment. Undefined if not an http(s) URL. */
export function loggableEndpoint(raw: string): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  return `${url.origin}${url.pathname}`;
}

/** Appends every problem to `problems` (never echoing a value that may hold credentials). */
export function tracingSettings(env: TracingEnv, problems: string[]): TracingSettings {
  const before = problems.length;
  const exporter = value(env, 'OTEL_TRACES_EXPORTER');
  if (exporter !== undefined && exporter !== 'otlp' && exporter !== 'none')
    problems.push(`OTEL_TRACES_EXPORTER: only otlp (OTLP over HTTP) and none are supported; got ${JSON.stringify(exporter.slice(0, 40))}`);
  const protocolVariable =
    value(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = value(env, protocolVariable);
  if (protocol !== undefined && !HTTP_PROTOCOLS.includes(protocol))
    problems.push(`${protocolVariable}: the worker exports OTLP over HTTP (${HTTP_PROTOCOLS.join(' or ')}); got ${JSON.stringify(protocol.slice(0, 40))}`);
  const sampler = value(env, 'OTEL_TRACES_SAMPLER') ?? 'parentbased_always_on';
  if (!(TRACES_SAMPLERS as readonly string[]).includes(sampler))
    problems.push(`OTEL_TRACES_SAMPLER: must be one of ${TRACES_SAMPLERS.join(', ')}; got ${JSON.stringify(sampler.slice(0, 40))}`);
  const ratio = value(env, 'OTEL_TRACES_SAMPLER_ARG');
  if (ratio !== undefined && sampler.endsWith('traceidratio') && !(Number(ratio) >= 0 && Number(ratio) <= 1))
    problems.push(`OTEL_TRACES_SAMPLER_ARG: must be a number from 0 to 1 (the share of traces sampled); got ${JSON.stringify(ratio.slice(0, 40))}`);
  const endpointVariable =
    value(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
  const rawEndpoint = value(env, endpointVariable);
  const endpoint = rawEndpoint === undefined ? undefined : loggableEndpoint(rawEndpoint);
  if (rawEndpoint !== undefined && endpoint === undefined) problems.push(`${endpointVariable}: must be an http(s) URL`);

  if (value(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return { enabled: false, why: 'OTEL_SDK_DISABLED=true' };
  if (exporter === 'none') return { enabled: false, why: 'OTEL_TRACES_EXPORTER=none' };
  if (rawEndpoint === undefined) return { enabled: false, why: 'no OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' };
  if (problems.length > before || endpoint === undefined) return { enabled: false, why: 'invalid tracing settings' };
  return { enabled: true, endpoint, sampler };
}

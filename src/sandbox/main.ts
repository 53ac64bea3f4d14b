/**
 * Command-line entry of the sandbox, for the `sms-worker sandbox` subcommand. Parses flags into
 * SandboxOptions and starts the server; signals and process exit stay with the caller (cli/).
 *
 *   --host 127.0.0.1  --port 8080  --access-key-id ID  --secret SECRET  --balance 1000.000000
 *   --home-region CN  --seed 42  --log-capacity 200000
 *   --latency-ms 20                  fixed latency (with --latency-p99-ms: log-normal, median = --latency-ms)
 *   --latency-p99-ms 200
 *   --rate-500 0.01 --rate-502 0 --rate-503 0.01 --rate-429 0.01 --rate-reset 0.001 --rate-hang 0.001
 *   --rate-reset-after 0 --rate-hang-after 0 --rate-malformed 0 --retry-after-sec 1 --down
 *   --callback-url URL --report-delay-ms 200 --report-fail-rate 0.1   delivery reports (delivery-reports.ts)
 *   --text-route AU=au.backup:0.090000 --text-route CN=none   this account's own text routes (another
 *                                    account of the service; `none`: no upstream, 101301), repeatable
 */
import { parseArgs } from 'node:util';
import type { CountryCode } from 'libphonenumber-js';
import { ConfigError } from '../errors.ts';
import type { FaultKind, FaultSettings, LatencySpec } from './faults.ts';
import { DEFAULT_FAULTS } from './faults.ts';
import { startSandbox } from './server.ts';
import type { RunningSandbox, SandboxOptions } from './server.ts';
import type { TextRouteOverrides } from './pricing.ts';

const RATE_FLAGS: Readonly<Record<string, FaultKind>> = {
  'rate-500': 'http500',
  'rate-502': 'http502',
  'rate-503': 'http503',
  'rate-429': 'http429',
  'rate-reset': 'reset',
  'rate-hang': 'hang',
  'rate-reset-after': 'reset-after',
  'rate-hang-after': 'hang-after',
  'rate-malformed': 'malformed',
};

const stringFlags = [
  'host',
  'port',
  'access-key-id',
  'secret',
  'balance',
  'home-region',
  'seed',
  'log-capacity',
  'latency-ms',
  'latency-p99-ms',
  'retry-after-sec',
  'callback-url',
  'report-delay-ms',
  'report-fail-rate',
  ...Object.keys(RATE_FLAGS),
];

/** Pure: argv (without node and script) → options, or a ConfigError listing every problem. */
export function parseSandboxArgs(argv: readonly string[]): SandboxOptions {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      ...Object.fromEntries(stringFlags.map((name) => [name, { type: 'string' as const }])),
      down: { type: 'boolean' },
      'text-route': { type: 'string', multiple: true },
    },
  });
  const problems: string[] = [];
  const flags: Readonly<Record<string, unknown>> = values;
  const str = (name: string): string | undefined => {
    const value = flags[name];
    return typeof value === 'string' ? value : undefined;
  };
  const num = (name: string, check: (n: number) => boolean, rule: string): number | undefined => {
    const raw = str(name);
    if (raw === undefined) return undefined;
    const value = Number(raw);
    if (raw.trim() === '' || !Number.isFinite(value) || !check(value)) {
      problems.push(`--${name} must be ${rule} (got ${raw})`);
      return undefined;
    }
    return value;
  };

  const port = num('port', (n) => Number.isInteger(n) && n >= 0 && n <= 65535, 'a port number');
  const seed = num('seed', Number.isInteger, 'an integer');
  const logCapacity = num('log-capacity', (n) => Number.isInteger(n) && n > 0, 'a positive integer');
  const latencyMs = num('latency-ms', (n) => n >= 0, 'a number ≥ 0');
  const p99Ms = num('latency-p99-ms', (n) => n > 0, 'a number > 0');
  const retryAfterSec = num('retry-after-sec', (n) => Number.isInteger(n) && n >= 0, 'an integer ≥ 0');
  const rates: Partial<Record<FaultKind, number>> = {};
  for (const [flag, kind] of Object.entries(RATE_FLAGS)) {
    const rate = num(flag, (n) => n >= 0 && n <= 1, 'a probability between 0 and 1');
    if (rate !== undefined) rates[kind] = rate;
  }
  let latency: LatencySpec = DEFAULT_FAULTS.latency;
  if (p99Ms !== undefined) {
    if (latencyMs === undefined || latencyMs <= 0 || p99Ms < latencyMs) {
      problems.push('--latency-p99-ms needs --latency-ms (the median) > 0 and ≤ the p99');
    } else {
      latency = { kind: 'lognormal', medianMs: latencyMs, p99Ms };
    }
  } else if (latencyMs !== undefined && latencyMs > 0) {
    latency = { kind: 'fixed', ms: latencyMs };
  }
  const reportDelayMs = num('report-delay-ms', (n) => Number.isInteger(n) && n >= 0 && n <= 3_600_000, 'an integer from 0 to 3600000');
  const reportFailRate = num('report-fail-rate', (n) => n >= 0 && n <= 1, 'a probability between 0 and 1');
  const callbackUrl = str('callback-url');
  if (callbackUrl !== undefined && !/^https?:\/\/[^\s]+$/.test(callbackUrl)) problems.push('--callback-url must be an http(s) URL');
  const homeRegion = str('home-region');
  if (homeRegion !== undefined && !/^[A-Z]{2}$/.test(homeRegion)) problems.push('--home-region must be a region code such as CN');
  const textRoutes = parseTextRoutes(values['text-route'] ?? [], problems);
  if (problems.length > 0) throw new ConfigError(problems.map((p) => `sandbox: ${p}`));

  const faults: FaultSettings = {
    latency,
    rates,
    down: values.down === true,
    retryAfterSec: retryAfterSec ?? DEFAULT_FAULTS.retryAfterSec,
  };
  const host = str('host');
  const accessKeyId = str('access-key-id');
  const accessKeySecret = str('secret');
  const balance = str('balance');
  return {
    faults,
    ...(host === undefined ? {} : { host }),
    ...(port === undefined ? {} : { port }),
    ...(accessKeyId === undefined ? {} : { accessKeyId }),
    ...(accessKeySecret === undefined ? {} : { accessKeySecret }),
    ...(balance === undefined ? {} : { balance }),
    ...(homeRegion === undefined ? {} : { homeRegion: homeRegion as CountryCode }),
    ...(seed === undefined ? {} : { seed }),
    ...(logCapacity === undefined ? {} : { logCapacity }),
    ...(Object.keys(textRoutes).length === 0 ? {} : { textRoutes }),
    ...(callbackUrl === undefined && reportDelayMs === undefined && reportFailRate === undefined
      ? {}
      : {
          deliveryReports: {
            ...(callbackUrl === undefined ? {} : { callbackUrl }),
            ...(reportDelayMs === undefined ? {} : { delayMs: reportDelayMs }),
            ...(reportFailRate === undefined ? {} : { failRate: reportFailRate }),
          },
        }),
  };
}

/** `--text-route REGION=upstream:price` or `REGION=none`, each at most once per region. */
function parseTextRoutes(given: readonly string[], problems: string[]): TextRouteOverrides {
  const routes: Record<string, { upstream: string; price: string } | null> = {};
  for (const text of given) {
    const match = /^([A-Z]{2}|001)=(?:(none)|([\w.-]{1,64}):(\d{1,6}(?:\.\d{1,6})?))$/.exec(text);
    const region = match?.[1];
    if (match === null || region === undefined) {
      problems.push(`--text-route must be REGION=upstream:price or REGION=none, e.g. AU=au.backup:0.090000 (got ${text.slice(0, 80)})`);
      continue;
    }
    if (region in routes) problems.push(`--text-route gives ${region} twice`);
    routes[region] = match[2] === 'none' ? null : { upstream: match[3] as string, price: match[4] as string };
  }
  return routes;
}

/** Starts a sandbox from command-line flags and logs one line (never the secret). */
export async function runSandboxFromArgs(argv: readonly string[], log: (line: string) => void = (line) => console.log(line)): Promise<RunningSandbox> {
  const options = parseSandboxArgs(argv);
  const sandbox = await startSandbox(options);
  const mode = options.accessKeySecret === undefined ? 'simple' : 'hmac';
  const reports = sandbox.state.deliveryReports.settings.callbackUrl === undefined ? 'off' : 'on';
  log(`sandbox listening on ${sandbox.url} (auth ${mode}, balance ${sandbox.state.balance}, delivery reports ${reports}, admin ${sandbox.url}/_sandbox/stats)`);
  return sandbox;
}

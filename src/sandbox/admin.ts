/**
 * The /_sandbox/ admin routes, so a benchmark or chaos run in another process can read and steer
 * the sandbox. Bodies are JSON; answers are JSON. Not subject to auth, faults or latency.
 *
 *   GET  /_sandbox/health                       {"ok":true}
 *   GET  /_sandbox/stats                        SandboxStats
 *   GET  /_sandbox/requests?limit=&since=&correlationId=&action=&bodies=false
 *                                               {"total":n,"entries":[RequestLogView…]} (limit defaults to 1000)
 *   GET  /_sandbox/correlations?min=2           {"counts":{"<correlation id>":n}} accepted sends per id ≥ min
 *   POST /_sandbox/reset                        initial balance and faults, empty log and counters
 *   GET  /_sandbox/balance                      {"balance":"…"}
 *   POST /_sandbox/balance {"balance":"…"}      set the balance
 *   GET  /_sandbox/faults                       {"settings":FaultSettings,"queued":[FaultKind…]}
 *   POST /_sandbox/faults {"latency"?,"rates"?,"down"?,"retryAfterSec"?,"enqueue"?,"clearQueue"?}
 *        merges the given settings; enqueue is [{"kind":FaultKind,"count"?:n}] for the next requests
 *   GET  /_sandbox/answer-faults                {"targets":{"<correlation id>":AnswerFaultKind},"requests":{"<id>":n}}
 *   POST /_sandbox/answer-faults {"set"?:{"<correlation id>":AnswerFaultKind},"remove"?:[id…],"clear"?:true}
 *        hostile answers aimed at single commands (answer-faults.ts); clear, then remove, then set
 *   GET  /_sandbox/delivery-reports             {"settings":DeliveryReportSettings,"stats":DeliveryReportStats}
 *        (callback URLs shown without user info and cut after the first path segment: tokens stay out)
 *   POST /_sandbox/delivery-reports {"callbackUrl"?:url|null,"accounts"?:{"<access key id>":url|null},
 *        "delayMs"?,"failRate"?,"retryBaseMs"?,"retryMaxMs"?,"maxAttempts"?,"maxQueue"?}
 *        where accepted messages' delivery reports go (delivery-reports.ts); null removes a URL
 */
import { z } from 'zod';
import type { ErrorEnvelope } from './error-codes.ts';
import { errorEnvelope, SANDBOX_ERRORS } from './error-codes.ts';
import { ANSWER_FAULT_KINDS } from './answer-faults.ts';
import type { DeliveryReportSettings } from './delivery-reports.ts';
import { FAULT_KINDS } from './faults.ts';
import type { FaultSettings } from './faults.ts';
import type { SandboxState } from './state.ts';

export const ADMIN_PREFIX = '/_sandbox/';

const nonNegative = z.number().finite().nonnegative();

export const latencySchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('none') }),
  z.object({ kind: z.literal('fixed'), ms: nonNegative }),
  z.object({ kind: z.literal('uniform'), minMs: nonNegative, maxMs: nonNegative }).refine((v) => v.maxMs >= v.minMs, {
    message: 'maxMs must be ≥ minMs',
  }),
  z
    .object({ kind: z.literal('lognormal'), medianMs: z.number().positive(), p99Ms: z.number().positive() })
    .refine((v) => v.p99Ms >= v.medianMs, { message: 'p99Ms must be ≥ medianMs' }),
]);

const faultKind = z.enum(FAULT_KINDS);

export const faultUpdateSchema = z.object({
  latency: latencySchema.optional(),
  rates: z.partialRecord(faultKind, z.number().min(0).max(1)).optional(),
  down: z.boolean().optional(),
  retryAfterSec: z.number().int().nonnegative().optional(),
  enqueue: z.array(z.object({ kind: faultKind, count: z.number().int().positive().optional() })).optional(),
  clearQueue: z.boolean().optional(),
});

export type FaultUpdate = z.infer<typeof faultUpdateSchema>;

export const answerFaultUpdateSchema = z.object({
  set: z.record(z.string().min(1), z.enum(ANSWER_FAULT_KINDS)).optional(),
  remove: z.array(z.string()).optional(),
  clear: z.boolean().optional(),
});

export type AnswerFaultUpdate = z.infer<typeof answerFaultUpdateSchema>;

const callbackUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).max(2048);

export const deliveryReportUpdateSchema = z.object({
  callbackUrl: callbackUrl.nullable().optional(),
  accounts: z.record(z.string().min(1).max(256), callbackUrl.nullable()).optional(),
  delayMs: z.number().int().min(0).max(3_600_000).optional(),
  failRate: z.number().min(0).max(1).optional(),
  retryBaseMs: z.number().int().min(1).max(600_000).optional(),
  retryMaxMs: z.number().int().min(1).max(3_600_000).optional(),
  maxAttempts: z.number().int().min(1).max(1_000).optional(),
  maxQueue: z.number().int().min(1).max(1_000_000).optional(),
});

export type DeliveryReportUpdate = z.infer<typeof deliveryReportUpdateSchema>;

/**
 * A callback URL as the admin routes show it: origin and first path segment only, no user info.
 * The rest is where a receiver's secret path token lives, and admin answers end up in bench and
 * chaos logs.
 */
export function redactCallbackUrl(raw: string): string {
  try {
    const url = new URL(raw);
    const [first = '', ...rest] = url.pathname.split('/').filter((part) => part !== '');
    return `${url.protocol}//${url.host}${first === '' ? '' : `/${first}`}${rest.length > 0 || url.search !== '' ? '/[redacted]' : ''}`;
  } catch {
    return '[redacted]';
  }
}

function deliveryReportView(state: SandboxState): { settings: unknown; stats: unknown } {
  const settings = state.deliveryReports.settings;
  return {
    settings: {
      ...settings,
      callbackUrl: settings.callbackUrl === undefined ? null : redactCallbackUrl(settings.callbackUrl),
      accounts: Object.fromEntries(Object.entries(settings.accounts).map(([id, url]) => [id, redactCallbackUrl(url)])),
    },
    stats: state.deliveryReports.stats(),
  };
}

/** Applies a delivery-report update (from HTTP, code or CLI flags): null removes a URL. */
export function applyDeliveryReportUpdate(state: SandboxState, update: DeliveryReportUpdate): void {
  const current = state.deliveryReports.settings;
  const accounts: Record<string, string> = { ...current.accounts };
  for (const [id, url] of Object.entries(update.accounts ?? {})) {
    if (url === null) delete accounts[id];
    else accounts[id] = url;
  }
  const { callbackUrl: url, accounts: _accounts, ...numbers } = update;
  const next: Partial<DeliveryReportSettings> = { ...numbers, accounts };
  state.deliveryReports.update(url === undefined ? next : { ...next, callbackUrl: url ?? undefined });
}

/** Applies a fault update (from HTTP or code) to the state. */
export function applyFaultUpdate(state: SandboxState, update: FaultUpdate): void {
  if (update.clearQueue === true) state.faults.clearQueue();
  const settings: Partial<FaultSettings> = {
    ...(update.latency === undefined ? {} : { latency: update.latency }),
    ...(update.rates === undefined ? {} : { rates: update.rates }),
    ...(update.down === undefined ? {} : { down: update.down }),
    ...(update.retryAfterSec === undefined ? {} : { retryAfterSec: update.retryAfterSec }),
  };
  state.faults.update(settings);
  for (const item of update.enqueue ?? []) state.faults.enqueue(item.kind, item.count ?? 1);
}

export interface AdminAnswer {
  readonly status: number;
  readonly body: unknown;
}

function invalid(detail: string): AdminAnswer {
  const envelope: ErrorEnvelope & { detail: string } = { ...errorEnvelope('invalidAdminRequest'), detail };
  return { status: 400, body: envelope };
}

function optionalInt(value: string | null): number | undefined {
  if (value === null || !/^\d+$/.test(value)) return undefined;
  return Number(value);
}

function parseJson(raw: string): { ok: true; value: unknown } | { ok: false } {
  if (raw.trim() === '') return { ok: true, value: {} };
  try {
    return { ok: true, value: JSON.parse(raw) as unknown };
  } catch {
    return { ok: false };
  }
}

export function handleAdmin(state: SandboxState, method: string, url: URL, rawBody: string): AdminAnswer {
  const route = `${method} ${url.pathname.slice(ADMIN_PREFIX.length).replace(/\/+$/, '')}`;
  const query = url.searchParams;
  const json = parseJson(rawBody);
  if (!json.ok) return invalid('body is not JSON');

  switch (route) {
    case 'GET health':
      return { status: 200, body: { ok: true } };
    case 'GET stats':
      return { status: 200, body: state.stats() };
    case 'GET errors':
      return { status: 200, body: Object.values(SANDBOX_ERRORS) };
    case 'GET requests': {
      const correlationId = query.get('correlationId') ?? undefined;
      const action = query.get('action') ?? undefined;
      const since = optionalInt(query.get('since'));
      const filter = {
        limit: optionalInt(query.get('limit')) ?? 1000,
        ...(since === undefined ? {} : { since }),
        ...(correlationId === undefined ? {} : { correlationId }),
        ...(action === undefined ? {} : { action }),
      };
      // bodies=false: the entries without their bodies (cheap to poll).
      const entries = query.get('bodies') === 'false' ? state.requestSummaries(filter) : state.requests(filter);
      return { status: 200, body: { total: state.stats().requests, entries } };
    }
    case 'GET correlations':
      return { status: 200, body: { counts: state.correlationCounts(optionalInt(query.get('min')) ?? 2) } };
    case 'POST reset':
      state.reset();
      return { status: 200, body: { ok: true, balance: state.balance } };
    case 'GET balance':
      return { status: 200, body: { balance: state.balance } };
    case 'POST balance': {
      const parsed = z.object({ balance: z.string() }).safeParse(json.value);
      if (!parsed.success) return invalid('expected {"balance":"<decimal>"}');
      try {
        state.setBalance(parsed.data.balance);
      } catch {
        return invalid('balance must be a non-negative decimal with at most six decimals');
      }
      return { status: 200, body: { balance: state.balance } };
    }
    case 'GET faults':
      return { status: 200, body: { settings: state.faults.settings, queued: state.faults.queued } };
    case 'POST faults': {
      const parsed = faultUpdateSchema.safeParse(json.value);
      if (!parsed.success) return invalid(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
      applyFaultUpdate(state, parsed.data);
      return { status: 200, body: { settings: state.faults.settings, queued: state.faults.queued } };
    }
    case 'GET answer-faults':
      return { status: 200, body: state.answerFaults.view() };
    case 'POST answer-faults': {
      const parsed = answerFaultUpdateSchema.safeParse(json.value);
      if (!parsed.success) return invalid(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
      if (parsed.data.clear === true) state.answerFaults.clear();
      state.answerFaults.remove(parsed.data.remove ?? []);
      try {
        state.answerFaults.set(parsed.data.set ?? {});
      } catch (error) {
        return invalid(error instanceof Error ? error.message : String(error));
      }
      return { status: 200, body: state.answerFaults.view() };
    }
    case 'GET delivery-reports':
      return { status: 200, body: deliveryReportView(state) };
    case 'POST delivery-reports': {
      const parsed = deliveryReportUpdateSchema.safeParse(json.value);
      if (!parsed.success) return invalid(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
      applyDeliveryReportUpdate(state, parsed.data);
      return { status: 200, body: deliveryReportView(state) };
    }
    default:
      return { status: 404, body: errorEnvelope('notFound') };
  }
}

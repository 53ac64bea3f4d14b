/**
 * A seeded simulation of the send path over several accounts: the shipped FailoverSender and one
 * shipped GuardedSender per account, each with its real ServiceGate, RefusalHolds and breaker;
 * only the service is swapped (SimulatedAccountService: a ProviderClient whose every call draws its
 * outcome from the schedule's seed, and which records what it accepted).
 *
 * Each schedule sends a burst of commands at once through 2 or 3 accounts (random lists, random
 * routes and costs, some with an expiry) while the accounts answer with successes, refusals
 * (101301, 105400, a refused client), unreachable transports, throttles, and answers that may hide
 * a send (a 5xx, a reset after processing, a malformed body). Then it checks, per command:
 * - at-most-one-send: at most one account accepted it, over all accounts;
 * - failed-means-unsent: a FAILED outcome (not ambiguous) was accepted nowhere; SENT was accepted
 *   exactly by the account the outcome names;
 * - no-failover-after-maybe: no account was called after a call that may have reached a service;
 * - declined-only-on-proof: every account the command left accepted nothing of it;
 * - marks: every call ran under a ledger mark naming the account called, and a mark was withdrawn before the next account's.
 *
 * Run: `node tools/simulate/failover.ts [--schedules 2000] [--seed 1] [--parallel 32]`; the tests run a few hundred.
 */
import { parseArgs } from 'node:util';
import type { Routing } from '../../src/accounts/routing.ts';
import type { SendFootprint } from '../../src/contracts/validate.ts';
import { isRetryableClass } from '../../src/provider/classify.ts';
import { ProviderError } from '../../src/provider/provider-error.ts';
import type { FailureClass, MessageReport, ProviderClient, ProviderRequest, ProviderSuccess } from '../../src/provider/types.ts';
import { FailoverSender } from '../../src/worker/send/failover-sender.ts';
import { GuardedSender } from '../../src/worker/send/guarded-sender.ts';
import { RateLimiter } from '../../src/worker/send/rate-limiter.ts';
import { RefusalHolds } from '../../src/worker/send/refusal-holds.ts';
import { DEFAULT_REFUSAL_SCOPE_SETTINGS } from '../../src/worker/send/refusal-scopes.ts';
import type { RoutedOutcome, SendHooks } from '../../src/worker/send/send-outcome.ts';
import { OutageCounter, ServiceGate } from '../../src/worker/send/service-gate.ts';
import { Prng } from './prng.ts';

/** What a simulated call ends as. `reset-after`: processed (accepted), then the answer was lost. */
export type Answer = 'ok' | 'no-route' | 'funds' | 'refused-client' | 'unreachable' | 'throttled' | 'http500' | 'reset-after' | 'malformed' | 'business';

const ANSWER_WEIGHTS: Readonly<Record<Answer, number>> = {
  ok: 50,
  'no-route': 8,
  funds: 8,
  'refused-client': 4,
  unreachable: 6,
  throttled: 4,
  http500: 4,
  'reset-after': 3,
  malformed: 2,
  business: 3,
};

const FAILURE: Readonly<Record<Exclude<Answer, 'ok'>, { failureClass: FailureClass; code: string; answered: boolean }>> = {
  'no-route': { failureClass: 'configuration', code: '101301', answered: true },
  funds: { failureClass: 'insufficient-funds', code: '105400', answered: true },
  'refused-client': { failureClass: 'configuration', code: 'PROVIDER_HTTP_401', answered: true },
  unreachable: { failureClass: 'transport', code: 'PROVIDER_CONNECTION_REFUSED', answered: false },
  throttled: { failureClass: 'throttled', code: 'PROVIDER_HTTP_503', answered: true },
  http500: { failureClass: 'ambiguous', code: 'PROVIDER_HTTP_500', answered: true },
  'reset-after': { failureClass: 'ambiguous', code: 'PROVIDER_CONNECTION_RESET', answered: false },
  malformed: { failureClass: 'malformed', code: 'PROVIDER_MALFORMED_RESPONSE', answered: true },
  business: { failureClass: 'business', code: '102001', answered: true },
};

/** Answers after which the service may have sent the command; of these, which it did send (the simulation decides). */
export const MAY_HAVE_SENT: ReadonlySet<Answer> = new Set(['http500', 'reset-after', 'malformed']);

export interface CallRecord {
  readonly account: string;
  readonly answer: Answer;
  /** The service sent it (charged). */
  readonly accepted: boolean;
  /** The account the ledger mark open when the call started names; undefined: no mark was open. */
  readonly markedFor: string | undefined;
}

/** The service's answer to a one-recipient text send through `account`, as the shipped client returns it. */
export function simulatedSuccess(id: string, account: string): ProviderSuccess {
  const messages: MessageReport[] = [
    { id: `${id}-m`, to: '+8613800138000', regionCode: 'CN', countryCode: '86', messageCount: 1, status: 'sent', upstream: account, price: '0.045000' },
  ];
  return {
    result: { recipients: 1, messageCount: 1, totalAmount: '0.045000', payAmount: '0.045000', virtualAmount: '0.000000', messages },
    requestId: undefined,
    attempts: 1,
  } as ProviderSuccess;
}

/** The shipped client's error for a simulated failed answer. */
export function simulatedFailure(answer: Exclude<Answer, 'ok'>, operation: ProviderRequest['operation'], retryAmbiguous = false): ProviderError {
  const failure = FAILURE[answer];
  return new ProviderError({
    ...failure,
    operation,
    message: `simulated ${answer}`,
    providerMessage: answer,
    // As the shipped client says it: an ambiguous failure is retryable only under PROVIDER_RETRY_AMBIGUOUS (off by default).
    retryable: isRetryableClass(failure.failureClass, retryAmbiguous),
    attempts: 1,
    stopReason: 'not-retryable',
  });
}

/** One account of the service, as the simulation plays it: its answers drawn from the seed. */
class SimulatedAccountService implements ProviderClient {
  readonly #name: string;
  readonly #prng: Prng;
  readonly #calls: Map<string, CallRecord[]>;
  readonly #marked: (correlationId: string) => string | undefined;

  constructor(name: string, prng: Prng, calls: Map<string, CallRecord[]>, marked: (correlationId: string) => string | undefined) {
    this.#name = name;
    this.#prng = prng;
    this.#calls = calls;
    this.#marked = marked;
  }

  async send(request: ProviderRequest, options: { correlationId?: string } = {}): Promise<ProviderSuccess> {
    const id = options.correlationId ?? '?';
    const answer = this.#prng.weighted(ANSWER_WEIGHTS);
    // An answer that may hide a send: half of them did send.
    const accepted = answer === 'ok' || (MAY_HAVE_SENT.has(answer) && this.#prng.chance(0.5));
    const list = this.#calls.get(id) ?? [];
    list.push({ account: this.#name, answer, accepted, markedFor: this.#marked(id) });
    this.#calls.set(id, list);
    // The answer comes after a little while, in the schedule's order.
    await new Promise((resolve) => setTimeout(resolve, this.#prng.int(0, 3)));
    if (answer === 'ok') return simulatedSuccess(id, this.#name);
    throw simulatedFailure(answer, request.operation);
  }

  close(): void {}
}

export interface FailoverViolation {
  readonly seed: number;
  readonly kind: 'at-most-one-send' | 'failed-means-unsent' | 'sent-names-its-account' | 'no-failover-after-maybe' | 'declined-only-on-proof' | 'marks';
  readonly detail: string;
}

/** A sender to put in place of the shipped one per account (for the tests that prove the checks see a bug). */
export type WrapSender = (sender: GuardedSender) => GuardedSender;

const REGIONS = ['CN', 'AU', 'US', 'GB'];

/** One schedule: a burst of commands through 2–3 accounts; returns what it broke. */
export async function runFailoverSchedule(seed: number, wrap: WrapSender = (s) => s, tally?: Map<string, number>): Promise<FailoverViolation[]> {
  const prng = new Prng(seed);
  const names = ['default', 'backup', 'third'].slice(0, prng.int(2, 3));
  const calls = new Map<string, CallRecord[]>();
  /** Each command's open mark: the account it names. */
  const openMarks = new Map<string, string | undefined>();
  const markProblems: string[] = [];
  const marked = (id: string): string | undefined => openMarks.get(id);
  const closers: (() => void)[] = [];
  const accounts = new Map<string, GuardedSender>();
  for (const name of names) {
    const gate = new ServiceGate({ backoff: { insufficient_funds: { initialMs: 5, maxMs: 20 }, circuit_open: { initialMs: 5, maxMs: 20 } } });
    const holds = new RefusalHolds({
      settings: { ...DEFAULT_REFUSAL_SCOPE_SETTINGS, maxWaitMs: 30, routeProbe: { initialMs: 5, maxMs: 20 }, fundsProbe: { initialMs: 5, maxMs: 20 } },
    });
    closers.push(
      () => gate.close(),
      () => holds.close(),
    );
    const sender = new GuardedSender({
      account: name,
      client: new SimulatedAccountService(name, new Prng(seed * 31 + names.indexOf(name)), calls, marked),
      gate,
      holds,
      outages: new OutageCounter(prng.int(1, 3)),
      rateLimiter: new RateLimiter(0),
      fundsPolicy: 'pause',
      fundsPauseMaxMs: 60,
    });
    accounts.set(name, wrap(sender));
  }
  const lists = [names, [...names].reverse(), names.slice(0, 1)];
  const routing: Routing = {
    rules: [{ regions: new Set(['AU']), accounts: lists[1] as string[] }],
    fallback: prng.chance(0.8) ? names : (lists[2] as string[]),
  };
  const sender = new FailoverSender({ accounts, routing, priority: 'normal' });
  const commands = prng.int(5, 30);
  const outcomes = new Map<string, RoutedOutcome>();
  const started = Date.now();
  await Promise.all(
    Array.from({ length: commands }, async (_, n) => {
      const id = `s${seed}-c${n}`;
      const footprint: SendFootprint = { operation: 'sms.message.send', regions: [prng.pick(REGIONS)], costUnits: prng.int(1, 3) };
      const request: ProviderRequest = { operation: 'sms.message.send', body: { to: ['+8613800138000'], signature: 'Acme', content: 'x' } };
      const hooks: SendHooks = {
        beforeSend: async (_signal, account) => {
          if (marked(id) !== undefined) markProblems.push(`${id}: a second mark while one was open`);
          openMarks.set(id, account ?? '(none)');
          return true;
        },
        kept: (reached) => {
          if (!reached) openMarks.delete(id);
        },
      };
      // Some expire, so that waits behind pauses end.
      const expiresAt = prng.chance(0.7) ? started + prng.int(20, 200) : started + 400;
      outcomes.set(id, await sender.send(request, id, new AbortController().signal, expiresAt, hooks, footprint));
    }),
  );
  for (const close of closers) close();
  if (tally !== undefined) {
    const count = (key: string): void => void tally.set(key, (tally.get(key) ?? 0) + 1);
    for (const outcome of outcomes.values()) {
      count(`outcome ${outcome.kind}`);
      for (const step of outcome.failovers ?? []) count(`failover ${step.reason}`);
    }
  }
  return [...check(seed, outcomes, calls), ...markProblems.map((detail) => ({ seed, kind: 'marks' as const, detail }))];
}

function check(seed: number, outcomes: ReadonlyMap<string, RoutedOutcome>, calls: ReadonlyMap<string, CallRecord[]>): FailoverViolation[] {
  const out: FailoverViolation[] = [];
  const add = (kind: FailoverViolation['kind'], detail: string): void => void out.push({ seed, kind, detail });
  for (const [id, outcome] of outcomes) {
    const list = calls.get(id) ?? [];
    const accepted = list.filter((c) => c.accepted);
    if (new Set(accepted.map((c) => c.account)).size > 1 || accepted.length > 1)
      add('at-most-one-send', `${id}: accepted by ${accepted.map((c) => c.account).join(', ')}`);
    const maybe = list.findIndex((c) => MAY_HAVE_SENT.has(c.answer) || c.answer === 'ok');
    if (maybe >= 0 && list.slice(maybe + 1).some((c) => c.account !== list[maybe]?.account)) {
      add('no-failover-after-maybe', `${id}: ${list.map((c) => `${c.account}:${c.answer}`).join(' → ')}`);
    }
    for (const step of outcome.failovers ?? []) {
      if (list.some((c) => c.account === step.account && c.accepted))
        add('declined-only-on-proof', `${id}: left ${step.account} (${step.reason}) which accepted it`);
    }
    if (outcome.kind === 'failed' && !(outcome.error instanceof ProviderError && outcome.error.ambiguous) && accepted.length > 0) {
      add('failed-means-unsent', `${id}: FAILED ${outcome.error.message} but accepted by ${accepted[0]?.account}`);
    }
    if (outcome.kind === 'sent' && (accepted.length !== 1 || accepted[0]?.account !== outcome.account)) {
      add('sent-names-its-account', `${id}: SENT through ${outcome.account ?? '?'}, accepted by ${accepted.map((c) => c.account).join(', ') || 'none'}`);
    }
    for (const c of list) {
      if (c.markedFor === undefined) add('marks', `${id}: a call to ${c.account} without an open mark`);
      else if (c.markedFor !== c.account) add('marks', `${id}: a call to ${c.account} under a mark naming ${c.markedFor}`);
    }
  }
  return out;
}

/**
 * Runs `count` schedules from `firstSeed`, `parallel` at a time; the violations, and how many
 * commands ended each way. Schedules share nothing but the tally, so running several at once only
 * overlaps their waits (a schedule's answers come from its seed; its interleaving, as with one at
 * a time, from the timers).
 */
export async function runFailoverSchedules(
  firstSeed: number,
  count: number,
  wrap?: WrapSender,
  tally?: Map<string, number>,
  parallel = 1,
): Promise<FailoverViolation[]> {
  return runSeeds(firstSeed, count, parallel, (seed) => runFailoverSchedule(seed, wrap, tally));
}

/**
 * Runs `run` for seeds firstSeed … firstSeed + count − 1, `parallel` at a time (a schedule on real
 * timers mostly waits, so several overlap); every schedule's violations, by seed.
 */
export async function runSeeds<V extends { readonly seed: number }>(
  firstSeed: number,
  count: number,
  parallel: number,
  run: (seed: number) => Promise<V[]>,
): Promise<V[]> {
  const violations: V[] = [];
  let next = firstSeed;
  const worker = async (): Promise<void> => {
    while (next < firstSeed + count) {
      const seed = next;
      next += 1;
      violations.push(...(await run(seed)));
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, parallel) }, worker));
  return violations.sort((a, b) => a.seed - b.seed);
}

/** Violations by kind: how many, and the first seed of each (to replay). */
export function violationsByKind(violations: readonly { readonly kind: string; readonly seed: number }[]): Map<string, { count: number; firstSeed: number }> {
  const byKind = new Map<string, { count: number; firstSeed: number }>();
  for (const v of violations) byKind.set(v.kind, { count: (byKind.get(v.kind)?.count ?? 0) + 1, firstSeed: byKind.get(v.kind)?.firstSeed ?? v.seed });
  return byKind;
}

/** The send path over several accounts: true when it found a violation. */
export async function simulateAccounts(seed: number, schedules: number): Promise<boolean> {
  const started = Date.now();
  const tally = new Map<string, number>();
  const failovers = await runFailoverSchedules(seed, schedules, undefined, tally, 32);
  for (const [kind, { count, firstSeed }] of violationsByKind(failovers))
    console.log(`\nVIOLATION ${kind} (accounts): ${count}, first at seed ${firstSeed}: npm run simulate:failover -- --seed ${firstSeed} --schedules 1`);
  for (const v of failovers.slice(0, 5)) console.log(`  seed ${v.seed} ${v.kind}: ${v.detail}`);
  const sent = tally.get('outcome sent') ?? 0;
  const failedOver = [...tally].filter(([key]) => key.startsWith('failover ')).reduce((sum, [, n]) => sum + n, 0);
  console.log(
    `accounts: schedules ${schedules} over 2–3 accounts (shipped FailoverSender and GuardedSenders), violations ${failovers.length}, ` +
      `${sent.toLocaleString('en')} sent, ${failedOver.toLocaleString('en')} failovers, ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  return failovers.length > 0;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: { schedules: { type: 'string', default: '2000' }, seed: { type: 'string', default: '1' }, parallel: { type: 'string', default: '32' } },
  });
  const started = Date.now();
  const tally = new Map<string, number>();
  const violations = await runFailoverSchedules(Number(values.seed), Number(values.schedules), undefined, tally, Number(values.parallel));
  const byKind = violationsByKind(violations);
  console.log(
    `failover simulation: ${values.schedules} schedules from seed ${values.seed}, ${values.parallel} at a time, in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  console.log(
    [...tally]
      .sort()
      .map(([key, n]) => `${key} ${n}`)
      .join(', '),
  );
  console.log(
    violations.length === 0 ? '0 violations' : [...byKind].map(([kind, { count, firstSeed }]) => `${kind}: ${count} (first at seed ${firstSeed})`).join('\n'),
  );
  for (const v of violations.slice(0, 5)) console.log(`  seed ${v.seed} ${v.kind}: ${v.detail}`);
  process.exitCode = violations.length === 0 ? 0 : 1;
}

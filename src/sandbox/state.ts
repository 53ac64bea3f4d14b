/**
 * Everything the sandbox remembers: the balance, the request log (a ring buffer, bounded but
 * large), counters kept apart from the log so they survive its rotation, and per-correlation-id
 * counts of accepted sends (how a chaos run detects a command the service received twice).
 * Reachable in-process as `sandbox.state` and over HTTP through the /_sandbox/ routes.
 */
import { AnswerFaults } from './answer-faults.ts';
import type { AnswerFaultKind } from './answer-faults.ts';
import { DeliveryReporter } from './delivery-reports.ts';
import type { DeliveryReportSettings, ReportPoster } from './delivery-reports.ts';
import type { FaultKind, FaultSettings } from './faults.ts';
import { FaultPlan } from './faults.ts';
import { formatMoney, parseMoney } from './money.ts';

export interface RequestLogEntry {
  readonly seq: number;
  /** Epoch ms when the request arrived. */
  readonly receivedAt: number;
  /** The `action` query parameter, as sent. */
  readonly action: string | undefined;
  /** Never the key itself: 'REDACTED' when one was sent. */
  readonly accessKeyId: 'REDACTED' | undefined;
  readonly correlationId: string | undefined;
  /** Request body as received (it carries no secret), cut at 4 KiB. */
  readonly rawBody: string;
  /** 0 when no answer was sent (reset, hang). */
  readonly httpStatus: number;
  /** `code` of the answer, when one was sent. */
  readonly answerCode: string | undefined;
  /** A random or queued fault, or the hostile answer aimed at this correlation id. */
  readonly fault: FaultKind | AnswerFaultKind | undefined;
  /** The send was processed and charged. */
  readonly accepted: boolean;
  readonly latencyMs: number;
}

/** A log entry without its body. */
export type RequestLogSummary = Omit<RequestLogEntry, 'rawBody'>;

export interface RequestLogView extends RequestLogEntry {
  /** rawBody parsed, or the raw string when it is not JSON. */
  readonly body: unknown;
}

export interface SandboxStats {
  readonly requests: number;
  readonly byAction: Readonly<Record<string, number>>;
  readonly byHttpStatus: Readonly<Record<string, number>>;
  readonly byAnswerCode: Readonly<Record<string, number>>;
  readonly faults: Readonly<Record<string, number>>;
  readonly acceptedSends: number;
  readonly acceptedRecipients: number;
  readonly chargedAmount: string;
  readonly balance: string;
  /** Correlation ids with more than one accepted send. */
  readonly duplicateCorrelationIds: number;
  /** Accepted sends beyond the first, summed over correlation ids. */
  readonly duplicateSends: number;
  /** TCP connections accepted (few, with client keep-alive). */
  readonly connections: number;
  readonly logged: number;
  readonly logCapacity: number;
}

export interface RequestFilter {
  /** Only entries with seq > since. */
  readonly since?: number;
  readonly correlationId?: string;
  readonly action?: string;
  /** Keep the last `limit` matches. */
  readonly limit?: number;
}

const MAX_RAW_BODY = 4096;

function bump(counter: Map<string, number>, key: string, by = 1): void {
  counter.set(key, (counter.get(key) ?? 0) + by);
}

export class SandboxState {
  readonly faults: FaultPlan;
  /** Hostile answers aimed at single commands (answer-faults.ts). */
  readonly answerFaults = new AnswerFaults();
  /** Delivery reports posted to a callback URL, when one is set (delivery-reports.ts). */
  readonly deliveryReports: DeliveryReporter;
  readonly logCapacity: number;
  readonly #initialBalance: bigint;
  readonly #initialFaults: FaultSettings;
  #balance: bigint;
  #log: (RequestLogEntry | undefined)[];
  #seq = 0;
  #byAction = new Map<string, number>();
  #byStatus = new Map<string, number>();
  #byCode = new Map<string, number>();
  #byFault = new Map<string, number>();
  #acceptedSends = 0;
  #acceptedRecipients = 0;
  #charged = 0n;
  #perCorrelation = new Map<string, number>();
  #duplicateIds = 0;
  #duplicateSends = 0;
  #connections = 0;

  constructor(options: {
    balanceMicros: bigint;
    faults: FaultSettings;
    random: () => number;
    logCapacity: number;
    deliveryReports: DeliveryReportSettings;
    reportPoster?: ReportPoster;
  }) {
    this.deliveryReports = new DeliveryReporter(options.deliveryReports, options.random, options.reportPoster);
    this.#initialBalance = options.balanceMicros;
    this.#balance = options.balanceMicros;
    this.#initialFaults = options.faults;
    this.faults = new FaultPlan(options.faults, options.random);
    this.logCapacity = Math.max(1, Math.floor(options.logCapacity));
    this.#log = new Array<RequestLogEntry | undefined>(this.logCapacity);
  }

  get balance(): string {
    return formatMoney(this.#balance);
  }

  get balanceMicros(): bigint {
    return this.#balance;
  }

  /** Sets the balance from a decimal string; throws on anything else. */
  setBalance(balance: string): void {
    const micros = parseMoney(balance);
    if (micros === undefined) throw new Error('balance must be a non-negative decimal with at most six decimals');
    this.#balance = micros;
  }

  /** Called by the server after a successful send. */
  charge(newBalanceMicros: bigint, chargedMicros: bigint, recipients: number, correlationId: string | undefined): void {
    this.#balance = newBalanceMicros;
    this.#charged += chargedMicros;
    this.#acceptedSends += 1;
    this.#acceptedRecipients += recipients;
    if (correlationId === undefined) return;
    const count = (this.#perCorrelation.get(correlationId) ?? 0) + 1;
    this.#perCorrelation.set(correlationId, count);
    if (count === 2) this.#duplicateIds += 1;
    if (count >= 2) this.#duplicateSends += 1;
  }

  noteConnection(): void {
    this.#connections += 1;
  }

  nextSeq(): number {
    this.#seq += 1;
    return this.#seq;
  }

  record(entry: Omit<RequestLogEntry, 'rawBody'> & { rawBody: string }): void {
    const stored: RequestLogEntry = {
      ...entry,
      rawBody: entry.rawBody.length > MAX_RAW_BODY ? entry.rawBody.slice(0, MAX_RAW_BODY) : entry.rawBody,
    };
    const slot = (entry.seq - 1) % this.logCapacity;
    // A very slow request must not overwrite a newer entry that already took its slot.
    const current = this.#log[slot];
    if (current === undefined || current.seq < entry.seq) this.#log[slot] = stored;
    bump(this.#byAction, entry.action ?? '(none)');
    bump(this.#byStatus, String(entry.httpStatus));
    if (entry.answerCode !== undefined) bump(this.#byCode, entry.answerCode);
    if (entry.fault !== undefined) bump(this.#byFault, entry.fault);
  }

  /** Accepted sends seen for one correlation id. */
  acceptedSends(correlationId: string): number {
    return this.#perCorrelation.get(correlationId) ?? 0;
  }

  /** Correlation ids with at least `min` accepted sends (default 2: the duplicates). */
  correlationCounts(min = 2): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [id, count] of this.#perCorrelation) if (count >= min) out[id] = count;
    return out;
  }

  /** Logged requests, oldest first, with the body parsed. */
  requests(filter: RequestFilter = {}): RequestLogView[] {
    return this.#matching(filter).map((entry) => ({ ...entry, body: parseBody(entry.rawBody) }));
  }

  /**
   * The same entries without their bodies: what a poller of the log needs (the benchmarks poll it
   * twice a second; parsing and sending every body again would stall the sandbox and so delay the
   * receive times it records).
   */
  requestSummaries(filter: RequestFilter = {}): RequestLogSummary[] {
    return this.#matching(filter).map(({ rawBody: _rawBody, ...summary }) => summary);
  }

  #matching(filter: RequestFilter): RequestLogEntry[] {
    const first = Math.max(1, this.#seq - this.logCapacity + 1, (filter.since ?? 0) + 1);
    const matches: RequestLogEntry[] = [];
    for (let seq = first; seq <= this.#seq; seq += 1) {
      const entry = this.#log[(seq - 1) % this.logCapacity];
      if (entry === undefined || entry.seq !== seq) continue;
      if (filter.correlationId !== undefined && entry.correlationId !== filter.correlationId) continue;
      if (filter.action !== undefined && entry.action !== filter.action) continue;
      matches.push(entry);
    }
    return filter.limit === undefined ? matches : matches.slice(Math.max(0, matches.length - filter.limit));
  }

  stats(): SandboxStats {
    return {
      requests: this.#seq,
      byAction: Object.fromEntries(this.#byAction),
      byHttpStatus: Object.fromEntries(this.#byStatus),
      byAnswerCode: Object.fromEntries(this.#byCode),
      faults: Object.fromEntries(this.#byFault),
      acceptedSends: this.#acceptedSends,
      acceptedRecipients: this.#acceptedRecipients,
      chargedAmount: formatMoney(this.#charged),
      balance: this.balance,
      duplicateCorrelationIds: this.#duplicateIds,
      duplicateSends: this.#duplicateSends,
      connections: this.#connections,
      logged: Math.min(this.#seq, this.logCapacity),
      logCapacity: this.logCapacity,
    };
  }

  /** Back to the start: initial balance, faults and report settings, no answer faults or queued reports, empty log, zero counters. */
  reset(): void {
    this.#balance = this.#initialBalance;
    this.faults.replace(this.#initialFaults);
    this.faults.clearQueue();
    this.answerFaults.clear();
    this.deliveryReports.reset();
    this.#log = new Array<RequestLogEntry | undefined>(this.logCapacity);
    this.#seq = 0;
    this.#byAction.clear();
    this.#byStatus.clear();
    this.#byCode.clear();
    this.#byFault.clear();
    this.#acceptedSends = 0;
    this.#acceptedRecipients = 0;
    this.#charged = 0n;
    this.#perCorrelation.clear();
    this.#duplicateIds = 0;
    this.#duplicateSends = 0;
    this.#connections = 0;
  }
}

function parseBody(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

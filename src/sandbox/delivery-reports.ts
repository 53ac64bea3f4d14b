/**
 * Delivery reports from the sandbox, like the service's DLR extension (reference provider.md §4):
 * once a callback URL is set (for every account, or per access key id), each accepted message
 * gets one JSON report POSTed there after a delay — mostly `delivered`, a share `failed` with an
 * error code — retried with backoff until the callback answers 200 (the service's rule: any 200
 * counts as received). The queue is bounded; reports beyond it, or past the last attempt, are
 * dropped and counted. Report building and backoff are pure; posting and timers are the class.
 */
import type { MessageReport } from '../provider/types.ts';

export interface DeliveryReportSettings {
  /** Where every account's reports go; undefined: no reports unless the account has its own URL. */
  readonly callbackUrl: string | undefined;
  /** Access key id → callback URL, overriding callbackUrl for that account. */
  readonly accounts: Readonly<Record<string, string>>;
  /** Time from the accepted send to its report. @defaultValue 200 */
  readonly delayMs: number;
  /** Share of reports that say `failed` (0..1). @defaultValue 0.1 */
  readonly failRate: number;
  /** First retry delay after a non-200; doubles per attempt up to retryMaxMs. @defaultValue 200 */
  readonly retryBaseMs: number;
  /** @defaultValue 5000 */
  readonly retryMaxMs: number;
  /** Attempts per report, the first included; then it is dropped. @defaultValue 20 */
  readonly maxAttempts: number;
  /** Reports waiting or being posted, at most; new ones beyond it are dropped. @defaultValue 10000 */
  readonly maxQueue: number;
}

export const DEFAULT_DELIVERY_REPORTS: DeliveryReportSettings = {
  callbackUrl: undefined,
  accounts: {},
  delayMs: 200,
  failRate: 0.1,
  retryBaseMs: 200,
  retryMaxMs: 5_000,
  maxAttempts: 20,
  maxQueue: 10_000,
};

/** Per-attempt limit on one POST to the callback. */
const POST_TIMEOUT_MS = 5_000;
/** Error codes a failed report carries, as SMPP-style carriers report them. */
export const FAILURE_CODES = [
  { errorCode: 'UNDELIV', errorMessage: 'Message undeliverable' },
  { errorCode: 'EXPIRED', errorMessage: 'Validity period expired' },
  { errorCode: 'REJECTD', errorMessage: 'Rejected by the carrier' },
] as const;

/** The JSON the sandbox posts: the UniSMS report fields the receiver documents relying on. */
export interface DeliveryReportBody {
  readonly id: string;
  readonly status: 'delivered' | 'failed';
  readonly to: string;
  readonly regionCode: string;
  readonly countryCode: string;
  readonly messageCount: number;
  readonly price: string;
  readonly currency: string;
  readonly errorCode: string;
  readonly errorMessage: string;
  readonly submitDate: string;
  readonly doneDate: string;
}

/** Pure: the report for one message; `roll` in [0,1) decides delivered/failed and the code. */
export function buildReport(message: MessageReport, submittedAt: number, doneAt: number, failRate: number, roll: number): DeliveryReportBody {
  const failed = roll < failRate;
  const failure = FAILURE_CODES[Math.min(FAILURE_CODES.length - 1, Math.floor((roll / Math.max(failRate, Number.EPSILON)) * FAILURE_CODES.length))];
  return {
    id: message.id,
    status: failed ? 'failed' : 'delivered',
    to: message.to,
    regionCode: message.regionCode,
    countryCode: message.countryCode,
    messageCount: message.messageCount,
    price: message.price,
    currency: 'CNY',
    errorCode: failed && failure !== undefined ? failure.errorCode : 'DELIVRD',
    errorMessage: failed && failure !== undefined ? failure.errorMessage : 'Delivered',
    submitDate: new Date(submittedAt).toISOString(),
    doneDate: new Date(doneAt).toISOString(),
  };
}

/** Pure: delay before attempt `attempt + 1` (attempt ≥ 1 failed so far), with up to 20 % jitter. */
export function retryDelayMs(attempt: number, settings: Pick<DeliveryReportSettings, 'retryBaseMs' | 'retryMaxMs'>, jitter: number): number {
  const plain = Math.min(settings.retryMaxMs, settings.retryBaseMs * 2 ** Math.min(30, attempt - 1));
  return Math.round(plain * (1 - 0.2 * jitter));
}

export interface DeliveryReportStats {
  readonly queued: number;
  readonly posted: number;
  readonly delivered: number;
  readonly failed: number;
  readonly retries: number;
  readonly dropped: number;
  /** HTTP status of the last attempt (0: no answer). */
  readonly lastStatus: number | undefined;
}

/** Posts a body; resolves to the HTTP status, 0 when there was no answer. */
export type ReportPoster = (url: string, body: string) => Promise<number>;

export const fetchPoster: ReportPoster = async (url, body) => {
  try {
    const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(POST_TIMEOUT_MS) });
    await response.arrayBuffer().catch(() => undefined);
    return response.status;
  } catch {
    return 0;
  }
};

interface Pending {
  /** reset() starts a new generation: answers to posts of an older one are ignored. */
  readonly generation: number;
  readonly url: string;
  readonly body: DeliveryReportBody;
  attempts: number;
}

export class DeliveryReporter {
  readonly #initial: DeliveryReportSettings;
  readonly #random: () => number;
  readonly #post: ReportPoster;
  #settings: DeliveryReportSettings;
  readonly #timers = new Set<NodeJS.Timeout>();
  #queued = 0;
  #posted = 0;
  #delivered = 0;
  #failed = 0;
  #retries = 0;
  #dropped = 0;
  #lastStatus: number | undefined;
  #closed = false;
  #generation = 0;

  constructor(settings: DeliveryReportSettings, random: () => number, post: ReportPoster = fetchPoster) {
    this.#initial = settings;
    this.#settings = settings;
    this.#random = random;
    this.#post = post;
  }

  get settings(): DeliveryReportSettings {
    return this.#settings;
  }

  update(update: Partial<DeliveryReportSettings>): void {
    this.#settings = { ...this.#settings, ...update };
  }

  /** Where an account's reports go, if anywhere. */
  callbackFor(accessKeyId: string | undefined): string | undefined {
    return (accessKeyId === undefined ? undefined : this.#settings.accounts[accessKeyId]) ?? this.#settings.callbackUrl;
  }

  /** Called by the server for each accepted send: schedules one report per message. */
  accepted(accessKeyId: string | undefined, messages: readonly MessageReport[], submittedAt: number): void {
    const url = this.callbackFor(accessKeyId);
    if (url === undefined || this.#closed) return;
    for (const message of messages) {
      if (this.#queued >= this.#settings.maxQueue) {
        this.#dropped += 1;
        continue;
      }
      const doneAt = submittedAt + this.#settings.delayMs;
      const body = buildReport(message, submittedAt, doneAt, this.#settings.failRate, this.#random());
      this.#queued += 1;
      this.#schedule({ generation: this.#generation, url, body, attempts: 0 }, this.#settings.delayMs);
    }
  }

  #schedule(pending: Pending, delayMs: number): void {
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      void this.#attempt(pending);
    }, delayMs);
    this.#timers.add(timer);
  }

  async #attempt(pending: Pending): Promise<void> {
    if (this.#closed) return;
    pending.attempts += 1;
    const status = await this.#post(pending.url, JSON.stringify(pending.body));
    if (this.#closed || pending.generation !== this.#generation) return;
    this.#lastStatus = status;
    if (status === 200) {
      this.#queued -= 1;
      this.#posted += 1;
      if (pending.body.status === 'delivered') this.#delivered += 1;
      else this.#failed += 1;
      return;
    }
    if (pending.attempts >= this.#settings.maxAttempts) {
      this.#queued -= 1;
      this.#dropped += 1;
      return;
    }
    this.#retries += 1;
    this.#schedule(pending, retryDelayMs(pending.attempts, this.#settings, this.#random()));
  }

  stats(): DeliveryReportStats {
    return {
      queued: this.#queued,
      posted: this.#posted,
      delivered: this.#delivered,
      failed: this.#failed,
      retries: this.#retries,
      dropped: this.#dropped,
      lastStatus: this.#lastStatus,
    };
  }

  /** Initial settings, nothing queued, zero counters. */
  reset(): void {
    this.#generation += 1;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    this.#settings = this.#initial;
    this.#queued = 0;
    this.#posted = 0;
    this.#delivered = 0;
    this.#failed = 0;
    this.#retries = 0;
    this.#dropped = 0;
    this.#lastStatus = undefined;
  }

  /** Drops everything queued; posts in progress finish but are not retried. */
  close(): void {
    this.#closed = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
  }
}

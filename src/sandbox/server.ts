/**
 * A real node:http server that behaves like the messaging service as the spec describes it
 * (both operations, their envelopes, 400 failures with only code and message, x-uni-request-id on
 * every answer), plus fault injection and /_sandbox/ admin routes. For tests, the demo and
 * benchmarks: per request it does a JSON parse, libphonenumber and BigInt sums, nothing heavier.
 */
import http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CountryCode } from 'libphonenumber-js';
import { applyFaultUpdate, ADMIN_PREFIX, handleAdmin } from './admin.ts';
import { corruptEnvelope, HUGE_BODY_PADDING_BYTES, isEnvelopeFault, NEVER_ENDS_MAX_MS, NEVER_ENDS_TRICKLE_MS, neverEndingPrefix } from './answer-faults.ts';
import type { AnswerFaultKind } from './answer-faults.ts';
import type { FaultUpdate } from './admin.ts';
import { checkAuth } from './auth.ts';
import { header, listen } from '../http-io.ts';
import { failure, readBody, writeFault, writeJson, type Answer } from './http-io.ts';
import { errorEnvelope } from './error-codes.ts';
import { DEFAULT_DELIVERY_REPORTS } from './delivery-reports.ts';
import type { DeliveryReportSettings } from './delivery-reports.ts';
import { AFTER_PROCESSING, DEFAULT_FAULTS, seededRandom } from './faults.ts';
import type { FaultSettings } from './faults.ts';
import { parseMoney } from './money.ts';
import { sendText, sendVoice } from './operations.ts';
import { textRoutesWith, type TextRouteOverrides } from './pricing.ts';
import type { OperationAnswer, SuccessEnvelope } from './operations.ts';
import { SandboxState } from './state.ts';
import { validateText, validateVoice } from './validate.ts';

export interface SandboxOptions {
  /** @defaultValue '127.0.0.1' */
  readonly host?: string;
  /** 0 picks a free port. @defaultValue 0 */
  readonly port?: number;
  /** When set, other key ids get 900101. */
  readonly accessKeyId?: string | undefined;
  /** When set, requests must be HMAC-signed with it (signing.ts), timestamp within 10 minutes. */
  readonly accessKeySecret?: string | undefined;
  /** Decimal string. @defaultValue "1000000.000000" */
  readonly balance?: string;
  /** Region national numbers are read in, and the only region voice calls go to. @defaultValue 'CN' */
  readonly homeRegion?: CountryCode;
  readonly faults?: Partial<FaultSettings>;
  /** Random source for faults and latency; overrides `seed`. @defaultValue Math.random */
  readonly random?: () => number;
  /** Seed for a reproducible random source. */
  readonly seed?: number;
  /** Request log entries kept (older ones rotate out; counters do not). @defaultValue 200000 */
  readonly logCapacity?: number;
  /** Delivery reports to a callback URL (delivery-reports.ts); none unless a URL is set. */
  readonly deliveryReports?: Partial<DeliveryReportSettings>;
  /** Text routes of this sandbox's account that differ from PRICE_TABLE (another account of the service, with its own upstreams). */
  readonly textRoutes?: TextRouteOverrides;
  /**
   * More accounts of the same service at the same URL, told apart by the request's access key id
   * (as the real service does): each with its own balance, text routes, faults and request log.
   * A request whose key id is none of theirs is the main account's (`accessKeyId`). At most 8.
   */
  readonly accounts?: readonly SandboxAccountOptions[];
  /** Waits out a request's latency (injectable so tests need no clock); rejects once `signal` aborts. @defaultValue node:timers/promises setTimeout */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<unknown>;
}

/** One more account of a sandbox (SandboxOptions.accounts). */
export interface SandboxAccountOptions {
  readonly accessKeyId: string;
  /** When set, its requests must be HMAC-signed with it. */
  readonly accessKeySecret?: string | undefined;
  /** Decimal string. @defaultValue "1000000.000000" */
  readonly balance?: string;
  readonly textRoutes?: TextRouteOverrides;
}

/** An account of a sandbox as tests see it: its own state (balance, request log, faults). */
export interface SandboxAccount {
  readonly state: SandboxState;
  setFaults(update: FaultUpdate): void;
  setAnswerFaults(targets: Readonly<Record<string, AnswerFaultKind>>): void;
}

/** At most this many accounts besides the main one (as the worker's ACCOUNTS). */
export const MAX_SANDBOX_ACCOUNTS = 8;

export interface RunningSandbox {
  /** `http://host:port`, to use as the client's baseUrl. */
  readonly url: string;
  readonly port: number;
  /** The main account's state (`accessKeyId`); the /_sandbox/ admin routes act on it. */
  readonly state: SandboxState;
  /** The accounts of SandboxOptions.accounts, by access key id. */
  readonly accounts: ReadonlyMap<string, SandboxAccount>;
  /** Same effect as POST /_sandbox/faults. */
  setFaults(update: FaultUpdate): void;
  /** Same effect as POST /_sandbox/answer-faults {"set": targets}: hostile answers for these correlation ids. */
  setAnswerFaults(targets: Readonly<Record<string, AnswerFaultKind>>): void;
  /** Stops listening and drops every connection, hanging ones included. Idempotent. */
  close(): Promise<void>;
}

export const DEFAULT_SANDBOX_BALANCE = '1000000.000000';
const TEXT = 'sms.message.send';
const VOICE = 'sms.voice.verification.send';

/** What a request is answered with: the account its key id names. */
interface AccountContext {
  readonly state: SandboxState;
  readonly auth: { readonly accessKeyId: string | undefined; readonly accessKeySecret: string | undefined };
  readonly textRouteOf: ReturnType<typeof textRoutesWith>;
}

export async function startSandbox(options: SandboxOptions = {}): Promise<RunningSandbox> {
  const homeRegion: CountryCode = options.homeRegion ?? 'CN';
  const random = options.random ?? (options.seed === undefined ? Math.random : seededRandom(options.seed));
  const extra = options.accounts ?? [];
  if (extra.length > MAX_SANDBOX_ACCOUNTS) throw new Error(`a sandbox has at most ${MAX_SANDBOX_ACCOUNTS} accounts besides its main one`);
  const accountOf = (account: SandboxAccountOptions | SandboxOptions): AccountContext => {
    const balanceMicros = parseMoney(account.balance ?? DEFAULT_SANDBOX_BALANCE);
    if (balanceMicros === undefined) throw new Error('sandbox balance must be a non-negative decimal with at most six decimals');
    return {
      state: new SandboxState({
        balanceMicros,
        faults: { ...DEFAULT_FAULTS, ...options.faults },
        random,
        logCapacity: options.logCapacity ?? 200_000,
        deliveryReports: { ...DEFAULT_DELIVERY_REPORTS, ...options.deliveryReports },
      }),
      auth: { accessKeyId: account.accessKeyId, accessKeySecret: account.accessKeySecret },
      textRouteOf: textRoutesWith(account.textRoutes),
    };
  };
  const main = accountOf(options);
  const { state } = main;
  const others = new Map(extra.map((account) => [account.accessKeyId, accountOf(account)] as const));
  if (others.size !== extra.length || others.has('') || (options.accessKeyId !== undefined && others.has(options.accessKeyId)))
    throw new Error("a sandbox's accounts need access key ids of their own");
  /** The account a request's key id names; the main one for any other. */
  const contextOf = (query: URLSearchParams): AccountContext => others.get(query.get('accessKeyId') ?? '') ?? main;
  const closing = new AbortController();
  const waitLatency = options.sleep ?? ((ms: number, signal: AbortSignal) => sleep(ms, undefined, { signal }));

  // Ids: a per-boot prefix plus a counter; unique, opaque, and cheaper than a UUID per message.
  const boot = randomBytes(6).toString('hex');
  let requestCounter = 0;
  let messageCounter = 0;
  const nextRequestId = (): string => `${boot}${(requestCounter += 1).toString(16).padStart(10, '0')}`;
  const nextMessageId = (): string => `${boot}m${(messageCounter += 1).toString(16).padStart(10, '0')}`;

  function processSend(
    { state, auth, textRouteOf }: AccountContext,
    method: string,
    query: URLSearchParams,
    rawBody: string | undefined,
    correlationId: string | undefined,
  ): Answer {
    if (method !== 'POST') return failure('methodNotAllowed');
    const authError = checkAuth(query, auth, Date.now());
    if (authError !== undefined) return failure(authError);
    const action = query.get('action');
    if (action !== TEXT && action !== VOICE) return failure('unknownAction');
    if (rawBody === undefined) return failure('invalidBody');
    let body: unknown;
    try {
      body = JSON.parse(rawBody);
    } catch {
      return failure('invalidBody');
    }
    let result: OperationAnswer;
    let recipients: number;
    if (action === TEXT) {
      const command = validateText(body, homeRegion);
      if (!command.ok) return failure(command.error);
      recipients = command.value.recipients.length;
      result = sendText(command.value, homeRegion, state.balanceMicros, nextMessageId, textRouteOf);
    } else {
      const command = validateVoice(body, homeRegion);
      if (!command.ok) return failure(command.error);
      recipients = 1;
      result = sendVoice(command.value, homeRegion, state.balanceMicros, nextMessageId);
    }
    if (!result.ok) return { status: 400, envelope: result.envelope, accepted: false };
    state.charge(result.balanceMicros, result.chargedMicros, recipients, correlationId);
    state.deliveryReports.accepted(query.get('accessKeyId') ?? undefined, result.envelope.data.messages, Date.now());
    return { status: 200, envelope: result.envelope, accepted: true };
  }

  async function handleService(req: IncomingMessage, res: ServerResponse, url: URL, rawBody: string | undefined): Promise<void> {
    const account = contextOf(url.searchParams);
    const { state } = account;
    const receivedAt = Date.now();
    const seq = state.nextSeq();
    const requestId = nextRequestId();
    const correlationId = header(req.headers['x-correlation-id']);
    // A command with a hostile answer aimed at it gets exactly that answer: no random fault drawn.
    const hostile = state.answerFaults.take(correlationId);
    const fault = hostile === undefined ? state.faults.next() : undefined;
    const latencyMs = state.faults.latencyMs();
    if (latencyMs > 0) await waitLatency(latencyMs, closing.signal);

    let answer: Answer | undefined;
    if (fault === undefined || AFTER_PROCESSING.has(fault)) {
      answer = processSend(account, req.method ?? 'GET', url.searchParams, rawBody, correlationId);
    }
    let sent: { status: number; code: string | undefined };
    let streaming: Promise<void> | undefined;
    if (fault !== undefined) {
      sent = writeFault(res, fault, requestId, state.faults.settings.retryAfterSec);
    } else if (answer !== undefined && hostile !== undefined) {
      ({ sent, streaming } = answerHostile(res, hostile, answer, requestId));
    } else if (answer !== undefined) {
      writeJson(res, answer.status, answer.envelope, requestId);
      sent = { status: answer.status, code: answer.envelope.code };
    } else {
      sent = { status: 0, code: undefined };
    }
    state.record({
      seq,
      receivedAt,
      action: url.searchParams.get('action') ?? undefined,
      accessKeyId: url.searchParams.has('accessKeyId') ? 'REDACTED' : undefined,
      correlationId,
      rawBody: rawBody ?? '',
      httpStatus: sent.status,
      answerCode: sent.code,
      fault: fault ?? hostile,
      accepted: answer?.accepted ?? false,
      latencyMs,
    });
    // Logged as soon as the answer started: a client that gives up mid-body still sees its request counted.
    await streaming;
  }

  /** Writes a hostile answer; huge-body and never-ends keep streaming after this returns. */
  function answerHostile(
    res: ServerResponse,
    kind: AnswerFaultKind,
    answer: Answer,
    requestId: string,
  ): { sent: { status: number; code: string | undefined }; streaming?: Promise<void> } {
    const sent = { status: answer.status, code: answer.envelope.code };
    if (isEnvelopeFault(kind)) {
      const body = answer.accepted ? corruptEnvelope(kind, answer.envelope as SuccessEnvelope) : answer.envelope;
      writeJson(res, answer.status, body, requestId);
      return { sent };
    }
    const json = JSON.stringify(answer.envelope);
    // Chunked, no content-length: the client only learns the size by reading.
    res.writeHead(answer.status, { 'content-type': 'application/json;charset=utf-8', 'x-uni-request-id': requestId });
    if (kind === 'huge-body') return { sent, streaming: streamHugeBody(res, json) };
    return { sent, streaming: trickleForever(res, neverEndingPrefix(json)) };
  }

  /** Waits for 'drain' (or the end of the connection); false when the answer can no longer be written. */
  async function writable(res: ServerResponse, chunk: string): Promise<boolean> {
    if (res.destroyed || closing.signal.aborted) return false;
    if (res.write(chunk)) return true;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        res.off('drain', done);
        res.off('close', done);
        closing.signal.removeEventListener('abort', done);
        resolve();
      };
      res.once('drain', done);
      res.once('close', done);
      closing.signal.addEventListener('abort', done, { once: true });
    });
    return !res.destroyed && !closing.signal.aborted;
  }

  async function streamHugeBody(res: ServerResponse, json: string): Promise<void> {
    if (!(await writable(res, json.slice(0, -1)))) return;
    const chunk = ' '.repeat(64 * 1024);
    for (let written = 0; written < HUGE_BODY_PADDING_BYTES; written += chunk.length) {
      if (!(await writable(res, chunk.slice(0, Math.min(chunk.length, HUGE_BODY_PADDING_BYTES - written))))) return;
    }
    res.end(json.slice(-1));
  }

  async function trickleForever(res: ServerResponse, prefix: string): Promise<void> {
    if (!(await writable(res, prefix))) return;
    const deadline = Date.now() + NEVER_ENDS_MAX_MS;
    while (Date.now() < deadline) {
      try {
        await sleep(NEVER_ENDS_TRICKLE_MS, undefined, { signal: closing.signal });
      } catch {
        return;
      }
      if (!(await writable(res, ' '))) return;
    }
    res.destroy();
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const rawBody = await readBody(req);
      const url = new URL(req.url ?? '/', 'http://sandbox.invalid');
      if (url.pathname.startsWith(ADMIN_PREFIX)) {
        const answer = handleAdmin(state, req.method ?? 'GET', url, rawBody ?? '');
        writeJson(res, answer.status, answer.body, nextRequestId());
        return;
      }
      await handleService(req, res, url, rawBody);
    } catch (error) {
      if (closing.signal.aborted) return;
      // A sandbox bug must show up as a 500 to the client, never as a crashed test process.
      if (!res.headersSent && !res.destroyed) {
        writeJson(res, 500, { ...errorEnvelope('internalError'), detail: String(error) }, nextRequestId());
      }
    }
  }

  const server = http.createServer((req, res) => {
    void handle(req, res);
  });
  server.on('connection', () => state.noteConnection());
  // Longer than any client's idle keep-alive, so the client never reuses a socket we just closed
  // (that would surface as an ECONNRESET the client must treat as ambiguous).
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = 0;

  const address = await listen(server, options.port ?? 0, options.host ?? '127.0.0.1');

  let closed: Promise<void> | undefined;
  return {
    url: `http://${address.host}:${address.port}`,
    port: address.port,
    state,
    accounts: new Map(
      [...others].map(([keyId, account]) => [
        keyId,
        {
          state: account.state,
          setFaults: (update: FaultUpdate) => applyFaultUpdate(account.state, update),
          setAnswerFaults: (targets: Readonly<Record<string, AnswerFaultKind>>) => account.state.answerFaults.set(targets),
        },
      ]),
    ),
    setFaults: (update) => applyFaultUpdate(state, update),
    setAnswerFaults: (targets) => state.answerFaults.set(targets),
    close(): Promise<void> {
      closed ??= new Promise<void>((resolve) => {
        closing.abort();
        state.deliveryReports.close();
        for (const account of others.values()) account.state.deliveryReports.close();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}

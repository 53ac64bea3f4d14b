/**
 * The receiver's report endpoint on node:http. Order of checks, cheapest first and nothing read
 * before the sender is known: rate limit per source (429) → method (405) → path (404) →
 * credentials (401) → size (413) → JSON (400) → fields (400, naming the field) → publish. It
 * answers 200 only after Kafka acknowledged every receipt of the post; a publish that fails or
 * times out is a 503 the service retries (a retried report becomes the same record again).
 *
 * Never logged: the request path (it carries the path token), the Authorization header, report
 * contents (phone numbers). Logged: the source address, the answer, the field a 400 names.
 */
import http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../observability/logger.ts';
import { coerceError } from '../errors.ts';
import { credentialDigests, isAuthorised, matchReportPath } from './auth.ts';
import type { ReceiverConfig } from './config.ts';
import { header, listen, readCappedBody } from '../http-io.ts';
import { declaredTooLarge, drainBytes, writeJson } from './http-io.ts';
import type { ReceiverMetrics, RejectReason } from './metrics.ts';
import { SourceRateLimiter, sourceAddress } from './rate-limit.ts';
import { deliverySeconds, parseReports, type DeliveryReceipt } from './report.ts';

/** The endpoint's settings, as the receiver's configuration has them. */
export type ReportServerSettings = Pick<
  ReceiverConfig,
  'host' | 'port' | 'path' | 'credentials' | 'maxBodyBytes' | 'maxReports' | 'rateLimit' | 'trustedProxyHops'
>;

export interface ReportServerOptions extends ReportServerSettings {
  /** Publishes and resolves once Kafka acknowledged; rejects when it did not (→ 503). */
  readonly publish: (receipts: readonly DeliveryReceipt[]) => Promise<void>;
  readonly metrics: ReceiverMetrics;
  readonly logger: Logger;
}

export interface RunningReportServer {
  /** `http://host:port` */
  readonly url: string;
  readonly port: number;
  /** Stops accepting, waits up to `timeoutMs` for posts in progress, then drops what is left. Idempotent. */
  close(timeoutMs: number): Promise<void>;
}

/** Seconds a 503 asks the service to wait before retrying. */
const RETRY_AFTER_UNAVAILABLE_SEC = 5;
/** The one 401 body: says nothing about which credential was wrong or missing. */
const UNAUTHORIZED = { code: 'UNAUTHORIZED', message: 'unauthorized' } as const;

export async function startReportServer(options: ReportServerOptions): Promise<RunningReportServer> {
  const digests = credentialDigests(options.credentials);
  const limiter = new SourceRateLimiter(options.rateLimit);
  const base = options.path.replace(/\/+$/, '');
  const { metrics, logger } = options;
  const closeHeader = { connection: 'close' };

  function reject(res: ServerResponse, reason: RejectReason, status: number, body: unknown, headers: Record<string, string> = {}): void {
    metrics.rejected(reason);
    writeJson(res, status, body, headers);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const source = sourceAddress(req.socket.remoteAddress, header(req.headers['x-forwarded-for']), options.trustedProxyHops);
    // Rate limited first, before any credential check: guessing tokens costs the same budget as posting.
    if (!limiter.take(source, Date.now())) {
      reject(
        res,
        'rate_limited',
        429,
        { code: 'RATE_LIMITED', message: 'too many requests' },
        { 'retry-after': String(limiter.retryAfterSeconds(source)), ...closeHeader },
      );
      return;
    }
    if (req.method !== 'POST') {
      reject(res, 'method', 405, { code: 'METHOD_NOT_ALLOWED', message: 'POST only' }, { allow: 'POST', ...closeHeader });
      return;
    }
    const route = matchReportPath(new URL(req.url ?? '/', 'http://receiver.invalid').pathname, base);
    if (route.kind === 'not-found') {
      reject(res, 'not_found', 404, { code: 'NOT_FOUND', message: 'not found' }, closeHeader);
      return;
    }
    if (!isAuthorised(digests, { token: route.token, authorization: header(req.headers.authorization) })) {
      logger.info({ source, answer: 401 }, 'report post refused: unauthorized');
      const challenge: Record<string, string> = digests.basic === undefined ? {} : { 'www-authenticate': 'Basic realm="delivery-receipts", charset="UTF-8"' };
      reject(res, 'unauthorized', 401, UNAUTHORIZED, { ...challenge, ...closeHeader });
      return;
    }
    const tooLarge = { code: 'PAYLOAD_TOO_LARGE', message: `body larger than ${options.maxBodyBytes} bytes` };
    if (declaredTooLarge(header(req.headers['content-length']), options.maxBodyBytes)) {
      reject(res, 'too_large', 413, tooLarge, closeHeader);
      return;
    }
    const body = await readCappedBody(req, options.maxBodyBytes, drainBytes(options.maxBodyBytes));
    if (body.kind === 'aborted') return;
    if (body.kind === 'too-large') {
      reject(res, 'too_large', 413, tooLarge, closeHeader);
      if (!body.drained) res.once('finish', () => req.destroy());
      return;
    }
    let json: unknown;
    try {
      json = JSON.parse(body.bytes.toString('utf8'));
    } catch {
      reject(res, 'malformed', 400, { code: 'MALFORMED_JSON', message: 'body is not JSON', field: '(body)' });
      return;
    }
    const parsed = parseReports(json, options.maxReports);
    if (!parsed.ok) {
      logger.info({ source, answer: 400, field: parsed.field, problem: parsed.problem }, 'report post refused: invalid field');
      reject(res, 'invalid', 400, { code: 'INVALID_REPORT', message: `${parsed.field} ${parsed.problem}`, field: parsed.field });
      return;
    }
    const started = performance.now();
    try {
      await options.publish(parsed.receipts);
    } catch (error) {
      logger.warn(
        { source, answer: 503, reports: parsed.receipts.length, err: coerceError(error).message },
        'receipts not published; answered 503 for the service to retry',
      );
      reject(
        res,
        'kafka_unavailable',
        503,
        { code: 'UNAVAILABLE', message: 'receipts cannot be stored now; retry later' },
        { 'retry-after': String(RETRY_AFTER_UNAVAILABLE_SEC) },
      );
      return;
    }
    metrics.publishSeconds((performance.now() - started) / 1000);
    for (const receipt of parsed.receipts) {
      metrics.published(receipt.status, receipt.regionCode);
      const seconds = deliverySeconds(receipt);
      if (seconds !== undefined) metrics.delivery(receipt.outcome, seconds);
    }
    logger.debug({ source, answer: 200, reports: parsed.receipts.length }, 'receipts published');
    writeJson(res, 200, { code: '0', message: 'Success', received: parsed.receipts.length });
  }

  const inFlight = new Set<Promise<void>>();
  const server = http.createServer((req, res) => {
    const done = handle(req, res).catch((error: unknown) => {
      // A receiver bug must answer 500 (the service retries), never crash the process.
      logger.error({ err: coerceError(error).message }, 'report handler failed');
      writeJson(res, 500, { code: 'INTERNAL', message: 'internal error' });
    });
    inFlight.add(done);
    void done.finally(() => inFlight.delete(done));
  });
  // Bounds on a slow or idle client (an internet-facing port): whole request within 30 s.
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  server.keepAliveTimeout = 65_000;
  server.maxHeadersCount = 64;

  const address = await listen(server, options.port, options.host);
  let closed: Promise<void> | undefined;
  return {
    url: `http://${address.host === '0.0.0.0' ? '127.0.0.1' : address.host}:${address.port}`,
    port: address.port,
    close(timeoutMs: number): Promise<void> {
      closed ??= (async () => {
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([Promise.allSettled([...inFlight]), new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
        clearTimeout(timer);
        server.closeAllConnections();
        await stopped;
      })();
      return closed;
    },
  };
}

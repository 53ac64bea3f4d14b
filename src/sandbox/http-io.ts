/** The sandbox's HTTP plumbing: reading a bounded body (with src/http-io.ts), writing the service's JSON answers. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readCappedBody } from '../http-io.ts';
import { errorEnvelope, SANDBOX_ERRORS, type ErrorEnvelope, type SandboxErrorKey } from './error-codes.ts';
import type { FaultKind } from './faults.ts';
import type { SuccessEnvelope } from './operations.ts';

const MAX_BODY_BYTES = 1024 * 1024;

export interface Answer {
  readonly status: number;
  readonly envelope: ErrorEnvelope | SuccessEnvelope;
  readonly accepted: boolean;
}

export function failure(key: SandboxErrorKey): Answer {
  return { status: SANDBOX_ERRORS[key].httpStatus, envelope: errorEnvelope(key), accepted: false };
}

/**
 * Reads the body as text; undefined when it is larger than the limit (drained to the end, so the
 * socket stays usable for the answer). Throws when the client went away before the body ended.
 */
export async function readBody(req: IncomingMessage): Promise<string | undefined> {
  const read = await readCappedBody(req, MAX_BODY_BYTES);
  if (read.kind === 'aborted') throw new Error('the client went away before the request body ended');
  return read.kind === 'body' ? read.bytes.toString('utf8') : undefined;
}

export function writeJson(res: ServerResponse, status: number, body: unknown, requestId: string, extra: Record<string, string> = {}): void {
  const json = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json;charset=utf-8',
    'content-length': Buffer.byteLength(json),
    'x-uni-request-id': requestId,
    ...extra,
  });
  res.end(json);
}

/** Answers with an injected fault instead of the service's answer. */
export function writeFault(res: ServerResponse, fault: FaultKind, requestId: string, retryAfterSec: number): { status: number; code: string | undefined } {
  const retryAfter = { 'retry-after': String(retryAfterSec) };
  switch (fault) {
    case 'http500':
      writeJson(res, 500, errorEnvelope('internalError'), requestId);
      return { status: 500, code: SANDBOX_ERRORS.internalError.code };
    case 'http502':
      writeJson(res, 502, errorEnvelope('badGateway'), requestId);
      return { status: 502, code: SANDBOX_ERRORS.badGateway.code };
    case 'http503':
      writeJson(res, 503, errorEnvelope('serviceUnavailable'), requestId, retryAfter);
      return { status: 503, code: SANDBOX_ERRORS.serviceUnavailable.code };
    case 'http429':
      writeJson(res, 429, errorEnvelope('tooManyRequests'), requestId, retryAfter);
      return { status: 429, code: SANDBOX_ERRORS.tooManyRequests.code };
    case 'reset':
    case 'reset-after':
      res.socket?.destroy();
      return { status: 0, code: undefined };
    case 'hang':
    case 'hang-after':
      // Never answered; close() drops the connection.
      return { status: 0, code: undefined };
    case 'malformed': {
      const html = '<html><body><h1>upstream hiccup</h1></body></html>';
      res.writeHead(200, { 'content-type': 'text/html', 'content-length': Buffer.byteLength(html), 'x-uni-request-id': requestId });
      res.end(html);
      return { status: 200, code: undefined };
    }
    case 'missing-data':
      writeJson(res, 200, { code: '0', message: 'Success' }, requestId);
      return { status: 200, code: '0' };
  }
}

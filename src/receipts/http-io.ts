/** The receiver's HTTP plumbing: how much of a body to drain, and its JSON answers (the body read is src/http-io.ts). */
import type { ServerResponse } from 'node:http';

/**
 * Past the limit the rest of a body is read and dropped (so the client gets its 413 instead of a
 * reset), but only up to this many times the limit; beyond that the connection is cut.
 */
const DRAIN_FACTOR = 4;

/** How much of a body is read in all before the connection is cut (see DRAIN_FACTOR). */
export function drainBytes(limit: number): number {
  return limit * DRAIN_FACTOR;
}

/** Whether a declared Content-Length is beyond what will ever be drained (answer at once, then close). */
export function declaredTooLarge(contentLength: string | undefined, limit: number): boolean {
  if (contentLength === undefined || !/^\d{1,16}$/.test(contentLength)) return false;
  return Number(contentLength) > drainBytes(limit);
}

export function writeJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  const json = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json;charset=utf-8',
    'content-length': Buffer.byteLength(json),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(json);
}

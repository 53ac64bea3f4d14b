/** The receiver's HTTP plumbing: a bounded body read and its JSON answers. */
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * Past the limit the rest of a body is read and dropped (so the client gets its 413 instead of a
 * reset), but only up to this many times the limit; beyond that the connection is cut.
 */
const DRAIN_FACTOR = 4;

export type BodyRead =
  | { readonly kind: 'body'; readonly text: string }
  | { readonly kind: 'too-large'; readonly drained: boolean }
  /** The client went away before the body ended: nothing to answer. */
  | { readonly kind: 'aborted' };

/** Reads the body up to `limit` bytes; larger bodies are reported as too large, never buffered. */
export function readBoundedBody(req: IncomingMessage, limit: number): Promise<BodyRead> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
      else if (size > limit * DRAIN_FACTOR) {
        cleanup();
        req.pause();
        resolve({ kind: 'too-large', drained: false });
      }
    };
    const onEnd = (): void => {
      cleanup();
      resolve(size > limit ? { kind: 'too-large', drained: true } : { kind: 'body', text: Buffer.concat(chunks).toString('utf8') });
    };
    // An error on the request stream ('aborted', a reset) or 'close' before 'end': the client cut
    // the connection (or the request timed out) mid-body. Nothing to answer, nothing to log.
    const onError = (): void => onClose();
    const onClose = (): void => {
      cleanup();
      resolve({ kind: 'aborted' });
    };
    req.on('data', onData);
    req.on('close', onClose);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

/** Whether a declared Content-Length is beyond what will ever be drained (answer at once, then close). */
export function declaredTooLarge(contentLength: string | undefined, limit: number): boolean {
  if (contentLength === undefined || !/^\d{1,16}$/.test(contentLength)) return false;
  return Number(contentLength) > limit * DRAIN_FACTOR;
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

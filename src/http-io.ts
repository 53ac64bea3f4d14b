/**
 * HTTP plumbing shared by the servers of this repository (the receipt receiver, the sandbox, the
 * tools' OTLP sinks): a capped body read, listening, and a header's first value.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type BodyRead =
  | { readonly kind: 'body'; readonly bytes: Buffer }
  /** `drained`: the rest of the body was read and dropped (the client can take an answer); false when the connection must be cut. */
  | { readonly kind: 'too-large'; readonly drained: boolean }
  /** The client went away before the body ended: nothing to answer. */
  | { readonly kind: 'aborted' };

/**
 * Reads the body, keeping at most `maxBytes` of it in memory: a larger one is reported as too
 * large, never buffered. Past `maxBytes` the rest is read and dropped (so the client gets its 413
 * instead of a reset) until `drainBytes` in all; beyond that the read stops, the request is paused
 * and the caller cuts the connection. By default everything is drained.
 */
export function readCappedBody(req: IncomingMessage, maxBytes: number, drainBytes = Infinity): Promise<BodyRead> {
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
      if (size <= maxBytes) chunks.push(chunk);
      else if (size > drainBytes) {
        cleanup();
        req.pause();
        resolve({ kind: 'too-large', drained: false });
      }
    };
    const onEnd = (): void => {
      cleanup();
      resolve(size > maxBytes ? { kind: 'too-large', drained: true } : { kind: 'body', bytes: Buffer.concat(chunks) });
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

/**
 * Starts `server` listening and resolves with where it listens: `host` is the bound address, in
 * brackets when IPv6 (ready for a URL), `port` the bound port (the kernel's choice for port 0).
 * Rejects when listening fails (the port is taken, the address is not local).
 */
export async function listen(server: Server, port: number, host: string): Promise<{ readonly host: string; readonly port: number }> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  return { host: address.family === 'IPv6' ? `[${address.address}]` : address.address, port: address.port };
}

/** A header's value, the first one when it was sent more than once. */
export function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

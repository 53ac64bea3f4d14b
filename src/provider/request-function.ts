/**
 * The request function handed to got (its documented `request` option), working around a
 * Node/got interaction: since Node 24.20 (nodejs/node#64847) a socket that closes before it
 * connects calls its pending write callbacks with ERR_SOCKET_CLOSED_BEFORE_CONNECTION. got 14
 * turns that second error into the promise's rejection while its retry for the first error
 * (ECONNREFUSED…) is being scheduled, so a refused connection is never retried and loses its
 * real code (sindresorhus/got#2469; fixed upstream only in got 16). The real failure always
 * arrives as the request's own 'error' event too, so the write/end callbacks drop this one.
 */
import http from 'node:http';
import https from 'node:https';
import type { ClientRequest, IncomingMessage, RequestOptions } from 'node:http';

const CLOSED_BEFORE_CONNECTION = 'ERR_SOCKET_CLOSED_BEFORE_CONNECTION';

function isClosedBeforeConnection(error: unknown): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === CLOSED_BEFORE_CONNECTION;
}

/** Same arguments, with a trailing callback that no longer sees the spurious error. */
function filterCallback(args: unknown[]): unknown[] {
  const last = args.at(-1);
  if (typeof last !== 'function') return args;
  const callback = last as (error?: unknown) => void;
  return [...args.slice(0, -1), (error?: unknown) => callback(isClosedBeforeConnection(error) ? undefined : error)];
}

export function requestFunction(url: URL, options: RequestOptions, callback?: (response: IncomingMessage) => void): ClientRequest {
  const request = (url.protocol === 'https:' ? https : http).request(url, options, callback);
  const write = request.write;
  const end = request.end;
  request.write = function (this: ClientRequest, ...args: unknown[]) {
    return Reflect.apply(write, this, filterCallback(args)) as boolean;
  } as ClientRequest['write'];
  request.end = function (this: ClientRequest, ...args: unknown[]) {
    return Reflect.apply(end, this, filterCallback(args)) as ClientRequest;
  } as ClientRequest['end'];
  return request;
}

/**
 * Authentication as the sandbox enforces it: the accessKeyId query parameter, and in HMAC mode
 * (sandbox started with a secret) the signature computed exactly as the client computes it
 * (src/provider/signing.ts), with a timestamp within 10 minutes of the sandbox's clock.
 */
import { timingSafeEqual } from 'node:crypto';
import { computeSignature, SIGNING_ALGORITHM } from '../provider/signing.ts';
import type { SandboxErrorKey } from './error-codes.ts';

export const TIMESTAMP_TOLERANCE_MS = 10 * 60 * 1000;

export interface AuthSettings {
  /** When set, only this key id is accepted. */
  readonly accessKeyId?: string | undefined;
  /** When set, every request must be HMAC-signed with it. */
  readonly accessKeySecret?: string | undefined;
}

function equalStrings(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/** Undefined when the request may proceed, else the error to answer. */
export function checkAuth(query: URLSearchParams, settings: AuthSettings, nowMs: number): SandboxErrorKey | undefined {
  const accessKeyId = query.get('accessKeyId');
  if (accessKeyId === null || accessKeyId === '') return 'missingAccessKeyId';
  if (settings.accessKeyId !== undefined && !equalStrings(accessKeyId, settings.accessKeyId)) return 'invalidAccessKeyId';
  if (settings.accessKeySecret === undefined) return undefined;

  const signature = query.get('signature');
  if (signature === null || query.get('algorithm') !== SIGNING_ALGORITHM) return 'invalidSignature';
  const timestamp = query.get('timestamp') ?? '';
  if (!/^\d{1,16}$/.test(timestamp) || Math.abs(nowMs - Number(timestamp)) > TIMESTAMP_TOLERANCE_MS) {
    return 'timestampOutOfRange';
  }
  const nonce = query.get('nonce') ?? '';
  if (nonce.length < 8 || nonce.length > 64) return 'invalidNonce';

  const params: Record<string, string> = {};
  for (const [key, value] of query) if (key !== 'signature') params[key] = value;
  if (!equalStrings(signature, computeSignature(params, settings.accessKeySecret))) return 'invalidSignature';
  return undefined;
}

/**
 * HMAC request signing, the variant of the provider's Node SDK (uni-sdk `signer.ts`):
 * the query parameters (accessKeyId, action, algorithm, nonce, timestamp) sorted by key,
 * written `k=encodeURIComponent(v)` and joined with `&`, HMAC-SHA256 with the access key
 * secret, base64 digest, sent as the `signature` query parameter. The body is not signed.
 *
 * Pure apart from `createNonce` / the clock default, so the sandbox verifies with the very same
 * function the client signs with.
 */
import { createHmac, randomBytes } from 'node:crypto';

export const SIGNING_ALGORITHM = 'hmac-sha256';

export interface SigningParams {
  readonly accessKeyId: string;
  readonly action: string;
  readonly algorithm: string;
  readonly nonce: string;
  readonly timestamp: string;
}

/** The canonical string: every param except `signature`, sorted by key, values URI-encoded. */
export function stringToSign(params: Readonly<Record<string, string>>): string {
  return Object.keys(params)
    .filter((key) => key !== 'signature')
    .sort()
    .map((key) => `${key}=${encodeURIComponent(params[key] ?? '')}`)
    .join('&');
}

export function computeSignature(params: Readonly<Record<string, string>>, secret: string): string {
  return createHmac('sha256', secret).update(stringToSign(params)).digest('base64');
}

/** 16 random hex characters: inside the 8–64 the service accepts, and unique per attempt. */
export function createNonce(): string {
  return randomBytes(8).toString('hex');
}

/**
 * The four extra query params of HMAC mode for one attempt. A fresh timestamp and nonce per
 * attempt, so a retry is never a replay of the previous signature.
 */
export function signingQuery(
  accessKeyId: string,
  action: string,
  secret: string,
  now: number = Date.now(),
  nonce: string = createNonce(),
): { algorithm: string; timestamp: string; nonce: string; signature: string } {
  const params: SigningParams = {
    accessKeyId,
    action,
    algorithm: SIGNING_ALGORITHM,
    nonce,
    timestamp: String(now),
  };
  return {
    algorithm: params.algorithm,
    timestamp: params.timestamp,
    nonce: params.nonce,
    signature: computeSignature({ ...params }, secret),
  };
}

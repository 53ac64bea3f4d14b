/**
 * Who may post reports. The service's own signature scheme for reports is not in our material, so
 * the receiver checks what the deployment controls: a secret token as the last path segment
 * (`POST <path>/<token>`, the form a callback URL in the service's console can carry) and/or
 * HTTP basic auth. Both, when both are configured. Pure: request parts in, a verdict out.
 *
 * Comparisons are constant-time over SHA-256 digests, so neither the length nor a prefix of a
 * secret leaks through timing (timingSafeEqual needs equal lengths; digests always are).
 */
import { createHash, timingSafeEqual } from 'node:crypto';

export interface ReceiverCredentials {
  /** The path token; undefined: no token in the path. */
  readonly pathToken?: string | undefined;
  /** Basic auth; undefined: no Authorization header needed. */
  readonly basic?: { readonly username: string; readonly password: string } | undefined;
}

/** Digests of the configured secrets, computed once (the secrets themselves are not kept). */
export interface CredentialDigests {
  readonly pathToken: Buffer | undefined;
  readonly basic: Buffer | undefined;
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

export function credentialDigests(credentials: ReceiverCredentials): CredentialDigests {
  return {
    pathToken: credentials.pathToken === undefined ? undefined : digest(credentials.pathToken),
    basic: credentials.basic === undefined ? undefined : digest(`${credentials.basic.username}:${credentials.basic.password}`),
  };
}

export type RouteMatch = { readonly kind: 'report'; readonly token: string | undefined } | { readonly kind: 'not-found' };

/**
 * Splits the request path: `<base>` or `<base>/<one segment>` are report routes (the segment is
 * the presented token); anything else is not found. `base` is normalised without a trailing slash.
 */
export function matchReportPath(pathname: string, base: string): RouteMatch {
  if (pathname === base) return { kind: 'report', token: undefined };
  if (!pathname.startsWith(`${base}/`)) return { kind: 'not-found' };
  const rest = pathname.slice(base.length + 1);
  if (rest === '' || rest.includes('/')) return { kind: 'not-found' };
  let token: string;
  try {
    token = decodeURIComponent(rest);
  } catch {
    return { kind: 'not-found' };
  }
  return { kind: 'report', token };
}

/** The user:password of a `Basic` Authorization header, undefined when there is none or it is malformed. */
export function basicCredentials(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const match = /^Basic\s+([A-Za-z0-9+/=]{1,1024})$/i.exec(header.trim());
  if (match === null) return undefined;
  const decoded = Buffer.from(match[1] ?? '', 'base64').toString('utf8');
  return decoded.includes(':') ? decoded : undefined;
}

function sameDigest(expected: Buffer, presented: string | undefined): boolean {
  // Always hash and compare, also when nothing was presented, so the answer takes the same time.
  const actual = digest(presented ?? '');
  return timingSafeEqual(expected, actual) && presented !== undefined;
}

/** True when the request carries every configured credential. */
export function isAuthorised(digests: CredentialDigests, presented: { token: string | undefined; authorization: string | undefined }): boolean {
  let ok = true;
  // Evaluate both checks (no short-circuit), so which one failed does not show in the timing.
  if (digests.pathToken !== undefined) ok = sameDigest(digests.pathToken, presented.token) && ok;
  else if (presented.token !== undefined) ok = false;
  if (digests.basic !== undefined) ok = sameDigest(digests.basic, basicCredentials(presented.authorization)) && ok;
  return ok;
}

/**
 * Credentials travel in the query string (accessKeyId, signature), so a URL must never be logged
 * or put in an error as is. These query params are replaced by `REDACTED`.
 */
const SECRET_PARAMS = ['accesskeyid', 'signature', 'accesskeysecret', 'secret'];

export const REDACTED = 'REDACTED';

export function redactUrl(url: string | URL): string {
  let parsed: URL;
  try {
    parsed = new URL(typeof url === 'string' ? url : url.href);
  } catch {
    return '[unparsable url]';
  }
  parsed.username = '';
  parsed.password = '';
  for (const key of [...parsed.searchParams.keys()]) {
    if (SECRET_PARAMS.includes(key.toLowerCase())) parsed.searchParams.set(key, REDACTED);
  }
  return parsed.href;
}

/**
 * Replaces every occurrence of the given secret values in text coming from outside (an error
 * message the service wrote may echo the key id back). Values shorter than 4 characters are
 * skipped: replacing them would mangle ordinary text and they protect nothing.
 */
export function redactText(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length >= 4 && out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  return out;
}

import { readFileSync } from 'node:fs';

/** The longest secret file read (a key, a password, a token: a few hundred bytes at most). */
export const MAX_SECRET_FILE_BYTES = 65_536;

/**
 * Every secret may come from a file instead of the environment (Kubernetes and Docker mount
 * secrets as files): `<NAME>_FILE` names the file, whose content is the value, one trailing line
 * break removed. Returns the environment with each such secret read into `<NAME>`; problems (both
 * given, a file that cannot be read, is empty or too large) are appended with the variable and the
 * path, never the content.
 */
export function withSecretFiles(env: NodeJS.ProcessEnv, names: readonly string[], problems: string[]): NodeJS.ProcessEnv {
  let out: NodeJS.ProcessEnv | undefined;
  for (const name of names) {
    const path = env[`${name}_FILE`]?.trim();
    if (path === undefined || path === '') continue;
    if ((env[name] ?? '').trim() !== '') {
      problems.push(`${name} and ${name}_FILE: give one, not both`);
      continue;
    }
    const value = readSecret(path, `${name}_FILE`, problems);
    if (value === undefined) continue;
    out ??= { ...env };
    out[name] = value;
  }
  return out ?? env;
}

function readSecret(path: string, variable: string, problems: string[]): string | undefined {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    problems.push(`${variable}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    return undefined;
  }
  if (bytes.length > MAX_SECRET_FILE_BYTES) {
    problems.push(`${variable}: ${path} holds ${bytes.length} bytes, more than the ${MAX_SECRET_FILE_BYTES} a secret may`);
    return undefined;
  }
  const value = bytes.toString('utf8').replace(/\r?\n$/, '');
  if (value === '') {
    problems.push(`${variable}: ${path} is empty`);
    return undefined;
  }
  return value;
}

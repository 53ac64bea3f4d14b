import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

/** This folder: the Maven POM that resolves the broker's jars sits next to the code that uses it. */
export const stackDir = import.meta.dirname;

/**
 * Everything the local stack downloads or unpacks lives here, outside git, so a second run starts
 * in seconds. `SMS_WORKER_CACHE` overrides; otherwise the XDG cache directory.
 */
export function cacheDir(): string {
  const override = process.env['SMS_WORKER_CACHE'];
  if (override !== undefined && override !== '') return resolve(override);
  const xdg = process.env['XDG_CACHE_HOME'];
  return join(xdg !== undefined && xdg !== '' ? xdg : join(homedir(), '.cache'), 'sms-worker');
}

/** Where a stack started from the command line records its processes (for `stack:down`). */
export function stackStateFile(): string {
  return join(cacheDir(), 'stack', 'state.json');
}

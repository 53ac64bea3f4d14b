/**
 * `sms-worker/<version>`, the version read once from package.json. The relative path is the same
 * from src/provider/ (run by Node directly) and dist/provider/ (built), both two levels below it.
 */
import { readFileSync } from 'node:fs';

function packageVersion(): string {
  try {
    const parsed: unknown = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    if (typeof parsed === 'object' && parsed !== null && 'version' in parsed && typeof parsed.version === 'string') {
      return parsed.version;
    }
  } catch {
    // Packaged oddly: an unknown version beats failing to start.
  }
  return '0.0.0';
}

/** The package's version (also the `service.version` of its traces). */
export const PACKAGE_VERSION = packageVersion();

export const DEFAULT_USER_AGENT = `sms-worker/${PACKAGE_VERSION}`;

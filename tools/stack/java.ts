import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { run } from './processes.ts';

export interface JavaRuntime {
  readonly path: string;
  readonly major: number;
}

async function majorVersionOf(javaPath: string): Promise<number | undefined> {
  try {
    const { code, stderr, stdout } = await run(javaPath, ['-version']);
    if (code !== 0) return undefined;
    const match = /version "(\d+)(?:\.(\d+))?/.exec(stderr + stdout);
    if (match?.[1] === undefined) return undefined;
    const first = Number(match[1]);
    // Java 8 and older report "1.8"; everything we can use reports its major first.
    return first === 1 ? Number(match[2] ?? 0) : first;
  } catch {
    return undefined;
  }
}

/**
 * Every Java runtime we can find: $JAVA_HOME, `java` on PATH, and the JDKs Debian-style machines
 * keep under /usr/lib/jvm. Sorted by preference: the default first, then newest.
 */
export async function findJavaRuntimes(): Promise<JavaRuntime[]> {
  const candidates: string[] = [];
  const javaHome = process.env['JAVA_HOME'];
  if (javaHome !== undefined && javaHome !== '') candidates.push(join(javaHome, 'bin', 'java'));
  candidates.push('java');
  for (const root of ['/usr/lib/jvm', '/usr/java', '/opt/java']) {
    if (!existsSync(root)) continue;
    for (const entry of readdirSync(root)) {
      const bin = join(root, entry, 'bin', 'java');
      if (existsSync(bin)) candidates.push(bin);
    }
  }
  const found: JavaRuntime[] = [];
  const seen = new Set<string>();
  for (const path of candidates) {
    if (seen.has(path)) continue;
    seen.add(path);
    const major = await majorVersionOf(path);
    if (major !== undefined) found.push({ path, major });
  }
  return found;
}

/** The default runtime if it is new enough, else the newest one that is. */
export function pickJava(runtimes: readonly JavaRuntime[], minimumMajor: number): JavaRuntime | undefined {
  const first = runtimes[0];
  if (first !== undefined && first.major >= minimumMajor) return first;
  return [...runtimes].filter((r) => r.major >= minimumMajor).sort((a, b) => b.major - a.major)[0];
}

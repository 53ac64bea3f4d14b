import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { JavaRuntime } from './java.ts';
import { mvn, resolveOnce } from './maven.ts';
import { cacheDir } from './paths.ts';
import { startDaemon } from './processes.ts';

/**
 * Apicurio Registry from Maven Central, run from its Quarkus distribution with in-memory storage;
 * its `/apis/ccompat/v7` API speaks the Confluent REST protocol. 3.3.x is compiled for Java 21;
 * on a machine whose newest Java is 17 the 3.0.x line (Java 17) is used instead.
 */
export interface ApicurioRelease {
  readonly version: string;
  readonly minimumJava: number;
  /** Relative to the unpacked distribution. */
  readonly jar: string;
}

export const APICURIO_RELEASES: readonly ApicurioRelease[] = [
  { version: '3.3.3', minimumJava: 21, jar: 'quarkus-run.jar' },
  { version: '3.0.9', minimumJava: 17, jar: 'apicurio-registry-app-3.0.9-runner.jar' },
];

export function pickApicurio(runtimes: readonly JavaRuntime[]): { release: ApicurioRelease; java: JavaRuntime } | undefined {
  for (const release of APICURIO_RELEASES) {
    const java = [...runtimes].filter((r) => r.major >= release.minimumJava).sort((a, b) => b.major - a.major)[0];
    if (java !== undefined) return { release, java };
  }
  return undefined;
}

export async function ensureApicurio(release: ApicurioRelease, log: (line: string) => void): Promise<string> {
  const target = join(cacheDir(), `apicurio-registry-${release.version}`);
  await resolveOnce(
    target,
    `Apicurio Registry ${release.version}`,
    async (temp) => {
      // The assembly (classifier `all`) is self-contained; its POM's own dependencies are not needed.
      await mvn(
        [
          'dependency:unpack',
          `-Dartifact=io.apicurio:apicurio-registry-app:${release.version}:tar.gz:all`,
          `-DoutputDirectory=${temp}`,
          `-DmarkersDirectory=${join(temp, '.markers')}`,
        ],
        `io.apicurio:apicurio-registry-app:${release.version}:tar.gz:all`,
        temp,
      );
      if (!existsSync(join(temp, release.jar))) throw new Error(`Apicurio ${release.version} unpacked without ${release.jar}`);
    },
    log,
  );
  return target;
}

export function startLocalApicurio(options: {
  java: string;
  home: string;
  jar: string;
  port: number;
  managementPort: number;
  workDir: string;
  detached: boolean;
}): { pid: number; logFile: string } {
  const logFile = join(options.workDir, 'registry.log');
  const child = startDaemon(options.java, ['-Xms128m', '-Xmx512m', '-Djava.awt.headless=true', '-jar', join(options.home, options.jar)], {
    cwd: options.home,
    logFile,
    detached: options.detached,
    env: {
      ...process.env,
      QUARKUS_HTTP_HOST: '127.0.0.1',
      QUARKUS_HTTP_PORT: String(options.port),
      // Quarkus's management interface defaults to 0.0.0.0:9000; two stacks on one machine would collide.
      QUARKUS_MANAGEMENT_HOST: '127.0.0.1',
      QUARKUS_MANAGEMENT_PORT: String(options.managementPort),
      // The default storage is an in-memory H2 database: a throwaway registry for tests and the demo.
      QUARKUS_LOG_LEVEL: 'WARN',
    },
  });
  if (child.pid === undefined) throw new Error('could not start the Apicurio Registry process');
  return { pid: child.pid, logFile };
}

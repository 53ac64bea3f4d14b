import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { run } from './processes.ts';

export async function mavenAvailable(): Promise<boolean> {
  try {
    return (await run('mvn', ['-v'])).code === 0;
  } catch {
    return false;
  }
}

/**
 * Materialises something Maven resolves into `target`, once: the work happens in a sibling temp
 * folder that is renamed into place only when complete, so an interrupted download is never
 * mistaken for a cached one.
 */
export async function resolveOnce(target: string, describe: string, fill: (tempDir: string) => Promise<void>, log: (line: string) => void): Promise<void> {
  const marker = join(target, '.complete');
  if (existsSync(marker)) return;
  mkdirSync(dirname(target), { recursive: true });
  const temp = `${target}.tmp-${process.pid}`;
  rmSync(temp, { recursive: true, force: true });
  mkdirSync(temp, { recursive: true });
  const started = Date.now();
  log(`stack: resolving ${describe} from Maven Central (first run only)…`);
  try {
    await fill(temp);
    writeFileSync(join(temp, '.complete'), new Date().toISOString());
    rmSync(target, { recursive: true, force: true });
    renameSync(temp, target);
  } catch (error) {
    rmSync(temp, { recursive: true, force: true });
    throw error;
  }
  log(`stack: ${describe} cached in ${target} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
}

/** Runs Maven in `cwd` (goals without a project write marker files relative to it). */
export async function mvn(args: readonly string[], what: string, cwd: string): Promise<void> {
  const result = await run('mvn', ['-q', '-B', ...args], { cwd });
  if (result.code !== 0) {
    const tail = (result.stdout + result.stderr)
      .split('\n')
      .filter((l) => l.includes('ERROR'))
      .slice(0, 5)
      .join('\n');
    throw new Error(`mvn failed to resolve ${what} (exit ${result.code}):\n${tail}`);
  }
}

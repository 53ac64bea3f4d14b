import { describeConfig, loadConfig } from '../config/index.ts';
import { ConfigError } from '../errors.ts';
import { createLogger } from '../observability/logger.ts';
import { Worker } from '../worker/worker.ts';
import { applyHeapGrowingPercent } from './heap-growing.ts';
import { warnUnknownSettings } from './unknown-settings.ts';

export const RUN_HELP = `sms-worker run — consume send commands, send them, publish one result per command

Configuration comes from environment variables (see docs/configuration.md); at least
KAFKA_BROKERS, SCHEMA_REGISTRY_URL, PROVIDER_BASE_URL and PROVIDER_ACCESS_KEY_ID.

SIGTERM/SIGINT: stop fetching, finish dispatched sends, commit, leave the group, exit 0.
A second signal, or SHUTDOWN_TIMEOUT_MS passing, forces exit 1 (nothing uncommitted is published).

Exit codes: 0 stopped cleanly · 1 failed or forced · 2 invalid configuration`;

/**
 * The worker as a process. Only here are signals handled: the first starts the graceful stop,
 * a second one (or the timeout) forces the exit.
 */
export async function runWorker(env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let config;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      return 2;
    }
    throw error;
  }
  const logger = createLogger(config.logLevel);
  logger.info({ config: describeConfig(config) }, 'configuration loaded');
  warnUnknownSettings(env, logger, 'worker');
  const worker = new Worker({ config, logger });

  let forced = false;
  const exitCode = new Promise<number>((resolve) => {
    let signals = 0;
    const onSignal = (signal: NodeJS.Signals): void => {
      signals += 1;
      if (signals === 1) {
        logger.info({ signal, timeoutMs: config.shutdownTimeoutMs }, 'shutdown requested');
        const timer = setTimeout(() => {
          forced = true;
          logger.error({ timeoutMs: config.shutdownTimeoutMs }, 'graceful shutdown timed out; forcing exit');
          worker.kill();
          resolve(1);
        }, config.shutdownTimeoutMs);
        timer.unref();
        worker.stop().then(
          () => resolve(forced ? 1 : 0),
          (error: unknown) => {
            logger.error({ err: error }, 'shutdown failed');
            resolve(1);
          },
        );
      } else {
        forced = true;
        logger.warn({ signal }, 'second signal: forcing exit');
        worker.kill();
        resolve(1);
      }
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    worker.done.catch((error: unknown) => {
      logger.fatal({ err: error }, 'worker died');
      resolve(1);
    });
  });

  // A forced exit (the timeout, a second signal) must not wait for a start stuck on a step that
  // never answers (a broker or registry that accepts connections and is silent): the start gives
  // up only at its next step. Found by the chaos run: a worker SIGTERMed during the scale-down
  // logged the forced exit after SHUTDOWN_TIMEOUT_MS and lived on until SIGKILL 30 s later.
  const started = worker.start().then(
    () => undefined,
    (error: unknown) => {
      logger.fatal({ err: error }, 'worker failed to start');
      return 1;
    },
  );
  const first = await Promise.race([started, exitCode]);
  if (first !== undefined) return first;
  // Only now: V8 checks each compile-cache entry against its flags, and this one changes them, so
  // the modules loaded until the worker is ready (kafkajs loads a protocol module at its first
  // request of each kind) are still read from the image's cache (compile-cache.ts). The heap is
  // small until the worker works; the factor matters from its first full collections under load.
  applyHeapGrowingPercent(config.heapGrowingPercent);
  return exitCode;
}

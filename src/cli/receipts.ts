import { ConfigError, coerceError } from '../errors.ts';
import { createLogger } from '../observability/logger.ts';
import { loadReceiverConfig } from '../receipts/config.ts';
import { startReceiver } from '../receipts/receiver.ts';
import { warnUnknownSettings } from './unknown-settings.ts';

export const RECEIPTS_HELP = `sms-worker receipts — receive the messaging service's delivery reports, publish them to Kafka

Accepts POST <RECEIPTS_PATH>[/<RECEIPTS_PATH_TOKEN>] on RECEIPTS_PORT (8080): one JSON report or a
list; answers 200 only after Kafka acknowledged one DeliveryReceipt per report on RECEIPTS_TOPIC
(sms.receipts); 503 when Kafka cannot be reached (the service retries). /metrics, /healthz and
/readyz are served on RECEIPTS_HTTP_PORT (9465), never on the report port.

Configuration comes from environment variables (docs/receipts.md): the worker's
KAFKA_* and SCHEMA_REGISTRY_* variables, and RECEIPTS_PATH_TOKEN and/or
RECEIPTS_BASIC_USERNAME + RECEIPTS_BASIC_PASSWORD (at least one is required).

SIGTERM/SIGINT: stop taking reports, finish posts in progress, disconnect, exit 0.
Exit codes: 0 stopped cleanly · 1 failed · 2 invalid configuration`;

/** `sms-worker receipts`: the receiver as a process, until SIGINT/SIGTERM. */
export async function runReceipts(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(RECEIPTS_HELP);
    return 0;
  }
  if (argv.length > 0) {
    console.error(`sms-worker receipts takes no arguments (got ${argv.join(' ')}); it is configured from the environment\n\n${RECEIPTS_HELP}`);
    return 2;
  }
  let config;
  try {
    config = loadReceiverConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      return 2;
    }
    throw error;
  }
  const logger = createLogger(config.logLevel, { component: 'receipts' });
  warnUnknownSettings(env, logger, 'receipts receiver');
  let receiver;
  try {
    receiver = await startReceiver(config, { logger });
  } catch (error) {
    logger.fatal({ err: coerceError(error).message }, 'receipts receiver failed to start');
    return 1;
  }
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  logger.info({ signal }, 'shutdown requested');
  await receiver.close();
  return 0;
}

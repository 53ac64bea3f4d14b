import { createKafka } from '../kafka/client.ts';
import { checkBrokerCertificate } from '../kafka/tls-check.ts';
import { createLogger } from '../observability/logger.ts';
import { ResultReader } from '../kafka/result-reader.ts';
import { traceIdOf } from '../observability/trace-headers.ts';
import { createRegistry } from '../schema/codec.ts';
import { CONNECTION_FLAGS, HELP_FLAG, parseCommandArgs, requireConnection } from './connection.ts';
import { formatTable, resultRow } from './result-table.ts';

const HELP = `sms-worker tail — print committed results (read_committed), one JSON line each

Usage: sms-worker tail [--pretty] [--from-end] [--count N] [--brokers B] [--registry URL] [--topic T]
                       [--receipts [--receipts-topic T] [--command ID]]
  --pretty     a readable table row per result instead of JSON, with the trace id the
               worker wrote on the result (traceparent header) when it traced the command
  --from-end   only results committed from now on (default: from the beginning)
  --count N    exit 0 after N results (with --receipts: after N receipts)
  --receipts   also read the delivery receipts (RECEIPTS_TOPIC, sms.receipts) and print each under
               its command, joined by message id: {"result":…} and {"receipt":…,"commandId":…} lines
  --command ID with --receipts: only this command's result and receipts
Defaults from the environment: KAFKA_BROKERS, SCHEMA_REGISTRY_URL, RESULT_TOPIC (sms.results);
TLS, SASL and registry credentials from the worker's variables (KAFKA_SSL*, KAFKA_SASL_*, SCHEMA_REGISTRY_USERNAME/PASSWORD).
Uses a throwaway consumer group and commits nothing: safe to run next to the worker.
Exit codes: 0 on Ctrl-C or after --count · 1 the topic cannot be read · 2 usage error`;

export async function runTail(argv: readonly string[]): Promise<number> {
  const parsed = parseCommandArgs(
    {
      args: [...argv],
      options: {
        ...CONNECTION_FLAGS,
        ...HELP_FLAG,
        pretty: { type: 'boolean' },
        'from-end': { type: 'boolean' },
        count: { type: 'string' },
        receipts: { type: 'boolean' },
        'receipts-topic': { type: 'string' },
        command: { type: 'string' },
      },
    },
    HELP,
  );
  const count = parsed.values.count === undefined ? undefined : Number(parsed.values.count);
  if (count !== undefined && (!Number.isInteger(count) || count < 1)) {
    console.error('--count must be a positive integer');
    return 2;
  }
  const connection = requireConnection(parsed.values, 'RESULT_TOPIC');
  if (parsed.values.receipts === true) {
    const options = {
      receiptsTopic: parsed.values['receipts-topic'] ?? process.env['RECEIPTS_TOPIC'] ?? 'sms.receipts',
      commandId: parsed.values.command,
      pretty: parsed.values.pretty === true,
      fromBeginning: parsed.values['from-end'] !== true,
      count,
    };
    return (await import('./tail-receipts.ts')).tailWithReceipts(connection, options);
  }
  if (parsed.values.command !== undefined || parsed.values['receipts-topic'] !== undefined) {
    console.error('--command and --receipts-topic go with --receipts');
    return 2;
  }
  const kafka = createKafka(connection.kafka, createLogger('silent'), `${connection.kafka.clientId}-tail`);
  const reader = new ResultReader(kafka, createRegistry(connection.registry.url, connection.registry.auth), connection.topic);
  let seen = 0;
  let printedHeader = false;
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  process.once('SIGINT', finish);
  process.once('SIGTERM', finish);
  try {
    await checkBrokerCertificate(connection.kafka);
    await reader.start(
      ({ result, headers }) => {
        if (parsed.values.pretty === true) {
          const table = formatTable([{ ...resultRow(result), traceId: traceIdOf(headers) ?? '' }]).split('\n');
          console.log((printedHeader ? table.slice(2) : table).join('\n'));
          printedHeader = true;
        } else console.log(JSON.stringify(result));
        seen += 1;
        if (count !== undefined && seen >= count) finish();
      },
      {
        fromBeginning: parsed.values['from-end'] !== true,
        onError: (error, offset) => console.error(`offset ${offset}: not a result record: ${error instanceof Error ? error.message : String(error)}`),
      },
    );
  } catch (error) {
    console.error(`cannot read ${connection.topic}: ${error instanceof Error ? error.message : String(error)}`);
    await reader.stop().catch(() => undefined);
    return 1;
  }
  await done;
  await reader.stop();
  return 0;
}

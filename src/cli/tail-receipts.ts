import { createKafka } from '../kafka/client.ts';
import { ReceiptReader } from '../kafka/receipt-reader.ts';
import { ResultReader } from '../kafka/result-reader.ts';
import { createLogger } from '../observability/logger.ts';
import { createRegistry } from '../schema/codec.ts';
import type { Connection } from './connection.ts';
import { ReceiptJoin, receiptRow, type JoinedLine } from './receipt-join.ts';
import { formatTable, resultRow } from './result-table.ts';

export interface TailReceiptsOptions {
  readonly receiptsTopic: string;
  readonly commandId: string | undefined;
  readonly pretty: boolean;
  readonly fromBeginning: boolean;
  /** Exit after this many receipts. */
  readonly count: number | undefined;
}

/**
 * Renders one joined line: JSON, or a table row for a result (with the column header when
 * `header`) and an indented line for a receipt.
 */
export function renderJoined(line: JoinedLine, pretty: boolean, header = false): string {
  if (!pretty) return JSON.stringify(line.kind === 'result' ? { result: line.result } : { receipt: line.receipt, commandId: line.commandId });
  if (line.kind === 'result')
    return formatTable([resultRow(line.result)])
      .split('\n')
      .slice(header ? 0 : 2)
      .join('\n');
  const row = receiptRow(line.receipt, line.commandId);
  return `  ↳ ${row.messageId}  ${row.outcome} (${row.status}${row.code === '' ? '' : `, ${row.code}`})${row.done === '' ? '' : `  done ${row.done}`}${line.commandId === null ? '  (command unknown)' : ''}`;
}

/** `tail --receipts`: results and their delivery receipts, joined by message id, until Ctrl-C or --count. */
export async function tailWithReceipts(connection: Connection, options: TailReceiptsOptions): Promise<number> {
  const kafka = createKafka(connection.kafka, createLogger('silent'), `${connection.kafka.clientId}-tail`);
  const registry = createRegistry(connection.registry.url, connection.registry.auth);
  const results = new ResultReader(kafka, registry, connection.topic);
  const receipts = new ReceiptReader(kafka, registry, options.receiptsTopic);
  const join = new ReceiptJoin({ commandId: options.commandId });
  let seen = 0;
  let printedHeader = false;
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  process.once('SIGINT', finish);
  process.once('SIGTERM', finish);
  const print = (lines: readonly JoinedLine[]): void => {
    for (const line of lines) {
      console.log(renderJoined(line, options.pretty, line.kind === 'result' && !printedHeader));
      if (line.kind === 'result') printedHeader = true;
      else seen += 1;
    }
    if (options.count !== undefined && seen >= options.count) finish();
  };
  const onError = (what: string) => (error: unknown, offset: string) =>
    console.error(`offset ${offset}: not a ${what} record: ${error instanceof Error ? error.message : String(error)}`);
  try {
    await results.start(({ result }) => print(join.addResult(result)), { fromBeginning: options.fromBeginning, onError: onError('result') });
    await receipts.start(({ receipt }) => print(join.addReceipt(receipt)), { fromBeginning: options.fromBeginning, onError: onError('receipt') });
  } catch (error) {
    console.error(`cannot read ${connection.topic} and ${options.receiptsTopic}: ${error instanceof Error ? error.message : String(error)}`);
    await Promise.allSettled([results.stop(), receipts.stop()]);
    return 1;
  }
  await done;
  await Promise.allSettled([results.stop(), receipts.stop()]);
  return 0;
}

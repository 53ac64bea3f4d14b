/**
 * The join behind `tail --receipts`: results and receipts arrive from two topics in any order;
 * each receipt is matched to its command through the message ids a SENT result carries
 * (messages[].id = the receipt's key). Pure and bounded: at most `maxMessages` message ids are
 * remembered and at most `maxPending` receipts wait for their result; past either bound the
 * oldest entry goes (a receipt pushed out of waiting is printed without its command).
 */
import type { CommandResult } from '../contracts/result.ts';
import type { DeliveryReceipt } from '../receipts/report.ts';

export type JoinedLine =
  | { readonly kind: 'result'; readonly result: CommandResult }
  | { readonly kind: 'receipt'; readonly receipt: DeliveryReceipt; readonly commandId: string | null };

export interface ReceiptJoinOptions {
  /** Only this command's result and receipts. */
  readonly commandId?: string | undefined;
  /** @defaultValue 100000 */
  readonly maxMessages?: number;
  /** @defaultValue 10000 */
  readonly maxPending?: number;
}

export class ReceiptJoin {
  readonly #commandId: string | undefined;
  readonly #maxMessages: number;
  readonly #maxPending: number;
  /** message id → command id, oldest first. */
  readonly #owners = new Map<string, string>();
  /** message id → receipts that arrived before their result, oldest first. */
  readonly #pending = new Map<string, DeliveryReceipt[]>();
  #pendingCount = 0;

  constructor(options: ReceiptJoinOptions = {}) {
    this.#commandId = options.commandId;
    this.#maxMessages = options.maxMessages ?? 100_000;
    this.#maxPending = options.maxPending ?? 10_000;
  }

  /** A result arrived: it, then any receipts of its messages that were waiting. */
  addResult(result: CommandResult): JoinedLine[] {
    if (this.#commandId !== undefined && result.commandId !== this.#commandId) return [];
    const lines: JoinedLine[] = [{ kind: 'result', result }];
    for (const message of result.messages) {
      this.#owners.delete(message.id);
      this.#owners.set(message.id, result.commandId);
      if (this.#owners.size > this.#maxMessages) {
        const oldest = this.#owners.keys().next();
        if (oldest.done !== true) this.#owners.delete(oldest.value);
      }
      const waiting = this.#pending.get(message.id);
      if (waiting === undefined) continue;
      this.#pending.delete(message.id);
      this.#pendingCount -= waiting.length;
      for (const receipt of waiting) lines.push({ kind: 'receipt', receipt, commandId: result.commandId });
    }
    return lines;
  }

  /** A receipt arrived: printed now when its command is known, else held (and what the bound pushes out). */
  addReceipt(receipt: DeliveryReceipt): JoinedLine[] {
    const owner = this.#owners.get(receipt.messageId);
    if (owner !== undefined) return this.#commandId === undefined || owner === this.#commandId ? [{ kind: 'receipt', receipt, commandId: owner }] : [];
    const list = this.#pending.get(receipt.messageId) ?? [];
    list.push(receipt);
    this.#pending.set(receipt.messageId, list);
    this.#pendingCount += 1;
    const evicted: JoinedLine[] = [];
    while (this.#pendingCount > this.#maxPending) {
      const oldest = this.#pending.entries().next();
      if (oldest.done === true) break;
      const [id, receipts] = oldest.value;
      this.#pending.delete(id);
      this.#pendingCount -= receipts.length;
      // Filtering by command: a receipt whose command never showed up is not that command's.
      if (this.#commandId === undefined) for (const r of receipts) evicted.push({ kind: 'receipt', receipt: r, commandId: null });
    }
    return evicted;
  }

  get waiting(): number {
    return this.#pendingCount;
  }
}

/** One readable line per receipt, for `tail --receipts --pretty` and the demo. */
export function receiptRow(receipt: DeliveryReceipt, commandId: string | null): Record<string, string> {
  return {
    commandId: commandId ?? '(unknown)',
    messageId: receipt.messageId,
    outcome: receipt.outcome,
    status: receipt.status,
    code: receipt.errorCode ?? '',
    to: receipt.to ?? '',
    done: receipt.doneDate ?? '',
  };
}

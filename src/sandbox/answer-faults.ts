/**
 * Hostile answers aimed at one command: a map from correlation id (the `X-Correlation-Id` header,
 * which the worker sets to the commandId) to the kind of hostile answer that command's requests
 * get, so a live run can make exactly one command meet a service that answers what the spec does
 * not expect. Set through POST /_sandbox/answer-faults; a targeted request skips the random and
 * queued faults (it gets exactly its hostile answer) but keeps the latency.
 *
 * Every kind is applied after the send was processed, so the command is charged and counted as
 * accepted exactly as a real service that did send it and then answered badly:
 *  - count-overflow: success envelope with `messageCount` 3000000000 in `data` and every message
 *    report (beyond a 32-bit int).
 *  - price-nan / price-negative / price-400-digits: every message report's `price` is "NaN", "-1"
 *    or 400 nines.
 *  - huge-body: the real answer, its closing brace preceded by 20 MiB of JSON whitespace (valid
 *    JSON, chunked, no content-length), so only a client that bounds what it reads refuses it.
 *  - never-ends: status, headers and the first half of the real answer, then one space per second
 *    for up to 15 minutes (defeats idle timeouts; only a total read deadline ends it), then the
 *    connection is dropped. close() of the sandbox drops it too.
 * The four envelope kinds only alter a success answer: a send the service refuses (400) gets its
 * normal error answer. huge-body and never-ends apply to whatever the answer is.
 */
import type { SuccessEnvelope } from './operations.ts';

export const ANSWER_FAULT_KINDS = ['count-overflow', 'huge-body', 'never-ends', 'price-nan', 'price-negative', 'price-400-digits'] as const;

export type AnswerFaultKind = (typeof ANSWER_FAULT_KINDS)[number];

/** Targets held at once: the map must stay bounded like everything else the sandbox keeps. */
export const MAX_ANSWER_FAULT_TARGETS = 10_000;
export const OVERFLOW_MESSAGE_COUNT = 3_000_000_000;
export const HUGE_BODY_PADDING_BYTES = 20 * 1024 * 1024;
export const NEVER_ENDS_TRICKLE_MS = 1_000;
export const NEVER_ENDS_MAX_MS = 15 * 60 * 1_000;

const HOSTILE_PRICES: Readonly<Record<'price-nan' | 'price-negative' | 'price-400-digits', string>> = {
  'price-nan': 'NaN',
  'price-negative': '-1',
  'price-400-digits': '9'.repeat(400),
};

/** Kinds that rewrite the success envelope (the others change how the answer is streamed). */
export type EnvelopeFaultKind = 'count-overflow' | keyof typeof HOSTILE_PRICES;

export function isEnvelopeFault(kind: AnswerFaultKind): kind is EnvelopeFaultKind {
  return kind !== 'huge-body' && kind !== 'never-ends';
}

/**
 * Pure: the success envelope as the hostile service writes it. The values break the spec's types
 * on purpose, so the result is plain JSON-shaped data rather than a SuccessEnvelope.
 */
export function corruptEnvelope(kind: EnvelopeFaultKind, envelope: SuccessEnvelope): Record<string, unknown> {
  const { data } = envelope;
  if (kind === 'count-overflow') {
    return {
      ...envelope,
      data: { ...data, messageCount: OVERFLOW_MESSAGE_COUNT, messages: data.messages.map((m) => ({ ...m, messageCount: OVERFLOW_MESSAGE_COUNT })) },
    };
  }
  const price = HOSTILE_PRICES[kind];
  return { ...envelope, data: { ...data, messages: data.messages.map((m) => ({ ...m, price })) } };
}

/** Pure: where the never-ending answer stops: the first half of the real answer. */
export function neverEndingPrefix(json: string): string {
  return json.slice(0, Math.max(1, Math.floor(json.length / 2)));
}

/** The targets, and how many requests each has received (bounded by the number of targets). */
export class AnswerFaults {
  readonly #targets = new Map<string, AnswerFaultKind>();
  readonly #requests = new Map<string, number>();

  /** Adds or replaces targets; throws (nothing applied) when the map would exceed its bound. */
  set(targets: Readonly<Record<string, AnswerFaultKind>>): void {
    const added = Object.keys(targets).filter((id) => !this.#targets.has(id)).length;
    if (this.#targets.size + added > MAX_ANSWER_FAULT_TARGETS) {
      throw new RangeError(`answer faults: at most ${MAX_ANSWER_FAULT_TARGETS} targets at once (have ${this.#targets.size}, adding ${added})`);
    }
    for (const [id, kind] of Object.entries(targets)) this.#targets.set(id, kind);
  }

  remove(ids: readonly string[]): void {
    for (const id of ids) {
      this.#targets.delete(id);
      this.#requests.delete(id);
    }
  }

  clear(): void {
    this.#targets.clear();
    this.#requests.clear();
  }

  /** The kind aimed at this correlation id, counting the request when there is one. */
  take(correlationId: string | undefined): AnswerFaultKind | undefined {
    if (correlationId === undefined) return undefined;
    const kind = this.#targets.get(correlationId);
    if (kind !== undefined) this.#requests.set(correlationId, (this.#requests.get(correlationId) ?? 0) + 1);
    return kind;
  }

  view(): { targets: Record<string, AnswerFaultKind>; requests: Record<string, number> } {
    return { targets: Object.fromEntries(this.#targets), requests: Object.fromEntries(this.#requests) };
  }
}

/**
 * Seconds from a command record's Kafka timestamp (epoch ms as a string: when it was published)
 * to `callStartsAt` (epoch ms). Undefined when the record has no usable timestamp (absent, not a
 * number, or Kafka's -1 for "none"). A publisher clock ahead of ours gives 0, never a negative
 * time, which would corrupt the histogram's sum.
 */
export function timeToSendSeconds(timestamp: string | undefined, callStartsAt: number): number | undefined {
  if (timestamp === undefined || timestamp.length > 20) return undefined;
  const publishedAt = Number(timestamp);
  if (!Number.isFinite(publishedAt) || publishedAt <= 0) return undefined;
  return Math.max(0, callStartsAt - publishedAt) / 1000;
}

/** A `callStarting` hook that calls `onFirst` for the first call only: time to send ends there. */
export function firstCallOnly(onFirst: () => void): () => void {
  let started = false;
  return () => {
    if (started) return;
    started = true;
    onFirst();
  };
}

/**
 * The stages of a command's time to send, in order; they add up to it. `delivery`: from its
 * publication to the worker starting to handle the record (the broker, the fetch, waiting behind
 * the partition's run-ahead bound or bytes in hand, and behind an earlier record of the same key,
 * whose whole send comes first). `preparation`: decoding, validation, the repeat
 * window, the destination screen, and for a command an earlier owner marked, waiting for its
 * handover (a moved partition's first records). `admission`: the account-wide pauses, route and cost holds,
 * the spend cap and the rate limit's token. `mark`: the ledger mark's transaction, its permit and
 * the in-flight slot (with the ledger off, the slot alone).
 */
export const SEND_STAGES = ['delivery', 'preparation', 'admission', 'mark'] as const;
export type SendStage = (typeof SEND_STAGES)[number];

/**
 * Where one command's time to send went (sms_worker_send_stage_seconds), from the times its
 * handling reached each stage; epoch ms. Told once, when its first call starts, as the time to send
 * is (a retry after a call changes nothing). They add up to the time to send, except: without a
 * usable record timestamp there is no delivery stage (and no time to send) while the others are
 * still told; a publisher clock ahead of ours gives a delivery of 0 and a time to send shorter
 * than the other stages' sum.
 */
export class SendStageClock {
  readonly #publishedAt: number | undefined;
  readonly #handledAt: number;
  #admittingAt: number | undefined;
  #markingAt: number | undefined;
  #called = false;

  constructor(timestamp: string | undefined, handledAt: number) {
    this.#publishedAt = timeToSendSeconds(timestamp, handledAt) === undefined ? undefined : Number(timestamp);
    this.#handledAt = handledAt;
  }

  /** The command asks to be admitted (the gate, holds, spend cap, rate limit). */
  admitting(at: number): void {
    this.#admittingAt ??= at;
  }

  /** Admitted: it waits for its mark and slot. */
  marking(at: number): void {
    this.#markingAt ??= at;
  }

  /** The first call starts: each stage's seconds (once; undefined afterwards). */
  calling(at: number): Partial<Record<SendStage, number>> | undefined {
    if (this.#called) return undefined;
    this.#called = true;
    const admitting = this.#admittingAt ?? this.#handledAt;
    // No mark or slot to wait for (a lane without send hooks): the way from admission is admission's.
    const marking = this.#markingAt ?? at;
    const span = (from: number, to: number): number => Math.max(0, to - from) / 1000;
    return {
      ...(this.#publishedAt !== undefined && { delivery: span(this.#publishedAt, this.#handledAt) }),
      preparation: span(this.#handledAt, admitting),
      admission: span(admitting, marking),
      mark: span(marking, at),
    };
  }
}

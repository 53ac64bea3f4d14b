/**
 * Which partitions of one producer send still wait for the broker's answer (pure: no I/O).
 *
 * kafkajs 2.2.4 (src/producer/sendMessages.js) remembers the answers of a send per broker, not per
 * partition, and retries as soon as the first of its requests fails. Both lose or double records
 * when a partition's leader moves during the send, as a broker restart among others does:
 *
 * - A partition whose leader moved to a broker that had already answered for other partitions is
 *   never sent again: the send resolves and its records are not in the log (tulios/kafkajs#1303).
 *   Seen in a transaction whose results went to the restarting broker and whose ledger checkpoint
 *   to the other: it committed with the checkpoint and the offset, without the results.
 * - A request still under way when the retry starts is sent again; if it then succeeds, the
 *   second copy goes out under the next sequence numbers, and the broker writes the records twice.
 *
 * Here each partition's records are sent until that partition is answered, and the partitioning of
 * a topic's messages is fixed at the first attempt (a keyless message must not move to another
 * partition on a retry). The sender (send-messages.ts) lets every request of an attempt settle
 * before the next attempt.
 */

export interface PartitionAnswer {
  readonly topicName: string;
  readonly partition: number;
}

interface Planned<M> {
  readonly topic: string;
  readonly partition: number;
  readonly messages: readonly M[];
}

const keyOf = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

export class ProduceProgress<M, A extends PartitionAnswer = PartitionAnswer> {
  readonly #planned = new Map<string, Planned<M>>();
  readonly #plannedTopics = new Set<string>();
  readonly #answers = new Map<string, A>();

  /** Whether `topic`'s messages were already given their partitions. */
  isPlanned(topic: string): boolean {
    return this.#plannedTopics.has(topic);
  }

  /** Fixes a topic's messages per partition; a second plan of the same topic is ignored. */
  plan(topic: string, messagesPerPartition: Readonly<Record<string, readonly M[]>>): void {
    if (this.#plannedTopics.has(topic)) return;
    this.#plannedTopics.add(topic);
    for (const [partition, messages] of Object.entries(messagesPerPartition)) {
      if (messages.length === 0) continue;
      const id = Number(partition);
      this.#planned.set(keyOf(topic, id), { topic, partition: id, messages });
    }
  }

  /** The partitions without an answer yet, per topic, in the order they were planned. */
  pending(): Map<string, Planned<M>[]> {
    const out = new Map<string, Planned<M>[]>();
    for (const [key, planned] of this.#planned) {
      if (this.#answers.has(key)) continue;
      let list = out.get(planned.topic);
      if (list === undefined) out.set(planned.topic, (list = []));
      list.push(planned);
    }
    return out;
  }

  /** Records the broker's answers of one request: those partitions are done. An answer for a partition not planned is ignored. */
  answered(answers: readonly A[]): void {
    for (const answer of answers) {
      const key = keyOf(answer.topicName, answer.partition);
      if (this.#planned.has(key)) this.#answers.set(key, answer);
    }
  }

  /** Whether every planned partition has its answer. */
  get done(): boolean {
    return this.#answers.size === this.#planned.size;
  }

  /** Every partition's answer, in the order planned (complete once `done`). */
  answers(): A[] {
    const out: A[] = [];
    for (const key of this.#planned.keys()) {
      const answer = this.#answers.get(key);
      if (answer !== undefined) out.push(answer);
    }
    return out;
  }
}

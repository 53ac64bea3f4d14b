/**
 * The deployment-wide rate limit, split by partitions: `RATE_LIMIT_PER_SECOND` is the limit of
 * the whole consumer group (the service's quota is per account, and the replica count changes
 * under an autoscaler), and each process takes the share of the command partitions it owns.
 * Re-computed on every rebalance. Pure: the wiring feeds it the assignment.
 *
 * Weighting by partitions with a backlog was considered and left out: lag moves every second and
 * a process sees only its own, so shares would need a coordination round to still add up to the
 * limit. Plain partition shares add up exactly whenever the group is settled; a partition without
 * a backlog leaves its share unused (the deployment sends less than the limit, never more).
 */

export interface RateShareInput {
  /** The deployment-wide limit, calls per second (> 0). */
  readonly limitPerSecond: number;
  /** Command partitions this process owns after the latest rebalance. */
  readonly ownedPartitions: number;
  /** Partitions of the command topic. */
  readonly totalPartitions: number;
}

/**
 * This process's calls per second: limit × owned ÷ total. A process that owns nothing keeps one
 * partition's share (it starts no new sends, but a send of a partition just taken away may still
 * be finishing, and 0 would mean "no limit" to the rate limiter). Owning more partitions than the
 * topic had at start-up (partitions added since) is capped at the whole limit.
 */
export function rateShare({ limitPerSecond, ownedPartitions, totalPartitions }: RateShareInput): number {
  if (!(limitPerSecond > 0)) throw new RangeError(`limitPerSecond must be > 0 (got ${limitPerSecond})`);
  if (!Number.isInteger(totalPartitions) || totalPartitions < 1) throw new RangeError(`totalPartitions must be an integer ≥ 1 (got ${totalPartitions})`);
  if (!Number.isInteger(ownedPartitions) || ownedPartitions < 0) throw new RangeError(`ownedPartitions must be an integer ≥ 0 (got ${ownedPartitions})`);
  const share = Math.min(totalPartitions, Math.max(1, ownedPartitions)) / totalPartitions;
  return limitPerSecond * share;
}

/**
 * Whether this member can have missed a group generation since its last assignment — if it can,
 * another member may have owned its partitions in between (fenced them, moved their offsets), and
 * no claim may be kept (docs/partition-protocol.md, "Keeping a partition").
 *
 * kafkajs does not tell a member the generation id, so continuity is read from what it does show:
 * a member that was dropped from the group (session or rebalance timeout) gets UNKNOWN_MEMBER_ID
 * at its next JoinGroup, and kafkajs then joins again under a new member id; a SyncGroup cut by a
 * newer rebalance also joins again. So: exactly one JoinGroup since the last assignment, under the
 * same member id, after a REBALANCING notice, means the new generation is the very next one.
 */
export class GroupMembership {
  #memberId: string | undefined;
  #joins = 0;
  #rebalancing = false;

  /** kafkajs sends a JoinGroup (the sticky assigner's `protocol()` is asked for this member's metadata). */
  joining(): void {
    this.#joins += 1;
  }

  /** kafkajs reported REBALANCING: this member had an assignment and rejoins for the next generation. */
  rebalancing(): void {
    this.#rebalancing = true;
    this.#joins = 0;
  }

  /** A new assignment (GROUP_JOIN): whether it is the very next generation for this same member. */
  joined(memberId: string): boolean {
    const next = this.#rebalancing && this.#joins === 1 && memberId === this.#memberId;
    this.#memberId = memberId;
    this.#joins = 0;
    this.#rebalancing = false;
    return next;
  }
}

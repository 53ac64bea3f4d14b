import { TIMING } from './model.ts';
import type { Proc } from './process.ts';
import type { World } from './world.ts';

/**
 * The consumer group: members, generations and the assignment. A rebalance waits while a member
 * is silent (frozen or dead) until its session expires; then every member retires its lanes and
 * claims its new partitions (some stay where they were, some move). A frozen member's lease
 * expires (TIMING.leaseMs) before its session does, so it has stopped sending before its
 * partitions move.
 */
export class Group {
  readonly #world: World;
  generation = 0;
  readonly members = new Set<Proc>();
  /** Members given the current generation's assignment (a member that joined since waits for the next). */
  readonly #current = new Set<Proc>();
  readonly #owners = new Map<number, Proc>();
  /** A rebalance is due once no member is silent. */
  #pending = false;

  constructor(world: World) {
    this.#world = world;
  }

  rebalance(): void {
    const world = this.#world;
    for (const member of this.members)
      if (!member.alive || member.frozen || member.consumerDown) {
        this.#pending = true;
        return;
      }
    this.#pending = false;
    this.generation += 1;
    const members = [...this.members];
    this.#current.clear();
    for (const member of members) this.#current.add(member);
    // A member shutting down takes nothing new.
    const takers = members.filter((m) => !m.leaving);
    const assignment = new Map<Proc, number[]>(members.map((m) => [m, []]));
    for (let p = 0; p < world.settings.partitions; p++) {
      const previous = this.#owners.get(p);
      const owner =
        previous !== undefined && takers.includes(previous) && world.prng.chance(0.5) ? previous : takers.length > 0 ? world.prng.pick(takers) : undefined;
      if (owner === undefined) this.#owners.delete(p);
      else {
        this.#owners.set(p, owner);
        assignment.get(owner)?.push(p);
      }
    }
    if (world.tracing)
      world.trace(`rebalance → generation ${this.generation}: ${[...this.#owners].map(([p, m]) => `p${p}→P${m.id}`).join(' ') || 'no members'}`);
    // Members learn of the rebalance at once (they hold), and of their new assignment a moment
    // later, each in its own time (a frozen one when it resumes). One that has not by the next
    // rebalance never does (kafkajs's sync fails; it joins the next generation instead).
    for (const member of members) member.rebalancing();
    const generation = this.generation;
    for (const [member, partitions] of assignment)
      world.clock.at(world.prng.int(0, 30), member, () => {
        // A consumer that crashed meanwhile hears of no assignment (its session runs out, expireLater).
        if (this.generation === generation && !member.consumerDown) member.rebalanced(generation, partitions);
      });
  }

  /** A member that shut down leaves: the others share its partitions. */
  leave(proc: Proc): void {
    this.members.delete(proc);
    this.#current.delete(proc);
    this.rebalance();
  }

  join(proc: Proc): void {
    this.members.add(proc);
    this.#current.delete(proc);
    this.rebalance();
  }

  /**
   * A member's heartbeat: confirmed in its generation (and a waiting rebalance may go on); a
   * process that joined and waits for the next generation is not confirmed in the old one; one
   * kicked out meanwhile joins again.
   */
  heartbeat(proc: Proc): void {
    // A member shutting down has left (or will leave) the group: kafkajs heartbeats no more after that.
    if (!proc.alive || proc.frozen || proc.leaving || proc.consumerDown) return;
    if (!this.members.has(proc)) return this.join(proc);
    if (this.#current.has(proc)) proc.confirm();
    if (this.#pending) this.rebalance();
  }

  /** Whether a heartbeat of `proc` succeeds now: the group is stable in the generation it was assigned (kafkajs's Heartbeat). */
  confirms(proc: Proc): boolean {
    return (
      proc.alive &&
      !proc.frozen &&
      !proc.consumerDown &&
      this.members.has(proc) &&
      this.#current.has(proc) &&
      !this.#pending &&
      proc.groupGeneration === this.generation
    );
  }

  /**
   * The member's session expires `sessionMs` after its last heartbeat, unless it spoke again (same
   * incarnation and freeze, and no heartbeat since: `confirmedAt` moves with each). Without the last
   * check, the timer of a stall long over fired in a later one, ending a session the member had
   * renewed (seed 1105359: the group gave the partition away before the stalled member's lease
   * lapsed, so its held lanes had not handed over yet).
   */
  expireLater(proc: Proc): void {
    const { incarnation, freezes, confirmedAt } = proc;
    this.#expireAt(proc, confirmedAt + TIMING.sessionMs, { incarnation, freezes, confirmedAt });
  }

  /**
   * The coordinator is away for `ms` (a restart): nobody's session ends meanwhile, and the one a
   * member had running starts afresh when it is back (the coordinator loads the group with every
   * member and schedules their sessions from then).
   */
  away(ms: number): void {
    this.#restartedAt = this.#world.now;
    this.#awayUntil = Math.max(this.#awayUntil, this.#world.now + ms);
  }

  /** The coordinator's last restart: when it went away, and when it was back. */
  #restartedAt = Number.NEGATIVE_INFINITY;
  #awayUntil = 0;

  #expireAt(proc: Proc, at: number, seen: { readonly incarnation: number; readonly freezes: number; readonly confirmedAt: number }): void {
    const world = this.#world;
    const { incarnation, freezes, confirmedAt } = seen;
    world.clock.at(Math.max(0, at - world.now), undefined, () => {
      if (proc.incarnation !== incarnation || proc.freezes !== freezes || proc.confirmedAt !== confirmedAt || !this.members.has(proc)) return;
      // A session running when the coordinator restarted ends no sooner than a whole session after it was back.
      const due = this.#restartedAt < at ? Math.max(at, this.#awayUntil + TIMING.sessionMs) : at;
      if (world.now < due) {
        this.#expireAt(proc, due, seen);
        return;
      }
      if (proc.alive && !proc.frozen && !proc.consumerDown) return;
      if (world.tracing) world.trace(`P${proc.id}'s session expired`);
      this.members.delete(proc);
      this.#current.delete(proc);
      this.rebalance();
    });
  }
}

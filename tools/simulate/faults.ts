import type { Group } from './group.ts';
import { TIMING } from './model.ts';
import type { Proc } from './process.ts';
import type { World } from './world.ts';

/**
 * Faults at random moments until `settings.faultsUntil`: crashes, shutdowns, restarts, freezes (short,
 * lapsing the lease without the group noticing, or past the session), rebalances. Transaction
 * failures and service answers are drawn where they happen. Then the world heals: no more
 * faults, and at least one process is alive.
 */
export function injectFaults(world: World, group: Group, procs: readonly Proc[]): void {
  for (const proc of procs) proc.lateFence = (land) => lateFence(world, group, procs, proc, land);
  const next = (): void => {
    const delay = world.prng.int(30, 500);
    if (world.now + delay >= world.settings.faultsUntil) {
      world.clock.at(Math.max(0, world.settings.faultsUntil - world.now), undefined, () => heal(world, group, procs));
      return;
    }
    world.clock.at(delay, undefined, () => {
      fault(world, group, procs);
      next();
    });
  };
  next();
}

function fault(world: World, group: Group, procs: readonly Proc[]): void {
  const { prng } = world;
  const alive = procs.filter((p) => p.alive);
  const dead = procs.filter((p) => !p.alive);
  const kind = prng.weighted({
    crash: alive.length > 1 ? 1 : 0.2,
    shutdown: alive.length > 1 ? 0.5 : 0,
    freeze: 2,
    rebalance: 2,
    restart: dead.length > 0 ? 1.5 : 0,
    // Last, and weighed 0 when off, so the other draws of every seed stay as they were.
    consumerRestart: world.settings.consumerRestarts ? 1 : 0,
    rejoinStall: world.settings.rejoinStalls ? 1 : 0,
    coordinatorRestart: world.settings.coordinatorRestarts ? 0.3 : 0,
  });
  if (kind === 'coordinatorRestart') return coordinatorRestart(world, group, procs);
  if (kind === 'restart') return restart(world, group, prng.pick(dead));
  if (kind === 'rebalance') {
    if (world.tracing) world.trace('fault: rebalance');
    return group.rebalance();
  }
  if (alive.length === 0) return;
  const proc = prng.pick(alive);
  if (kind === 'crash') {
    if (world.tracing) world.trace(`fault: P${proc.id} crashes`);
    world.ownerDied(`P${proc.id} crashed at t=${world.now}`, proc.death());
    proc.crash();
    group.expireLater(proc);
    return;
  }
  if (proc.frozen || proc.leaving) return;
  if (kind === 'consumerRestart') return consumerRestart(world, group, proc);
  if (kind === 'rejoinStall') return rejoinStall(world, group, proc);
  if (kind === 'shutdown') {
    const forced = prng.chance(0.5);
    if (world.tracing) world.trace(`fault: P${proc.id} shuts down${forced ? ' (sends held)' : ''}`);
    // With the ledger on, the worker leaves the group as soon as its lanes retire (worker.ts), so
    // its partitions move while its calls under way finish; with it off, only once they ended.
    const leaveFirst = world.settings.ledger;
    proc.onStopped = () => {
      if (!leaveFirst) group.leave(proc);
      // Healed with nobody left up: it comes back (someone must finish the work).
      if (!world.faulty && procs.every((p) => !p.alive || p.leaving)) restart(world, group, proc);
    };
    proc.shutdown(forced);
    if (!leaveFirst || !group.members.has(proc)) return;
    if (world.tracing) world.trace(`P${proc.id} leaves the group while its lanes finish`);
    proc.leftGroup();
    return group.leave(proc);
  }
  world.ownerDied(`P${proc.id} froze at t=${world.now}`, proc.death());
  proc.freeze();
  // The lease runs from the last confirmed heartbeat: a short freeze resumes (and heartbeats,
  // within 100 ms) before it ends; a lapse after it ends but before the session does; a long one
  // after the session (the group gives the partitions away).
  const leaseLeft = proc.confirmedAt + TIMING.leaseMs - world.now;
  const sessionLeft = proc.confirmedAt + TIMING.sessionMs - world.now;
  const drawn = prng.weighted({ short: 1, lapse: world.settings.leaseLapses ? 1 : 0, long: 1.5 });
  const length = drawn === 'short' && leaseLeft < 150 ? 'long' : drawn === 'lapse' && leaseLeft < 0 ? 'long' : drawn;
  const resumeIn = Math.max(
    1,
    length === 'short'
      ? prng.int(10, leaseLeft - 120)
      : length === 'lapse'
        ? leaseLeft + prng.int(20, TIMING.sessionMs - TIMING.leaseMs - 150)
        : sessionLeft + prng.int(50, 1_500),
  );
  if (world.tracing) world.trace(`fault: P${proc.id} freezes (${length}) for ${resumeIn}`);
  group.expireLater(proc);
  const { freezes, incarnation } = proc;
  world.clock.at(resumeIn, undefined, () => {
    if (proc.incarnation !== incarnation || proc.freezes !== freezes || !proc.frozen) return;
    if (world.tracing) world.trace(`P${proc.id} resumes`);
    proc.resume();
    world.clock.at(prng.int(0, 100), proc, () => group.heartbeat(proc));
  });
}

/**
 * A fence that lands late (RunOptions.lateFences): the process stalls right after sending it, past
 * its session, so the group gives its partitions away; the fence lands when it resumes (kafkajs
 * retrying InitProducerId after the pause), fencing whoever the partition went to. Half the time the
 * process dies right after (an OOM kill, a node gone), so no rejoin of its brings a rebalance that
 * would have the partition claimed again.
 */
function lateFence(world: World, group: Group, procs: readonly Proc[], proc: Proc, land: () => void): void {
  const { prng } = world;
  world.ownerDied(`P${proc.id} stalled with a fence under way at t=${world.now}`, proc.death());
  proc.freeze();
  group.expireLater(proc);
  const dies = prng.chance(0.5);
  const resumeIn = Math.max(1, proc.confirmedAt + TIMING.sessionMs - world.now + prng.int(50, 1_500));
  const { freezes, incarnation } = proc;
  // Its first event once it resumes (held until then, like every event of a frozen process).
  world.clock.at(0, proc, () => {
    land();
    if (!dies) return;
    if (world.tracing) world.trace(`P${proc.id} dies right after its late fence`);
    world.ownerDied(`P${proc.id} crashed at t=${world.now}`, proc.death());
    proc.crash();
    group.expireLater(proc);
    // Healed with nobody left up: it comes back (someone must finish the work).
    if (!world.faulty && procs.every((p) => !p.alive || p.leaving)) restart(world, group, proc);
  });
  world.clock.at(resumeIn, undefined, () => {
    if (proc.incarnation !== incarnation || proc.freezes !== freezes || !proc.frozen) return;
    if (world.tracing) world.trace(`P${proc.id} resumes`);
    proc.resume();
    world.clock.at(prng.int(30, 100), proc, () => group.heartbeat(proc));
  });
}

/**
 * kafkajs's consumer of a live process crashes and restarts in place (a broker restarting under
 * it): its LeaveGroup went out before the worker heard of the crash (half the time; else the broker
 * was down and the member is dropped at its session's end), and a moment later it joins again as a
 * new member, once its old membership is gone (the broker's rebalance waits for the old member
 * meanwhile). Its lanes go on meanwhile, none of them current (PartitionOwnership.outOfGroup).
 */
function consumerRestart(world: World, group: Group, proc: Proc): void {
  const { prng } = world;
  if (proc.consumerDown || proc.hasLeft) return;
  const leaves = prng.chance(0.5) && group.members.has(proc);
  if (world.tracing) world.trace(`fault: P${proc.id}'s consumer crashes and restarts in place${leaves ? ', leaving its group' : ''}`);
  proc.consumerCrashed();
  if (leaves) group.leave(proc);
  else group.expireLater(proc);
  const { incarnation } = proc;
  const rejoin = (): void => {
    if (proc.incarnation !== incarnation || !proc.alive || proc.leaving || !proc.consumerDown) return;
    if (group.members.has(proc)) return void world.clock.at(50, proc, rejoin);
    if (world.tracing) world.trace(`P${proc.id}'s consumer joins again`);
    proc.consumerDown = false;
    group.join(proc);
  };
  world.clock.at(prng.int(200, 1_500), proc, rejoin);
}

/**
 * kafkajs's consumer of a live process hears of a rebalance and its rejoin fails for a while, tried
 * again in place (consumer-crashes.ts, JOIN_RETRY): no LeaveGroup, no crash. Its lanes hold, it
 * heartbeats no more, and the group waits for it until its session runs out. Only failures before
 * any JoinGroup of it landed are tried again (a SyncGroup that failed crashes: consumerRestart), so
 * no generation is completed with it meanwhile. Its join goes through, mostly within a handover's
 * grace (JOIN_RETRY, JOIN_RETRY_WINDOW_MS), now and then later (an attempt kafkajs holds long), as
 * the same member if the group still has it, else as a new one.
 */
function rejoinStall(world: World, group: Group, proc: Proc): void {
  const { prng } = world;
  // A consumer restarted in place joins as a new member already (consumerRestart); its own stall adds nothing.
  if (proc.consumerDown || proc.outOfGroup || proc.hasLeft || !group.members.has(proc)) return;
  if (world.tracing) world.trace(`fault: P${proc.id}'s rejoin fails and is tried again in place`);
  proc.joinStalled();
  group.expireLater(proc);
  group.rebalance();
  const { incarnation } = proc;
  const stalled = (): boolean => proc.incarnation === incarnation && proc.alive && !proc.leaving && proc.consumerDown;
  // The worker begins no try after JOIN_RETRY_WINDOW_MS, well within a handover's grace, but one
  // under way is kafkajs's and can take longer (a lookup it retries itself): now and then past the
  // grace, the lease (its held lanes then retire: joinStalled) or the session (the group then gives
  // its partitions away).
  const lasts = prng.chance(0.2) ? prng.int(TIMING.handoverGraceMs, TIMING.sessionMs + 400) : prng.int(20, Math.floor(TIMING.handoverGraceMs * 0.7));
  // Past the grace its lanes' handovers may come too late: to its partitions' next owners it is as
  // good as dead, and what it holds marked and not calling may come back UNKNOWN (unknown-is-bounded).
  if (lasts >= TIMING.handoverGraceMs) world.ownerDied(`P${proc.id} stalled its rejoin past the handover grace at t=${world.now}`, proc.death());
  world.clock.at(lasts, proc, () => {
    if (!stalled()) return;
    if (world.tracing) world.trace(`P${proc.id}'s rejoin goes through${group.members.has(proc) ? '' : ' as a new member'}`);
    proc.consumerDown = false;
    group.join(proc);
  });
}

/**
 * The group coordinator restarts (RunOptions.coordinatorRestarts: the broker that hosts it killed or
 * stopped, and back): every live member stops hearing from the group at once, and its consumer
 * waits in place, keeping its member id (consumer-crashes.ts: the fetch loop's wait for a broker, a
 * rejoin tried again in place), so its lanes hold and no heartbeat renews its lease. The group
 * drops nobody for the outage: the restarted coordinator loads it with every member and starts
 * their sessions afresh (Group.away). Each member then joins again as itself, most at once, some
 * later (an attempt kafkajs holds long), now and then past a handover's grace. Only the group is
 * away here: the simulated brokers keep taking transactions and handovers (what a lost transaction
 * does is drawn where it happens, and a handover the process could not write it takes from memory:
 * src/worker/ownership/handovers.ts).
 */
function coordinatorRestart(world: World, group: Group, procs: readonly Proc[]): void {
  const { prng } = world;
  const members = procs.filter((p) => p.alive && !p.frozen && !p.leaving && !p.consumerDown && !p.outOfGroup && !p.hasLeft && group.members.has(p));
  if (members.length === 0) return;
  const down = prng.chance(0.2) ? prng.int(TIMING.handoverGraceMs, 2 * TIMING.sessionMs) : prng.int(50, Math.floor(TIMING.handoverGraceMs * 0.7));
  if (world.tracing) world.trace(`fault: the group coordinator restarts, away for ${down}`);
  group.away(down);
  for (const proc of members) {
    proc.joinStalled();
    const lasts = down + (prng.chance(0.1) ? prng.int(TIMING.handoverGraceMs, TIMING.sessionMs) : prng.int(0, 300));
    if (lasts >= TIMING.handoverGraceMs)
      world.ownerDied(`P${proc.id} stalled past the handover grace in a coordinator restart at t=${world.now}`, proc.death());
    const { incarnation } = proc;
    world.clock.at(lasts, proc, () => {
      if (proc.incarnation !== incarnation || !proc.alive || proc.leaving || !proc.consumerDown) return;
      if (world.tracing) world.trace(`P${proc.id} rejoins after the coordinator's restart${group.members.has(proc) ? '' : ' as a new member'}`);
      proc.consumerDown = false;
      group.join(proc);
    });
  }
  group.rebalance();
}

function restart(world: World, group: Group, proc: Proc): void {
  if (world.tracing) world.trace(`P${proc.id} restarts`);
  proc.restart();
  group.join(proc);
}

function heal(world: World, group: Group, procs: readonly Proc[]): void {
  world.faulty = false;
  if (world.tracing) world.trace('heal: no more faults');
  const dead = procs.filter((p) => !p.alive);
  if (dead.length > 0 && procs.every((p) => !p.alive || p.leaving)) return restart(world, group, world.prng.pick(dead));
  for (const proc of dead) if (world.prng.chance(0.5)) restart(world, group, proc);
}

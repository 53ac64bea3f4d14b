/**
 * Where each partition goes at a rebalance, keeping partitions where they are: each member keeps
 * what it owned (as it reports in its join metadata), up to its fair share, and only the rest
 * moves — to the members with the fewest. A join or a leave then moves only the partitions it
 * must, and a partition that stays keeps its claim, lane and calls under way (docs/partition-protocol.md).
 *
 * Pure: no kafkajs here (sticky-assigner.ts adapts it). Deterministic for the same input.
 */

/** Per topic, the partitions a member reports owning, the one it would rather keep first (the busiest: see `stickyPlan`). */
export type Owned = Readonly<Record<string, readonly number[]>>;

/** Per member id, per topic, the partitions it gets. */
export type Plan = Map<string, Record<string, number[]>>;

/**
 * `members`: member ids; `partitions`: per topic, every partition; `owned`: what each member
 * reports owning (missing: nothing), in the order it would keep them: a member over its share
 * gives up the last ones. The worker lists its partitions busiest first (calls under way), so the
 * ones that move are those whose new owner waits least for the old owner's calls to finish. A partition reported by two members (one of them stale: it
 * missed a generation) is kept by neither: it moves like any free one. The result is balanced per
 * topic: member counts differ by at most one. `leaving`: members shutting down (they report it in
 * their join metadata): they get nothing and keep nothing, unless every member is leaving. Two pods
 * stopped together otherwise take two rebalances: the first one's leave catches the second while it
 * finishes its calls, which then gets partitions (measured: the second's went to the remaining
 * member 140 ms later, at its own leave).
 */
export function stickyPlan(
  members: readonly string[],
  partitions: ReadonlyMap<string, readonly number[]>,
  owned: ReadonlyMap<string, Owned>,
  leaving: ReadonlySet<string> = new Set(),
): Plan {
  const everyone = [...new Set(members)].sort();
  const plan: Plan = new Map(everyone.map((id) => [id, {}]));
  const staying = everyone.filter((id) => !leaving.has(id));
  const ids = staying.length > 0 ? staying : everyone;
  if (ids.length === 0) return plan;
  for (const [topic, all] of partitions) {
    const sorted = [...new Set(all)].sort((a, b) => a - b);
    const valid = new Set(sorted);
    const claims = new Map<number, number>();
    for (const id of ids) for (const p of new Set(owned.get(id)?.[topic] ?? [])) if (valid.has(p)) claims.set(p, (claims.get(p) ?? 0) + 1);
    const base = Math.floor(sorted.length / ids.length);
    let extra = sorted.length % ids.length;
    const given = new Map<string, number[]>(ids.map((id) => [id, []]));
    const taken = new Set<number>();
    // Keep: up to the base share each, then one more for as many members as the remainder allows.
    // In the member's own order: the first are the ones it would rather keep.
    const keepable = new Map(ids.map((id) => [id, [...new Set(owned.get(id)?.[topic] ?? [])].filter((p) => valid.has(p) && claims.get(p) === 1)]));
    for (const id of ids) {
      const mine = keepable.get(id) ?? [];
      const keep = mine.slice(0, base);
      given.get(id)?.push(...keep);
      for (const p of keep) taken.add(p);
    }
    for (const id of ids) {
      if (extra === 0) break;
      const next = (keepable.get(id) ?? [])[base];
      if (next === undefined) continue;
      given.get(id)?.push(next);
      taken.add(next);
      extra -= 1;
    }
    // Move the rest, each to the member with the fewest (ties: the first id).
    for (const p of sorted) {
      if (taken.has(p)) continue;
      let target = ids[0] as string;
      for (const id of ids) if ((given.get(id)?.length ?? 0) < (given.get(target)?.length ?? 0)) target = id;
      given.get(target)?.push(p);
    }
    for (const id of ids) {
      const mine = (given.get(id) ?? []).sort((a, b) => a - b);
      if (mine.length > 0) (plan.get(id) as Record<string, number[]>)[topic] = mine;
    }
  }
  return plan;
}

/** Bound on what a member's join metadata may carry (partitions per topic × topics), so a hostile or corrupt one cannot blow up the leader. */
export const MAX_OWNED_BYTES = 64 * 1024;

/** What a member reports in its join metadata: what it owns, and whether it is shutting down. */
export interface MemberReport {
  readonly owned: Owned;
  readonly leaving: boolean;
}

/** Decodes a member's report (JSON in the metadata's user data); anything malformed or too large reports nothing, and not leaving. */
export function decodeReport(userData: Buffer | null | undefined): MemberReport {
  const none = { owned: {}, leaving: false };
  if (userData === null || userData === undefined || userData.length === 0 || userData.length > MAX_OWNED_BYTES) return none;
  try {
    const parsed: unknown = JSON.parse(userData.toString('utf8'));
    if (typeof parsed !== 'object' || parsed === null) return none;
    const leaving = (parsed as { leaving?: unknown }).leaving === true;
    const owned = (parsed as { owned?: unknown }).owned;
    if (typeof owned !== 'object' || owned === null) return { owned: {}, leaving };
    const out: Record<string, number[]> = {};
    for (const [topic, list] of Object.entries(owned)) {
      if (!Array.isArray(list)) continue;
      out[topic] = list.filter((p): p is number => Number.isInteger(p) && p >= 0);
    }
    return { owned: out, leaving };
  } catch {
    return none;
  }
}

/** A member's report; `leaving` is written only when true (members of earlier versions read `owned` alone). */
export function encodeOwned(owned: Owned, leaving = false): Buffer {
  return Buffer.from(JSON.stringify(leaving ? { owned, leaving } : { owned }), 'utf8');
}

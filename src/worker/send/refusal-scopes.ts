/**
 * What a refusal from the service is about, and who it holds back. Pure: no timers, no I/O; the
 * caller passes the time. The async waiting around it is in refusal-holds.ts.
 *
 * The service refuses some sends for reasons narrower than the account:
 * - `101301` (no valid upstream) is answered per destination: it pauses the command's **route**
 *   (operation and destination regions). A command is held by a paused route when its own regions
 *   include the route's (a command to AU and NZ is held by a pause of AU); a send that succeeds
 *   resumes every paused route of its operation whose regions it covered.
 * - `105400` (insufficient funds) is answered per command when the balance still covers smaller
 *   ones: it sets a **cost ceiling**, and only commands of that expected cost (billed units) or
 *   more are held. A cheaper send that then succeeds decides it per command: the refused command
 *   ends FAILED at once.
 *
 * Pauses widen to the whole account (the caller then closes the ServiceGate) only on evidence:
 * `101301` on `accountWideAfterRoutes` distinct routes with no send succeeding in between (within
 * `escalationWindowMs`), or `105400` for a command of the smallest cost (one billed unit).
 *
 * A held command waits at most `maxWaitMs` (it holds no in-flight slot and no ledger mark while it
 * waits), then ends FAILED with the service's code, retryable; behind a paused route, at once when
 * no probe of it is under way or due within that time (only a probe can lift it). Each hold lets one command through
 * as its probe once its probe time is reached (doubling delays, capped); for the cost ceiling the
 * cheapest waiting command, so the probe is one that can tell. Nothing here counts a command's
 * requests: the sender gives a command up at its second refusal, whatever the scope.
 */
import type { SendFootprint } from '../../contracts/validate.ts';
import { INSUFFICIENT_FUNDS_CODE, NO_UPSTREAM_CODE } from '../../provider/classify.ts';
import type { OperationName } from '../../provider/types.ts';
import { REFUSAL_DEFAULTS } from '../../config/schema.ts';

export interface ProbeDelays {
  readonly initialMs: number;
  readonly maxMs: number;
}

export interface RefusalScopeSettings {
  /** Longest a command waits behind a paused route or the cost ceiling before it ends FAILED. */
  readonly maxWaitMs: number;
  readonly routeProbe: ProbeDelays;
  readonly fundsProbe: ProbeDelays;
  /** Distinct routes refused 101301, with no success in between, that make the pause account-wide. */
  readonly accountWideAfterRoutes: number;
  /** Only refusals this recent count towards `accountWideAfterRoutes`. */
  readonly escalationWindowMs: number;
  /** Most routes paused at once; the oldest pause is dropped for a new one (it costs one more refused request). */
  readonly maxPausedRoutes: number;
}

/** The defaults (src/config/schema.ts holds them, with why): for a sender built without a configuration. */
export const DEFAULT_REFUSAL_SCOPE_SETTINGS: RefusalScopeSettings = REFUSAL_DEFAULTS;

/** What the worker paused in answer to a refusal. */
export type RefusalScope = 'route' | 'command' | 'account';

/** One command's standing with the holds, kept by the sender for the length of one send. */
export interface HoldTicket {
  readonly id: number;
  readonly footprint: SendFootprint;
  /** When it was first held (its wait is bounded from there); undefined while nothing held it. */
  heldSince: number | undefined;
  /** When the service refused it 105400 (it waits for a cheaper send to decide). */
  fundsRefusedAt: number | undefined;
  /** The holds it was let through as the probe of, if any. */
  probeOf: { readonly routes: readonly string[]; readonly funds: boolean } | undefined;
}

export type Admission =
  | { readonly kind: 'go' }
  /** Ask again at `untilMs` at the latest (or when the holds change). */
  | { readonly kind: 'wait'; readonly untilMs: number }
  /** Give the command up unsent: FAILED with the service's `code`, retryable. */
  | { readonly kind: 'give-up'; readonly code: string; readonly detail: string };

export interface PausedRoute {
  readonly key: string;
  readonly operation: OperationName;
  readonly regions: readonly string[];
  readonly since: number;
}

interface Hold {
  readonly since: number;
  delayMs: number;
  probeAt: number;
  /** The ticket probing it, if one is. */
  probing: number | undefined;
}

interface RouteHold extends Hold, PausedRoute {
  /** The command whose refusal paused the route: while it waits, it is the route's probe (its second request). */
  readonly refusedBy: number;
}

interface CostCeiling extends Hold {
  units: number;
  /** When a command below the ceiling last went through. */
  cheaperSentAt: number;
}

/** A route's name in words and in keys: `sms.message.send:AU+NZ`. */
export function routeKey(operation: OperationName, regions: readonly string[]): string {
  return `${operation}:${regions.join('+')}`;
}

/** A route for people: `text to AU+NZ`, `voice call to CN`. */
export function describeRoute(operation: OperationName, regions: readonly string[]): string {
  const where = regions.length === 0 ? 'any region' : regions.length > 8 ? `${regions.slice(0, 8).join('+')}+… (${regions.length} regions)` : regions.join('+');
  return `${operation === 'sms.message.send' ? 'text' : 'voice call'} to ${where}`;
}

function covers(regions: readonly string[], subset: readonly string[]): boolean {
  if (subset.length > regions.length) return false;
  const have = new Set(regions);
  return subset.every((region) => have.has(region));
}

export class RefusalScopes {
  readonly #s: RefusalScopeSettings;
  readonly #routes = new Map<string, RouteHold>();
  #ceiling: CostCeiling | undefined;
  /** Tickets waiting now (for the cheapest probe of the cost ceiling). */
  readonly #waiting = new Map<number, HoldTicket>();
  /** 101301 refusals since the last success: route key → when. */
  readonly #recentRefusals = new Map<string, number>();
  #nextId = 1;
  #version = 0;

  constructor(settings: RefusalScopeSettings) {
    this.#s = settings;
  }

  ticket(footprint: SendFootprint): HoldTicket {
    return { id: this.#nextId++, footprint, heldSince: undefined, fundsRefusedAt: undefined, probeOf: undefined };
  }

  /** The routes paused now, oldest first. */
  get pausedRoutes(): readonly PausedRoute[] {
    return [...this.#routes.values()].map(({ key, operation, regions, since }) => ({ key, operation, regions, since }));
  }

  /** Changes whenever the paused routes or the cost ceiling change (for metrics). */
  get version(): number {
    return this.#version;
  }

  /** The cost (billed units) at and above which commands are held, if a 105400 set one. */
  get costCeiling(): number | undefined {
    return this.#ceiling?.units;
  }

  /** Whether the ticket may send now, must wait, or is given up. Registers it as waiting when it must wait. */
  admit(ticket: HoldTicket, now: number): Admission {
    const ceiling = this.#ceiling;
    if (ticket.fundsRefusedAt !== undefined && ceiling !== undefined && ceiling.cheaperSentAt > ticket.fundsRefusedAt) {
      this.leave(ticket);
      return {
        kind: 'give-up',
        code: INSUFFICIENT_FUNDS_CODE,
        detail: `the service refused it for insufficient funds (105400) while cheaper sends still went through: the balance does not cover this command (${ticket.footprint.costUnits} billed units expected)`,
      };
    }
    const routes = this.#routesHolding(ticket.footprint);
    const byCeiling = ceiling !== undefined && ticket.footprint.costUnits >= ceiling.units ? ceiling : undefined;
    if (routes.length === 0 && byCeiling === undefined) {
      ticket.heldSince = undefined;
      this.leave(ticket);
      return { kind: 'go' };
    }
    ticket.heldSince ??= now;
    const holds: Hold[] = [...routes, ...(byCeiling === undefined ? [] : [byCeiling])];
    const due = holds.every((hold) => hold.probing === undefined && now >= hold.probeAt);
    const turn = routes.every((route) => route.refusedBy === ticket.id || !this.#waiting.has(route.refusedBy));
    if (due && turn && (byCeiling === undefined || this.#cheapestWaiting(ticket, byCeiling.units))) {
      for (const hold of holds) hold.probing = ticket.id;
      ticket.probeOf = { routes: routes.map((route) => route.key), funds: byCeiling !== undefined };
      this.leave(ticket);
      return { kind: 'go' };
    }
    const deadline = ticket.heldSince + this.#s.maxWaitMs;
    // Only a probe can lift a route's hold: when none is under way or due before the wait's end,
    // waiting cannot help, so the command ends now rather than hold its partition's results for
    // nothing. The cost ceiling is also lifted by evidence that it is the account's (a one-unit
    // command refused: the account-wide pause takes over, and nobody is failed for the account),
    // which may come any moment while an empty account refuses the sends in flight.
    const hopeless = routes.some((hold) => hold.probing === undefined && hold.probeAt > deadline);
    if (now >= deadline || hopeless) {
      this.leave(ticket);
      const waited =
        hopeless && now < deadline
          ? `its next probe is not due within the ${this.#s.maxWaitMs} ms this command may wait`
          : `it stayed refused for the ${this.#s.maxWaitMs} ms this command may wait`;
      const route = routes[0];
      if (route !== undefined) {
        return {
          kind: 'give-up',
          code: NO_UPSTREAM_CODE,
          detail: `the service has no valid upstream for ${describeRoute(route.operation, route.regions)} (101301) since ${new Date(route.since).toISOString()}; ${waited}; not sent`,
        };
      }
      return {
        kind: 'give-up',
        code: INSUFFICIENT_FUNDS_CODE,
        detail: `the service refused a command of ${byCeiling?.units ?? 0} billed units for insufficient funds (105400); this one (${ticket.footprint.costUnits} units expected) is as costly, and ${waited}; not sent`,
      };
    }
    this.#waiting.set(ticket.id, ticket);
    const nextProbe = Math.min(...holds.map((hold) => (hold.probing === undefined && hold.probeAt > now ? hold.probeAt : deadline)));
    return { kind: 'wait', untilMs: Math.min(deadline, nextProbe) };
  }

  isWaiting(ticket: HoldTicket): boolean {
    return this.#waiting.has(ticket.id);
  }

  /** The ticket no longer waits (it went, gave up or was abandoned). */
  leave(ticket: HoldTicket): void {
    this.#waiting.delete(ticket.id);
  }

  /**
   * The service refused the ticket's send with `code` (101301 or 105400): pause what the evidence
   * supports and say which scope that is. `account`: the caller pauses all sending (ServiceGate).
   */
  refused(ticket: HoldTicket, code: string, now: number): RefusalScope {
    // Every probe the ticket held goes back; the holds it probed for what was refused wait longer.
    const probeOf = ticket.probeOf;
    this.release(ticket);
    if (code === NO_UPSTREAM_CODE) {
      for (const key of probeOf?.routes ?? []) this.#backOff(this.#routes.get(key), now, this.#s.routeProbe);
      // Already explained by a paused route (a command to AU+NZ while AU is paused, in flight
      // before the pause or its probe): no new route, and no new evidence against the account.
      if (this.#routesHolding(ticket.footprint).length > 0) return 'route';
      this.#pauseRoute(ticket, now);
      const since = now - this.#s.escalationWindowMs;
      this.#recentRefusals.set(routeKey(ticket.footprint.operation, ticket.footprint.regions), now);
      let recent = 0;
      for (const [key, at] of this.#recentRefusals) {
        if (at >= since) recent += 1;
        else this.#recentRefusals.delete(key);
      }
      return recent >= this.#s.accountWideAfterRoutes ? 'account' : 'route';
    }
    if (code === INSUFFICIENT_FUNDS_CODE) {
      if (probeOf?.funds === true) this.#backOff(this.#ceiling, now, this.#s.fundsProbe);
      const units = ticket.footprint.costUnits;
      if (units <= 1) {
        // Nothing cheaper exists to tell whether the balance covers others: the account is empty.
        this.clearCostCeiling();
        return 'account';
      }
      ticket.fundsRefusedAt = now;
      const ceiling = this.#ceiling;
      if (ceiling === undefined) {
        const delayMs = this.#s.fundsProbe.initialMs;
        this.#ceiling = { units, since: now, delayMs, probeAt: now + delayMs, probing: undefined, cheaperSentAt: Number.NEGATIVE_INFINITY };
        this.#version += 1;
      } else if (units < ceiling.units) {
        ceiling.units = units;
        this.#version += 1;
      }
      return 'command';
    }
    // About this client (401/403/404/407): nothing scoped to pause.
    return 'account';
  }

  /** The ticket's send went through: resume what it proved works. */
  succeeded(ticket: HoldTicket, now: number): void {
    const { operation, regions, costUnits } = ticket.footprint;
    this.release(ticket);
    this.#recentRefusals.clear();
    for (const [key, route] of this.#routes) {
      if (route.operation === operation && covers(regions, route.regions)) {
        this.#routes.delete(key);
        this.#version += 1;
      }
    }
    const ceiling = this.#ceiling;
    if (ceiling !== undefined) {
      if (costUnits >= ceiling.units) this.clearCostCeiling();
      else ceiling.cheaperSentAt = now;
    }
  }

  /** The ticket's send ended some other way (abandoned, expired, another failure): its probes go back. */
  release(ticket: HoldTicket): void {
    const probeOf = ticket.probeOf;
    ticket.probeOf = undefined;
    this.leave(ticket);
    for (const key of probeOf?.routes ?? []) this.#release(this.#routes.get(key), ticket);
    if (probeOf?.funds === true) this.#release(this.#ceiling, ticket);
  }

  /** The account-wide pause took over (or was cleared by a probe): the cost ceiling no longer applies. */
  clearCostCeiling(): void {
    if (this.#ceiling === undefined) return;
    this.#ceiling = undefined;
    this.#version += 1;
  }

  #routesHolding(footprint: SendFootprint): RouteHold[] {
    const out: RouteHold[] = [];
    for (const route of this.#routes.values()) if (route.operation === footprint.operation && covers(footprint.regions, route.regions)) out.push(route);
    return out;
  }

  /** Whether no other command waiting at the ceiling (`units` or more) is cheaper than this one. */
  #cheapestWaiting(ticket: HoldTicket, units: number): boolean {
    for (const other of this.#waiting.values()) {
      if (other.id === ticket.id || other.footprint.costUnits < units) continue;
      if (other.footprint.costUnits < ticket.footprint.costUnits) return false;
    }
    return true;
  }

  #pauseRoute(ticket: HoldTicket, now: number): void {
    const { footprint } = ticket;
    const key = routeKey(footprint.operation, footprint.regions);
    if (this.#routes.has(key)) return;
    while (this.#routes.size >= this.#s.maxPausedRoutes) {
      const oldest = this.#routes.keys().next();
      if (oldest.done === true) break;
      this.#routes.delete(oldest.value);
    }
    this.#version += 1;
    const delayMs = this.#s.routeProbe.initialMs;
    this.#routes.set(key, {
      key,
      operation: footprint.operation,
      regions: footprint.regions,
      since: now,
      delayMs,
      probeAt: now + delayMs,
      probing: undefined,
      refusedBy: ticket.id,
    });
  }

  #backOff(hold: Hold | undefined, now: number, delays: ProbeDelays): void {
    if (hold === undefined) return;
    hold.delayMs = Math.min(delays.maxMs, hold.delayMs * 2);
    hold.probeAt = now + hold.delayMs;
    hold.probing = undefined;
  }

  #release(hold: Hold | undefined, ticket: HoldTicket): void {
    if (hold !== undefined && hold.probing === ticket.id) hold.probing = undefined;
  }
}

import type { SendFootprint } from '../contracts/validate.ts';
import { routeLabel, type WorkerMetrics } from '../metrics/metrics.ts';
import type { Logger } from '../observability/logger.ts';
import type { HoldsSnapshot } from './refusal-holds.ts';
import { describeRoute, type RefusalScope } from './refusal-scopes.ts';

interface RouteLabels {
  readonly operation: 'text' | 'voice';
  readonly region: string;
}

/**
 * Metrics and log lines of the scoped holds: one series per paused route (at most
 * maxPausedRoutes at once, removed when the route resumes), the cost ceiling, and every refusal
 * by code and scope. A route's pause and resumption are logged once each, not per command.
 */
export class RefusalReport {
  readonly #metrics: WorkerMetrics;
  readonly #log: Logger;
  /** Route key → its labels; label → how many paused routes share it (a long region list is cut). */
  readonly #routes = new Map<string, RouteLabels>();
  readonly #labelUsers = new Map<string, number>();

  constructor(metrics: WorkerMetrics, log: Logger) {
    this.#metrics = metrics;
    this.#log = log;
    metrics.pausedRoutes.set(0);
    metrics.fundsCeiling.set(0);
  }

  holdsChanged(snapshot: HoldsSnapshot): void {
    const current = new Set(snapshot.routes.map((route) => route.key));
    for (const [key, labels] of this.#routes) {
      if (current.has(key)) continue;
      this.#routes.delete(key);
      const id = `${labels.operation}|${labels.region}`;
      const users = (this.#labelUsers.get(id) ?? 1) - 1;
      if (users > 0) this.#labelUsers.set(id, users);
      else {
        this.#labelUsers.delete(id);
        this.#metrics.routePausedSince.remove({ ...labels });
      }
      this.#log.info({ route: key }, `route resumed (or its pause dropped for a newer one): ${key}`);
    }
    for (const route of snapshot.routes) {
      if (this.#routes.has(route.key)) continue;
      const labels: RouteLabels = { operation: route.operation === 'sms.message.send' ? 'text' : 'voice', region: routeLabel(route.regions) };
      this.#routes.set(route.key, labels);
      const id = `${labels.operation}|${labels.region}`;
      const users = this.#labelUsers.get(id) ?? 0;
      this.#labelUsers.set(id, users + 1);
      if (users === 0) this.#metrics.routePausedSince.set({ ...labels }, route.since / 1000);
      this.#log.warn(
        { route: route.key },
        `the service has no valid upstream for ${describeRoute(route.operation, route.regions)} (101301): that route is paused, other routes keep sending; its commands wait at most ROUTE_PAUSE_MAX_MS, then end FAILED (retryable)`,
      );
    }
    this.#metrics.pausedRoutes.set(snapshot.routes.length);
    this.#metrics.fundsCeiling.set(snapshot.costCeiling ?? 0);
  }

  refusal(code: string, scope: RefusalScope, footprint: SendFootprint): void {
    this.#metrics.refusals.inc({ code, scope });
    if (scope === 'command') {
      this.#log.warn(
        { code, costUnits: footprint.costUnits },
        `the service refused a command of ${footprint.costUnits} billed units for insufficient funds (105400): commands that large wait or fail, cheaper ones keep sending`,
      );
    }
  }
}

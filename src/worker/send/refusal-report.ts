import { DEFAULT_ACCOUNT } from '../../accounts/accounts.ts';
import type { SendFootprint } from '../../contracts/validate.ts';
import { routeLabel, type WorkerMetrics } from '../../metrics/metrics.ts';
import type { Logger } from '../../observability/logger.ts';
import type { HoldsSnapshot } from './refusal-holds.ts';
import { describeRoute, type RefusalScope } from './refusal-scopes.ts';

interface RouteLabels {
  readonly account: string;
  readonly operation: 'text' | 'voice';
  readonly region: string;
}

/**
 * Metrics and log lines of the scoped holds of each account: one series per paused route (at most
 * maxPausedRoutes at once per account, removed when the route resumes), the cost ceiling, and
 * every refusal by account, code and scope. A route's pause and resumption are logged once each,
 * not per command. With one account every series carries `account="default"`.
 */
export class RefusalReport {
  readonly #metrics: WorkerMetrics;
  readonly #log: Logger;
  /** Account and route key → its labels; label → how many paused routes share it (a long region list is cut). */
  readonly #routes = new Map<string, RouteLabels>();
  readonly #labelUsers = new Map<string, number>();

  constructor(metrics: WorkerMetrics, log: Logger, accounts: readonly string[]) {
    this.#metrics = metrics;
    this.#log = log;
    for (const account of accounts) {
      metrics.pausedRoutes.set({ account }, 0);
      metrics.fundsCeiling.set({ account }, 0);
    }
  }

  holdsChanged(snapshot: HoldsSnapshot, account: string): void {
    const current = new Set(snapshot.routes.map((route) => `${account}|${route.key}`));
    const onAccount = account === DEFAULT_ACCOUNT ? '' : ` on account ${account}`;
    for (const [key, labels] of this.#routes) {
      if (labels.account !== account || current.has(key)) continue;
      this.#routes.delete(key);
      const id = seriesOf(labels);
      const users = (this.#labelUsers.get(id) ?? 1) - 1;
      if (users > 0) this.#labelUsers.set(id, users);
      else {
        this.#labelUsers.delete(id);
        this.#metrics.routePausedSince.remove({ ...labels });
      }
      const route = key.slice(account.length + 1);
      this.#log.info({ account, route }, `route resumed${onAccount} (or its pause dropped for a newer one): ${route}`);
    }
    for (const route of snapshot.routes) {
      const key = `${account}|${route.key}`;
      if (this.#routes.has(key)) continue;
      const labels: RouteLabels = { account, operation: route.operation === 'sms.message.send' ? 'text' : 'voice', region: routeLabel(route.regions) };
      this.#routes.set(key, labels);
      const id = seriesOf(labels);
      const users = this.#labelUsers.get(id) ?? 0;
      this.#labelUsers.set(id, users + 1);
      if (users === 0) this.#metrics.routePausedSince.set({ ...labels }, route.since / 1000);
      this.#log.warn(
        { account, route: route.key },
        `the service has no valid upstream for ${describeRoute(route.operation, route.regions)}${onAccount} (101301): that route is paused there, other routes keep sending; its commands go on to their next account, or wait at most ROUTE_PAUSE_MAX_MS at their last, then end FAILED (retryable)`,
      );
    }
    this.#metrics.pausedRoutes.set({ account }, snapshot.routes.length);
    this.#metrics.fundsCeiling.set({ account }, snapshot.costCeiling ?? 0);
  }

  refusal(code: string, scope: RefusalScope, footprint: SendFootprint, account: string): void {
    this.#metrics.refusals.inc({ account, code, scope });
    if (scope === 'command') {
      this.#log.warn(
        { account, code, costUnits: footprint.costUnits },
        `the service refused a command of ${footprint.costUnits} billed units for insufficient funds (105400)${account === DEFAULT_ACCOUNT ? '' : ` on account ${account}`}: commands that large wait or fail, cheaper ones keep sending`,
      );
    }
  }
}

/** One series of the paused-route gauge: routes whose regions cut to the same label share it. */
function seriesOf(labels: RouteLabels): string {
  return `${labels.account}|${labels.operation}|${labels.region}`;
}

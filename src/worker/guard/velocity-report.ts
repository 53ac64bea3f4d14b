import type { SendCommand } from '../../contracts/command.ts';
import type { SourcePosition } from '../../contracts/result.ts';
import type { WorkerMetrics } from '../../metrics/metrics.ts';
import type { Logger } from '../../observability/logger.ts';
import type { VelocityObserver } from './destination-guard.ts';
import type { BlockedKey, VelocityMode, VelocityRefusal } from './velocity.ts';

/** Refusals a log line spells out; the rest are counted. */
const LOGGED_REFUSALS = 10;

/**
 * Metrics and logs of the velocity limits. Label values are bounded by construction: `region` is
 * a parsed number's region (libphonenumber's 245 and `001`), `rule` one of four, `kind` one of two.
 * A block is logged once, when it starts (a warning: a burst to one destination is what SMS
 * pumping looks like); each command it refuses afterwards is one info line.
 */
export function velocityReport(
  metrics: Pick<WorkerMetrics, 'velocityRejections' | 'velocityBlocks' | 'velocityBlocked' | 'tenantLabel'>,
  log: Pick<Logger, 'info' | 'warn'>,
): VelocityObserver {
  let shown = new Set<string>();
  return {
    onRefusals(refusals: readonly VelocityRefusal[], mode: VelocityMode, command: SendCommand, source: SourcePosition): void {
      for (const r of refusals)
        metrics.velocityRejections.inc({ rule: r.rule, region: r.region, mode, tenant: r.tenant === undefined ? '' : metrics.tenantLabel(r.tenant) });
      for (const r of refusals.filter((x) => x.newlyBlocked)) {
        metrics.velocityBlocks.inc({ kind: r.kind, region: r.region });
        log.warn(
          {
            kind: r.kind,
            prefix: r.prefix,
            region: r.region,
            rule: r.rule,
            limit: r.limit,
            deploymentLimit: r.deploymentLimit,
            blockedUntil: new Date(r.blockedUntil).toISOString(),
            mode,
            ...(r.tenant !== undefined && { tenant: r.tenant }),
          },
          `velocity limit: destination ${r.prefix} (region ${r.region}) is over ${r.tenant === undefined ? '' : `tenant ${r.tenant}'s `}${r.rule}; ${r.kind} blocked until ${new Date(r.blockedUntil).toISOString()}${mode === 'monitor' ? ' (VELOCITY_MODE=monitor: sent anyway)' : ''}`,
        );
      }
      log.info(
        {
          commandId: command.commandId,
          partition: source.partition,
          offset: source.offset,
          mode,
          count: refusals.length,
          refusals: refusals.slice(0, LOGGED_REFUSALS).map(({ field, prefix, region, rule }) => ({ field, prefix, region, rule })),
        },
        mode === 'enforce'
          ? `velocity limits refused ${refusals.length} recipient${refusals.length === 1 ? '' : 's'}; nothing is sent to them`
          : `velocity limits would refuse ${refusals.length} recipient${refusals.length === 1 ? '' : 's'}; sent anyway (VELOCITY_MODE=monitor)`,
      );
    },
    onBlocked(blocked: readonly BlockedKey[]): void {
      const counts = new Map<string, { kind: string; region: string; n: number }>();
      for (const { kind, region } of blocked) {
        const key = `${kind}:${region}`;
        const entry = counts.get(key) ?? { kind, region, n: 0 };
        entry.n += 1;
        counts.set(key, entry);
      }
      // Series of keys no longer blocked go to 0 rather than vanish, so a dashboard sees the end.
      for (const key of shown)
        if (!counts.has(key)) {
          const [kind = '', region = ''] = key.split(':');
          metrics.velocityBlocked.set({ kind, region }, 0);
        }
      for (const { kind, region, n } of counts.values()) metrics.velocityBlocked.set({ kind, region }, n);
      shown = new Set([...shown, ...counts.keys()]);
    },
  };
}

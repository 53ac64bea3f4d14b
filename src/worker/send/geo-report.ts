import type { SendCommand } from '../../contracts/command.ts';
import type { GeoMode, GeoRefusal } from '../../contracts/geo.ts';
import type { SourcePosition } from '../../contracts/result.ts';
import type { WorkerMetrics } from '../../metrics/metrics.ts';
import type { Logger } from '../../observability/logger.ts';

/** Refusals a log line spells out; the rest are counted. */
const LOGGED_REFUSALS = 10;

/**
 * Counts and logs the recipients of one command that are outside the geo permissions, when the
 * command is validated (before anything is sent). The `region` label is bounded by construction:
 * a parsed number's region is one of libphonenumber's 245 regions or `001`.
 */
export function reportGeoRefusals(
  metrics: Pick<WorkerMetrics, 'geoRefusals'>,
  log: Pick<Logger, 'info'>,
  mode: GeoMode,
  refusals: readonly GeoRefusal[],
  command: SendCommand,
  source: SourcePosition,
): void {
  for (const { operation, region } of refusals) metrics.geoRefusals.inc({ operation, region, mode });
  const shown = refusals.slice(0, LOGGED_REFUSALS).map(({ field, region, rule }) => ({ field, region, rule }));
  const regions = [...new Set(refusals.map((r) => r.region))].sort().join(', ');
  log.info(
    {
      commandId: command.commandId,
      partition: source.partition,
      offset: source.offset,
      operation: command.operation.kind,
      mode,
      count: refusals.length,
      refusals: shown,
    },
    mode === 'enforce'
      ? `geo permissions refused ${refusals.length} recipient${refusals.length === 1 ? '' : 's'} (regions ${regions}); nothing is sent to them`
      : `geo permissions would refuse ${refusals.length} recipient${refusals.length === 1 ? '' : 's'} (regions ${regions}); sent anyway (GEO_MODE=monitor)`,
  );
}

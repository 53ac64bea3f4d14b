/**
 * Runs a range of shipped-lane schedules, in this thread or over worker threads (`npm run simulate
 * -- --threads N`):
 * each thread takes a contiguous part of the seeds, installs the variant in its own module graph
 * (patches stay in that thread), and sends back its violations, tally and transition counts, which
 * are merged as if one thread had run them. A schedule's outcome depends on its seed alone (each
 * runs on a virtual clock of its own), so the split changes nothing but the time taken.
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { runShippedLaneSchedules, type ShippedLaneViolation } from './shipped-lane.ts';
import { installVariant, type ShippedVariant } from './shipped-variants.ts';
import { TransitionCoverage } from './transition-coverage.ts';

export interface ThreadJob {
  readonly firstSeed: number;
  readonly count: number;
  readonly ledger: boolean;
  readonly variant: ShippedVariant;
  readonly lostMarkers: boolean;
  readonly lostResultMarkers: boolean;
}

interface ThreadReport {
  readonly violations: ShippedLaneViolation[];
  readonly tally: [string, number][];
  readonly records: [string, number][];
  readonly claims: [string, number][];
}

/** One thread's part: the schedules of `job`, stopping at the first violation for a known-bad variant. */
async function runJob(job: ThreadJob): Promise<ThreadReport> {
  const tally = new Map<string, number>();
  const coverage = new TransitionCoverage();
  const { restore, faults } = installVariant(job.variant);
  try {
    const violations = await runShippedLaneSchedules(job.firstSeed, job.count, {
      ledger: job.ledger,
      lostMarkers: job.lostMarkers || job.lostResultMarkers,
      lostResultMarkers: job.lostResultMarkers,
      tally,
      faults,
      coverage,
      ...(job.variant !== 'correct' && { stopWhen: () => true }),
    });
    return { violations, tally: [...tally], records: [...coverage.records], claims: [...coverage.claims] };
  } finally {
    restore();
  }
}

function addInto(into: Map<string, number>, entries: readonly [string, number][]): void {
  for (const [key, n] of entries) into.set(key, (into.get(key) ?? 0) + n);
}

/**
 * Runs `job`'s schedules split over `threads` worker threads; adds their tallies and transition
 * counts into `tally` and `coverage`; returns the violations in seed order.
 */
export async function runInThreads(job: ThreadJob, threads: number, tally: Map<string, number>, coverage: TransitionCoverage): Promise<ShippedLaneViolation[]> {
  if (threads <= 1) {
    const report = await runJob(job);
    merge([report], tally, coverage);
    return report.violations;
  }
  const parts: ThreadJob[] = [];
  const size = Math.ceil(job.count / threads);
  for (let first = job.firstSeed; first < job.firstSeed + job.count; first += size)
    parts.push({ ...job, firstSeed: first, count: Math.min(size, job.firstSeed + job.count - first) });
  const reports = await Promise.all(
    parts.map(
      (part) =>
        new Promise<ThreadReport>((resolve, reject) => {
          const worker = new Worker(new URL(import.meta.url), { workerData: part });
          worker.once('message', (report: ThreadReport) => resolve(report));
          worker.once('error', reject);
          worker.once('exit', (code) => {
            if (code !== 0) reject(new Error(`a simulation thread (seeds ${part.firstSeed}..${part.firstSeed + part.count - 1}) exited with ${code}`));
          });
        }),
    ),
  );
  return merge(reports, tally, coverage).sort((a, b) => a.seed - b.seed);
}

function merge(reports: readonly ThreadReport[], tally: Map<string, number>, coverage: TransitionCoverage): ShippedLaneViolation[] {
  const violations: ShippedLaneViolation[] = [];
  for (const report of reports) {
    violations.push(...report.violations);
    addInto(tally, report.tally);
    addInto(coverage.records, report.records);
    addInto(coverage.claims, report.claims);
  }
  return violations;
}

if (!isMainThread && parentPort !== null) {
  const port = parentPort;
  port.postMessage(await runJob(workerData as ThreadJob));
}

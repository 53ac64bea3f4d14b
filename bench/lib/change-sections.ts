/**
 * Issue 23's bench sections, in the order run.ts runs them, each with a sandbox of its own:
 *   rolling update   3 processes, one pod of surge three times (change-run.ts);
 *   scale 1 → 3 → 1  without a rate limit (time to send), then again with RATE_LIMIT_PER_SECOND
 *                    below the load, so the limit binds and its sum across the change shows;
 *   start-up         a single worker of a running deployment (an earlier one worked on the same
 *                    topics, group and transactional ids for a few seconds, and stopped) under
 *                    the open loop from its /readyz: the first 10 s against the rest of the run.
 * A binding limit queues the open loop's commands without bound, so that pass's time to send
 * measures the queue, not the change: hence two scale passes.
 */
import type { LatencySpec } from '../../src/sandbox/faults.ts';
import { chartPodSettings, type ChartPodSettings } from './chart-settings.ts';
import { startUpLine } from './change-figures.ts';
import { machineNote } from './machine-cpu.ts';
import { changeRunLines, rollingUpdate, runChange, scaleUpAndDown, type ChangeRunFigures } from './change-run.ts';
import { fmt, ms } from './markdown.ts';
import { runOpenLoop, type OpenLoopFigures } from './open-loop.ts';
import { stagesText } from './send-stages.ts';
import type { SandboxProcess } from './sandbox.ts';
import type { ScaleOutContext } from './scale-out.ts';

/** The start-up window: the first seconds after /readyz. */
export const START_UP_FIRST_SECONDS = 10;

/**
 * Seconds an earlier worker runs on the start-up section's topics before the measured one starts:
 * every pod of every deploy starts where its topics, group and transactional ids exist. A fresh
 * install (new ids: the broker's first transactions of each) is slower in its first seconds still:
 * `node bench/startup-trace.ts` without `--restart` shows it (bench/README.md).
 */
export const START_UP_EARLIER_SECONDS = 5;

export interface ChangeSectionSettings {
  readonly latency: LatencySpec;
  readonly meanLatencyMs: number;
  readonly ratePerSecond: number;
  /** Steady seconds before the roll; 0 skips the section. */
  readonly rollingUpdateSeconds: number;
  /** Steady seconds before scaling up, and seconds at 3; 0 skips the section. */
  readonly scaleSeconds: number;
  /** RATE_LIMIT_PER_SECOND of the scale section's second pass; 0 skips that pass. */
  readonly scaleRateLimit: number;
  /** Seconds measured after the first 10; 0 skips the section. */
  readonly startUpSeconds: number;
  readonly inFlight: number;
  readonly seed: number;
}

export interface ChangeSectionFigures {
  readonly pod: ChartPodSettings;
  rollingUpdate?: ChangeRunFigures;
  scale?: ChangeRunFigures;
  scaleLimited?: ChangeRunFigures;
  startUp?: OpenLoopFigures;
}

export async function runChangeSections(
  ctx: ScaleOutContext,
  s: ChangeSectionSettings,
  withOwnSandbox: <T>(run: (sandbox: SandboxProcess) => Promise<T>) => Promise<T>,
  cleanUp: () => Promise<void>,
): Promise<ChangeSectionFigures> {
  const pod = chartPodSettings();
  const out: ChangeSectionFigures = { pod };
  const base = { latency: s.latency, ratePerSecond: s.ratePerSecond, pod, seed: s.seed };
  if (s.rollingUpdateSeconds > 0) {
    out.rollingUpdate = await withOwnSandbox((sandbox) =>
      runChange(
        { ...ctx, sandbox },
        {
          ...base,
          label: 'rolling-update',
          title: 'Rolling update (3 processes, one pod of surge, three times)',
          initialProcesses: 3,
          steadySeconds: s.rollingUpdateSeconds,
          env: {},
          change: rollingUpdate,
        },
      ),
    );
    ctx.say(changeRunLines(out.rollingUpdate, pod).join(' '));
    await cleanUp();
  }
  if (s.scaleSeconds > 0) {
    const scale = (label: string, title: string, env: Record<string, string>): Promise<ChangeRunFigures> =>
      withOwnSandbox((sandbox) =>
        runChange(
          { ...ctx, sandbox },
          { ...base, label, title, initialProcesses: 1, steadySeconds: s.scaleSeconds, env, change: scaleUpAndDown(s.scaleSeconds * 1000) },
        ),
      );
    out.scale = await scale('scale', 'Scale 1 → 3 → 1', {});
    ctx.say(changeRunLines(out.scale, pod).join(' '));
    await cleanUp();
    if (s.scaleRateLimit > 0) {
      out.scaleLimited = await scale(
        'scale-limited',
        `Scale 1 → 3 → 1 with a binding rate limit (${s.scaleRateLimit}/s under ${fmt(s.ratePerSecond)} cmd/s offered)`,
        {
          RATE_LIMIT_PER_SECOND: String(s.scaleRateLimit),
        },
      );
      ctx.say(changeRunLines(out.scaleLimited, pod).join(' '));
      await cleanUp();
    }
  }
  if (s.startUpSeconds > 0) {
    out.startUp = await withOwnSandbox((sandbox) =>
      runOpenLoop(
        { ...ctx, sandbox },
        {
          latency: s.latency,
          inFlight: s.inFlight,
          ratePerSecond: s.ratePerSecond,
          seconds: s.startUpSeconds,
          warmupSeconds: START_UP_FIRST_SECONDS,
          seed: s.seed,
          meanLatencyMs: s.meanLatencyMs,
          ledger: true,
          earlierWorkerSeconds: START_UP_EARLIER_SECONDS,
        },
        { label: 'start-up', idTag: 'su' },
      ),
    );
    ctx.say(startUpLines(out.startUp).join(' '));
    await cleanUp();
  }
  return out;
}

function startUpLines(f: OpenLoopFigures): string[] {
  const first = f.warmup;
  if (first === undefined) return [];
  return [
    `Start-up: a single worker (defaults, ledger on) of a running deployment (an earlier one worked ${START_UP_EARLIER_SECONDS} s on the same topics, group and transactional ids, and stopped), ${fmt(f.ratePerSecond)} cmd/s published from the moment its /readyz answered 200; the first ${START_UP_FIRST_SECONDS} s (${fmt(first.published)} commands: time to send p99 ${ms(first.timeToSendP99Ms)}, max ${ms(first.timeToSendMaxMs)}, p99 by second ${first.p99BySecondMs.map((v) => fmt(v)).join(', ')} ms; by stage: ${stagesText(first.stages)}${machineNote(first.machine)}) against the next ${f.seconds} s (${fmt(f.published)} commands: p50 ${ms(f.timeToSendP50Ms)}, p99 ${ms(f.timeToSendP99Ms)}, max ${ms(f.timeToSendMaxMs)}; by stage: ${stagesText(f.stages)}${machineNote(f.machine)}):`,
    startUpLine(first.timeToSendP99Ms, f.timeToSendP99Ms, START_UP_FIRST_SECONDS),
  ];
}

/** The report's lines for every section that ran. */
export function changeSectionLines(f: ChangeSectionFigures): string[] {
  const lines: string[] = [];
  for (const run of [f.rollingUpdate, f.scale, f.scaleLimited]) if (run !== undefined) lines.push(...changeRunLines(run, f.pod));
  if (f.scaleLimited !== undefined)
    lines.push(
      '  (with the limit binding, commands queue for as long as the run lasts: that pass is for the rate and the counts, its time to send measures the queue)',
    );
  if (f.startUp !== undefined) lines.push(...startUpLines(f.startUp));
  return lines;
}

/**
 * What the two bench-only pipelines (ceiling, floor) share: their settings from the environment,
 * the decode → map → validate steps the worker also runs, and a JSON summary on SIGTERM.
 */
import type { Consumer, Kafka } from 'kafkajs';
import { commandFromAvro, type SendCommand } from '../../src/contracts/command.ts';
import { expiredResult, rejectedResult, type CommandResult, type SourcePosition } from '../../src/contracts/result.ts';
import { resultToAvro } from '../../src/contracts/result-avro.ts';
import { DEFAULT_VALIDATION_POLICY, validateCommand, type Validation } from '../../src/contracts/validate.ts';
import type { ProviderRequest, ProviderSuccess } from '../../src/provider/types.ts';
import { Codec, createRegistry } from '../../src/schema/codec.ts';
import { quietKnownWarnings } from '../../src/cli/warnings.ts';
import { benchKafka } from '../lib/kafka.ts';

export interface PipelineSettings {
  readonly brokers: string;
  readonly registryUrl: string;
  readonly input: string;
  readonly output: string;
  readonly group: string;
  readonly providerUrl: string;
}

function required(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is required`);
  return value;
}

export function settingsFromEnv(): PipelineSettings {
  return {
    brokers: required('BENCH_BROKERS'),
    registryUrl: required('BENCH_REGISTRY_URL'),
    input: required('BENCH_INPUT_TOPIC'),
    output: required('BENCH_OUTPUT_TOPIC'),
    group: required('BENCH_GROUP'),
    providerUrl: process.env['BENCH_PROVIDER_URL'] ?? '',
  };
}

export async function setUp(name: string): Promise<{ settings: PipelineSettings; kafka: Kafka; codec: Codec }> {
  quietKnownWarnings();
  const settings = settingsFromEnv();
  const kafka = benchKafka(settings.brokers, `bench-${name}`, { quiet: false });
  const codec = await Codec.create(createRegistry(settings.registryUrl), { results: settings.output, deadLetter: `${settings.output}.dlq` });
  return { settings, kafka, codec };
}

export type Decoded = { readonly command: SendCommand; readonly validation: Validation } | undefined;

/** Decode, map and validate one record, as the worker does; undefined for a record that is not a command. */
export async function decodeAndValidate(codec: Codec, value: Buffer | null): Promise<Decoded> {
  const decoded = await codec.decode(value);
  if (!decoded.ok) return undefined;
  let command: SendCommand;
  try {
    command = commandFromAvro(decoded.value);
  } catch {
    return undefined;
  }
  return { command, validation: validateCommand(command, DEFAULT_VALIDATION_POLICY, Date.now()) };
}

/** The result of a command that needs no send (REJECTED/EXPIRED), or undefined when it must be sent. */
export function resultWithoutSend(command: SendCommand, validation: Validation, source: SourcePosition): CommandResult | undefined {
  const ctx = { command, source, completedAt: Date.now() };
  if (validation.kind === 'rejected') return rejectedResult(ctx, validation.problems);
  if (validation.kind === 'expired') return expiredResult(ctx, validation.expiresAt);
  return undefined;
}

/** What the service would have answered, so the ceiling encodes results of realistic size without a call. */
export function syntheticSuccess(request: ProviderRequest): ProviderSuccess {
  const to = request.operation === 'sms.message.send' ? request.body.to : [request.body.to];
  const messages = to.map((recipient, i) => ({
    id: `synthetic-${Date.now()}-${i}`,
    to: recipient,
    regionCode: 'CN',
    countryCode: '86',
    messageCount: 1,
    status: 'sent',
    upstream: 'bench',
    price: '0.045000',
  }));
  const total = (0.045 * to.length).toFixed(6);
  return {
    result: { recipients: to.length, messageCount: to.length, totalAmount: total, payAmount: total, virtualAmount: '0.000000', messages },
    requestId: undefined,
    attempts: 1,
  };
}

export async function encodeResult(codec: Codec, result: CommandResult): Promise<{ key: string; value: Buffer }> {
  return { key: result.commandId, value: await codec.encodeResult(resultToAvro(result)) };
}

/** On SIGTERM: print one JSON line (results produced, own CPU and peak RSS), clean up, exit 0. */
export function summaryOnSignal(name: string, produced: () => number, cleanup: () => Promise<void>): void {
  const onSignal = (): void => {
    const cpu = process.cpuUsage();
    const summary = { pipeline: name, produced: produced(), cpuUserUs: cpu.user, cpuSystemUs: cpu.system, maxRssBytes: process.resourceUsage().maxRSS * 1024 };
    console.log(JSON.stringify(summary));
    const force = setTimeout(() => process.exit(0), 5_000);
    force.unref();
    void cleanup().finally(() => process.exit(0));
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
}

/** A consumer that crashed for good ends the process, so the orchestrator fails fast instead of waiting. */
export function exitOnCrash(name: string, consumer: Consumer): void {
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    if (payload.restart) return;
    console.error(`${name}: consumer crashed for good: ${payload.error.message}`);
    process.exit(1);
  });
}

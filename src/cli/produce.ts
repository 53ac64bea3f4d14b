import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { pino } from 'pino';
import { createKafka } from '../kafka/client.ts';
import { checkBrokerCertificate } from '../kafka/tls-check.ts';
import { createLogger } from '../observability/logger.ts';
import { CommandPublisher } from '../kafka/command-publisher.ts';
import { tracingSettings } from '../config/tracing.ts';
import { ProduceTracer, type PublishSpan } from '../observability/produce-span.ts';
import { createRegistry } from '../schema/codec.ts';
import { parseCommandLine } from './command-json.ts';
import { burstProblem, DEFAULT_BURST_PREFIX, pumpingBurst } from './pumping-burst.ts';
import { CONNECTION_FLAGS, HELP_FLAG, parseCommandArgs, requireConnection } from './connection.ts';

const HELP = `sms-worker produce — publish send commands (JSON, one per line) to the command topic

Usage: sms-worker produce [--file F] [--brokers B] [--registry URL] [--topic T] ['<json>' ...]
       sms-worker produce --burst N [--burst-prefix +9989012] ['<json>' ...]
Input: the JSON arguments, else --file F, else standard input.
--burst N: N verification texts to random numbers of one range (default +9989012, the sandbox's
premium-range region UZ), as SMS pumping sends them: the demo of the velocity limits (VELOCITY_*).
With --burst, only the JSON arguments are added (no file, no standard input).
  {"commandId":"c1","text":{"to":["+8613800138000"],"signature":"Acme","content":"Hello"}}
  {"voice":{"to":"18509872103","code":"123456"},"expiresInSeconds":300,"key":"user-42"}
Fields: commandId (default: a UUID), key (Kafka key; default commandId), createdAt / expiresAt
(epoch ms or ISO date), expiresInSeconds, metadata {string: string}, and exactly one of
text {to, signature, content | templateId [+ templateData]} or voice {to, code}.
Defaults from the environment: KAFKA_BROKERS, SCHEMA_REGISTRY_URL, COMMAND_TOPIC (sms.commands);
TLS, SASL and registry credentials from the worker's variables (KAFKA_SSL*, KAFKA_SASL_*, SCHEMA_REGISTRY_USERNAME/PASSWORD).
Each line is checked before anything is sent; bad lines are reported as "line N: …".
Tracing: each command gets a producer span and its context in the record's traceparent header;
the trace continues TRACEPARENT/TRACESTATE from the environment when given, else starts anew.
Spans are exported when OTEL_EXPORTER_OTLP_ENDPOINT is set (the standard OTEL_* variables).
Exit codes: 0 all published · 1 some lines rejected (the valid ones are published) · 2 usage error`;

export async function runProduce(argv: readonly string[]): Promise<number> {
  const parsed = parseCommandArgs(
    {
      args: [...argv],
      options: { ...CONNECTION_FLAGS, ...HELP_FLAG, file: { type: 'string' }, burst: { type: 'string' }, 'burst-prefix': { type: 'string' } },
      allowPositionals: true,
    },
    HELP,
  );
  const connection = requireConnection(parsed.values, 'COMMAND_TOPIC');
  const tracingProblems: string[] = [];
  const tracing = tracingSettings(process.env, tracingProblems);
  if (tracingProblems.length > 0) {
    for (const problem of tracingProblems) console.error(problem);
    return 2;
  }

  const burst = parsed.values.burst;
  const burstPrefix = parsed.values['burst-prefix'] ?? DEFAULT_BURST_PREFIX;
  if (burst !== undefined) {
    const problem = burstProblem(burst, burstPrefix);
    if (problem !== undefined) {
      console.error(`${problem}\n\n${HELP}`);
      return 2;
    }
  }
  const lines: string[] =
    burst !== undefined
      ? [...pumpingBurst(Number(burst), burstPrefix), ...parsed.positionals]
      : parsed.positionals.length > 0
        ? parsed.positionals
        : await collectLines(
            createInterface({ input: parsed.values.file !== undefined ? createReadStream(parsed.values.file) : process.stdin, crlfDelay: Infinity }),
          );
  const commands = [];
  let rejected = 0;
  for (const [index, line] of lines.entries()) {
    if (line.trim() === '') continue;
    const result = parseCommandLine(line);
    if (result.ok) commands.push(result.value);
    else {
      rejected += 1;
      console.error(`line ${index + 1}: ${result.error}`);
    }
  }

  await checkBrokerCertificate(connection.kafka);
  const kafka = createKafka(connection.kafka, createLogger('silent'), `${connection.kafka.clientId}-produce`);
  const publisher = new CommandPublisher(kafka, createRegistry(connection.registry.url, connection.registry.auth), connection.topic);
  // Export problems go to stderr: stdout carries one JSON line per published command.
  const tracer = await ProduceTracer.start(tracing, process.env, pino({ level: 'warn', base: { service: 'sms-worker-produce' } }, pino.destination(2)));
  await publisher.connect((error, retryNumber, delayMs) =>
    console.error(
      `the schema registry did not answer (${error instanceof Error ? error.message : String(error)}); asking again in ${delayMs} ms (retry ${retryNumber})`,
    ),
  );
  const spans: PublishSpan[] = [];
  try {
    const encoded = [];
    const published = [];
    for (const { command, key } of commands) {
      try {
        const value = await publisher.encode(command);
        const span = tracer.span(connection.topic, command.commandId);
        spans.push(span);
        encoded.push({ key, value, headers: { 'sms-worker-produced-at': String(Date.now()), ...span.headers } });
        published.push({ published: command.commandId, key, topic: connection.topic, traceId: span.traceId });
      } catch (error) {
        rejected += 1;
        console.error(`command ${command.commandId}: does not match the command schema: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    try {
      await publisher.publishRaw(encoded);
    } catch (error) {
      for (const span of spans.splice(0)) span.end(error instanceof Error ? error : new Error(String(error)));
      throw error;
    }
    for (const span of spans.splice(0)) span.end();
    for (const line of published) console.log(JSON.stringify(line));
  } finally {
    await publisher.disconnect();
    await tracer.shutdown();
  }
  return rejected > 0 ? 1 : 0;
}

async function collectLines(lines: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const line of lines) out.push(line);
  return out;
}

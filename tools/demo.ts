import { randomUUID } from 'node:crypto';
import kafkajs from '../src/kafka/kafkajs.ts';
import { loadConfig } from '../src/config/index.ts';
import type { SendCommand } from '../src/contracts/command.ts';
import type { CommandResult } from '../src/contracts/result.ts';
import { CommandPublisher } from '../src/kafka/command-publisher.ts';
import { ResultReader } from '../src/kafka/result-reader.ts';
import { createLogger } from '../src/observability/logger.ts';
import { ReceiptReader } from '../src/kafka/receipt-reader.ts';
import { createTopics } from '../src/kafka/admin.ts';
import { loadReceiverConfig } from '../src/receipts/config.ts';
import type { DeliveryReceipt } from '../src/receipts/report.ts';
import { startReceiver } from '../src/receipts/receiver.ts';
import { startSandbox, type RunningSandbox, type SandboxAccount } from '../src/sandbox/index.ts';
import { createRegistry } from '../src/schema/codec.ts';
import { startStack } from './stack/index.ts';
import { Worker } from '../src/worker/worker.ts';
import { HELP_FLAG, parseCommandArgs } from '../src/cli/connection.ts';
import { formatTable, resultRow } from '../src/cli/result-table.ts';
import { receiptRow } from '../src/cli/receipt-join.ts';
import { DEMO_VELOCITY, showPumpingBurst } from './demo-pumping.ts';

const HELP = `sms-worker demo — the whole thing on this machine, in one command

Starts (or reuses) a local Kafka + schema registry (Docker, or Java + Maven), the messaging-service
sandbox, the worker and the delivery-receipts receiver; publishes sample commands (multi-region
text, template, voice, one invalid, one expired, one to a region without an upstream, one campaign
the balance of 20.000000 cannot cover: refused for that command only); prints their results as a
table (top up with POST <sandbox>/_sandbox/balance {"balance":"…"}), then the
delivery receipts the sandbox posted for every SENT message (joined by message id); then an SMS
pumping burst to a premium range cut by the velocity limit while a normal stream flows; then keeps
everything running until Ctrl-C.
  --once           exit after printing the results and receipts
  --log-level L    the worker's log level (default warn)
Exit codes: 0 all sample results and their receipts arrived · 1 they did not within 2 minutes or something failed`;

/** Covers every sample but the 500-recipient campaign (22.500000 at the sandbox's CN price). */
const DEMO_BALANCE = '20.000000';

/** Mobile prefixes of CN (the campaign's recipients are spread over them). */
const CN_PREFIXES = [
  '130',
  '131',
  '132',
  '133',
  '134',
  '135',
  '136',
  '137',
  '138',
  '139',
  '150',
  '151',
  '152',
  '153',
  '155',
  '156',
  '157',
  '158',
  '159',
  '180',
  '181',
  '182',
  '183',
  '184',
  '185',
  '186',
  '187',
  '188',
  '189',
  '199',
];

/** `code`: published to the priority topic (verification codes go before campaigns: docs/priority.md). */
function sampleCommands(now: number): { label: string; command: SendCommand; code?: boolean }[] {
  const id = (name: string): string => `demo-${name}-${randomUUID().slice(0, 8)}`;
  const base = { createdAt: now, expiresAt: null, metadata: { source: 'demo' } };
  return [
    {
      label: 'text to CN, US and SG in one call',
      command: {
        ...base,
        commandId: id('multi'),
        operation: { kind: 'text', to: ['+8613800138000', '+14155552671', '+6581234567'], signature: 'Acme', content: 'Your parcel is on its way.' },
      },
    },
    {
      label: 'template text',
      command: {
        ...base,
        commandId: id('template'),
        operation: { kind: 'text', to: ['13900139000'], signature: '合一短信', templateId: 'pub_verif_cn', templateData: { code: '6666', ttl: '5' } },
      },
    },
    {
      label: 'voice verification code (priority topic)',
      command: { ...base, commandId: id('voice'), operation: { kind: 'voice', to: '18509872103', code: '482913' } },
      code: true,
    },
    {
      label: 'invalid: bad number, 1-char signature',
      command: { ...base, commandId: id('invalid'), operation: { kind: 'text', to: ['+86123'], signature: 'A', content: 'never sent' } },
    },
    {
      label: 'expired before it was consumed',
      command: { ...base, commandId: id('expired'), expiresAt: now - 60_000, operation: { kind: 'voice', to: '18509872103', code: '1234' } },
    },
    {
      // The default account has no upstream for AU: 101301 pauses that route there only, and the
      // text goes on to the backup account, which has one.
      label: 'text to AU: no upstream on default, sent through backup',
      command: { ...base, commandId: id('no-route'), operation: { kind: 'text', to: ['+61412345678'], signature: 'Acme', content: 'never sent' } },
    },
    {
      // 500 CN recipients cost 22.500000, more than either account's balance: 105400 for this
      // command only, on default and then on backup.
      label: 'campaign neither balance can cover',
      command: {
        ...base,
        commandId: id('campaign'),
        // Spread over 30 number prefixes, as a real campaign's recipients are: under the demo's velocity limit per prefix.
        operation: {
          kind: 'text',
          to: Array.from({ length: 500 }, (_, n) => `+86${CN_PREFIXES[n % CN_PREFIXES.length]}${String(10_000_000 + n)}`),
          signature: 'Acme',
          content: 'Spring sale!',
        },
      },
    },
  ];
}

/** The default account runs out of money mid-run: what it refuses, and everything after, goes through backup. */
async function showFundsFailover(
  primary: RunningSandbox,
  backup: SandboxAccount,
  publisher: CommandPublisher,
  results: ReadonlyMap<string, CommandResult>,
  say: (line: string) => void,
): Promise<boolean> {
  primary.state.setBalance('0.000000');
  backup.state.setBalance('1000.000000');
  const now = Date.now();
  const commands: SendCommand[] = Array.from({ length: 5 }, (_, n) => ({
    commandId: `demo-failover-${n + 1}-${randomUUID().slice(0, 8)}`,
    createdAt: now,
    expiresAt: null,
    metadata: { source: 'demo' },
    // Number prefixes the campaign above did not use: under the demo's velocity limit per prefix.
    operation: {
      kind: 'text',
      to: [`+86${['173', '175', '176', '177', '178'][n] ?? '173'}${String(10_000_000 + n)}`],
      signature: 'Acme',
      content: 'Your order has shipped.',
    },
  }));
  await publisher.publish(commands.map((command) => ({ command })));
  say('the default account ran out of money (balance 0.000000); published 5 texts to CN');
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && !commands.every((c) => results.has(c.commandId))) await new Promise((resolve) => setTimeout(resolve, 200));
  if (!commands.every((c) => results.has(c.commandId))) {
    say(`only ${commands.filter((c) => results.has(c.commandId)).length} of ${commands.length} failover results arrived within a minute`);
    return false;
  }
  say('each one went on to backup, none sent twice (default refused the first for its funds, then stayed paused):');
  console.log(formatTable(commands.map((c) => resultRow(results.get(c.commandId) as CommandResult))));
  return true;
}

export async function runDemo(argv: readonly string[]): Promise<number> {
  const { values } = parseCommandArgs({ args: [...argv], options: { ...HELP_FLAG, once: { type: 'boolean' }, 'log-level': { type: 'string' } } }, HELP);
  const started = Date.now();
  const say = (line: string): void => console.log(`[demo ${((Date.now() - started) / 1000).toFixed(1)}s] ${line}`);
  const cleanups: (() => Promise<unknown>)[] = [];
  const cleanup = async (): Promise<void> => {
    for (const step of cleanups.reverse()) await step().catch(() => undefined);
  };
  try {
    say('starting Kafka and the schema registry…');
    const stack = await startStack({ log: say });
    cleanups.push(() => stack.stop());
    say(`stack (${stack.mode}): ${stack.description}`);

    const run = randomUUID().slice(0, 6);
    const topics = {
      commands: `demo.${run}.commands`,
      codes: `demo.${run}.codes`,
      results: `demo.${run}.results`,
      deadLetter: `demo.${run}.dlq`,
      receipts: `demo.${run}.receipts`,
    };

    // The receiver first: the sandbox needs its URL as the callback for delivery reports.
    const kafka = new kafkajs.Kafka({ clientId: 'sms-worker-demo', brokers: [stack.kafkaBrokers], logLevel: kafkajs.logLevel.ERROR });
    await createTopics(kafka, [{ topic: topics.receipts, partitions: 3 }]);
    const receiptToken = randomUUID().replaceAll('-', '');
    const receiver = await startReceiver(
      loadReceiverConfig({
        KAFKA_BROKERS: stack.kafkaBrokers,
        SCHEMA_REGISTRY_URL: stack.schemaRegistryUrl,
        RECEIPTS_TOPIC: topics.receipts,
        RECEIPTS_PATH_TOKEN: receiptToken,
        RECEIPTS_HOST: '127.0.0.1',
        RECEIPTS_PORT: '0',
        RECEIPTS_HTTP_PORT: '0',
      }),
      { logger: createLogger(values['log-level'] ?? 'warn', { component: 'receipts' }) },
    );
    cleanups.push(() => receiver.close());
    say(`delivery-receipts receiver at ${receiver.url}/receipts/<token> (metrics: http://127.0.0.1:${receiver.httpPort}/metrics)`);

    // Seeded so that a run shows both outcomes: 1 in 4 reports says failed, with an error code.
    // A balance that covers the small samples and not the campaign (the per-command funds case).
    // Two accounts of the one service, told apart by their keys (as the real service does): the
    // default one has no AU route; `backup` has one, and the same balance.
    const sandbox = await startSandbox({
      port: 0,
      seed: 15,
      balance: DEMO_BALANCE,
      accounts: [{ accessKeyId: 'demo-backup-key', balance: DEMO_BALANCE, textRoutes: { AU: { upstream: 'au.backup', price: '0.090000' } } }],
      deliveryReports: { callbackUrl: `${receiver.url}/receipts/${receiptToken}`, delayMs: 1_000, failRate: 0.25 },
    });
    cleanups.push(() => sandbox.close());
    const backup = sandbox.accounts.get('demo-backup-key');
    if (backup === undefined) throw new Error('the sandbox has no backup account');
    say(`messaging-service sandbox at ${sandbox.url} (admin: ${sandbox.url}/_sandbox/stats), posting delivery reports to the receiver`);
    say('it serves two accounts by key: default (no AU route) and backup (key demo-backup-key, with an AU route)');

    const config = loadConfig({
      KAFKA_BROKERS: stack.kafkaBrokers,
      SCHEMA_REGISTRY_URL: stack.schemaRegistryUrl,
      COMMAND_TOPIC: topics.commands,
      PRIORITY_COMMAND_TOPIC: topics.codes,
      RESULT_TOPIC: topics.results,
      DEAD_LETTER_TOPIC: topics.deadLetter,
      LEDGER_TOPIC: `${topics.commands}.ledger`,
      CONSUMER_GROUP: `demo-${run}`,
      TRANSACTIONAL_ID_PREFIX: `demo-${run}`,
      TOPICS_CREATE: 'true',
      TOPICS_PARTITIONS: '3',
      TOPICS_REPLICATION_FACTOR: '1',
      PROVIDER_BASE_URL: sandbox.url,
      PROVIDER_ACCESS_KEY_ID: 'demo-access-key',
      ACCOUNTS: 'backup',
      ACCOUNT_BACKUP_ACCESS_KEY_ID: 'demo-backup-key',
      HTTP_PORT: '0',
      LOG_LEVEL: values['log-level'] ?? 'warn',
      ...DEMO_VELOCITY,
    });
    const worker = new Worker({ config, logger: createLogger(config.logLevel) });
    cleanups.push(() => worker.stop());
    await worker.start();
    say(`worker running: metrics at http://127.0.0.1:${worker.httpPort}/metrics`);

    const registry = createRegistry(stack.schemaRegistryUrl);
    const results = new Map<string, CommandResult>();
    const reader = new ResultReader(kafka, registry, topics.results);
    cleanups.push(() => reader.stop());
    const samples = sampleCommands(Date.now());
    const allArrived = new Promise<void>((resolve) => {
      void reader.start(
        ({ result }) => {
          results.set(result.commandId, result);
          if (samples.every((s) => results.has(s.command.commandId))) resolve();
        },
        { fromBeginning: true },
      );
    });
    const receipts = new Map<string, DeliveryReceipt>();
    const receiptReader = new ReceiptReader(kafka, registry, topics.receipts);
    cleanups.push(() => receiptReader.stop());
    await receiptReader.start(({ receipt }) => void receipts.set(receipt.messageId, receipt), { fromBeginning: true });
    const publisher = new CommandPublisher(kafka, registry, topics.commands);
    await publisher.connect();
    cleanups.push(() => publisher.disconnect());
    const codePublisher = new CommandPublisher(kafka, registry, topics.codes);
    await codePublisher.connect();
    cleanups.push(() => codePublisher.disconnect());
    const codes = samples.filter((s) => s.code === true);
    await publisher.publish(samples.filter((s) => s.code !== true).map((s) => ({ command: s.command })));
    await codePublisher.publish(codes.map((s) => ({ command: s.command })));
    say(`published ${samples.length - codes.length} sample commands to ${topics.commands} and ${codes.length} to the priority topic ${topics.codes}`);

    const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 120_000).unref());
    if ((await Promise.race([allArrived, timeout])) === 'timeout') {
      say(`only ${results.size} of ${samples.length} results arrived within 2 minutes`);
      await cleanup();
      return 1;
    }
    say(`results from ${topics.results} (read_committed):`);
    console.log(formatTable(samples.map((s) => ({ sample: s.label, ...resultRow(results.get(s.command.commandId) as CommandResult) }))));
    console.log(`\nsandbox (default): ${JSON.stringify(sandbox.state.stats().byAnswerCode)} answers by code; balance ${sandbox.state.balance}`);
    console.log(`sandbox (backup):  ${JSON.stringify(backup.state.stats().byAnswerCode)} answers by code; balance ${backup.state.balance}`);

    const sentMessages = samples.flatMap((s) => (results.get(s.command.commandId)?.messages ?? []).map((m) => ({ commandId: s.command.commandId, id: m.id })));
    const receiptsArrived = async (): Promise<boolean> => {
      const deadline = Date.now() + 120_000;
      while (Date.now() < deadline) {
        if (sentMessages.every((m) => receipts.has(m.id))) return true;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      return false;
    };
    say(`waiting for the delivery receipts of ${sentMessages.length} sent messages…`);
    if (!(await receiptsArrived())) {
      say(`only ${sentMessages.filter((m) => receipts.has(m.id)).length} of ${sentMessages.length} receipts arrived within 2 minutes`);
      await cleanup();
      return 1;
    }
    say(`delivery receipts from ${topics.receipts}, joined to the results by message id:`);
    console.log(formatTable(sentMessages.map((m) => receiptRow(receipts.get(m.id) as DeliveryReceipt, m.commandId))));
    // What the burst's first 20 codes cost (1.250000 each) is more than the demo balance has left.
    sandbox.state.setBalance('1000.000000');
    say('sandbox balance topped up to 1000.000000 for the pumping burst');
    if (!(await showPumpingBurst(publisher, results, say))) {
      await cleanup();
      return 1;
    }
    if (!(await showFundsFailover(sandbox, backup, publisher, results, say))) {
      await cleanup();
      return 1;
    }
    if (values.once === true) {
      await cleanup();
      return 0;
    }
    say('everything keeps running; publish more with:');
    console.log(
      `  KAFKA_BROKERS=${stack.kafkaBrokers} SCHEMA_REGISTRY_URL=${stack.schemaRegistryUrl} COMMAND_TOPIC=${topics.commands} npm run cli -- produce '{"text":{"to":["+8613800138000"],"signature":"Acme","content":"Hi"}}'`,
    );
    console.log(
      `  KAFKA_BROKERS=${stack.kafkaBrokers} SCHEMA_REGISTRY_URL=${stack.schemaRegistryUrl} COMMAND_TOPIC=${topics.codes} npm run cli -- produce '{"voice":{"to":"18509872103","code":"123456"}}'   (a code: the priority topic)`,
    );
    console.log(
      `  KAFKA_BROKERS=${stack.kafkaBrokers} SCHEMA_REGISTRY_URL=${stack.schemaRegistryUrl} RESULT_TOPIC=${topics.results} npm run cli -- tail --pretty`,
    );
    console.log(
      `  KAFKA_BROKERS=${stack.kafkaBrokers} SCHEMA_REGISTRY_URL=${stack.schemaRegistryUrl} RESULT_TOPIC=${topics.results} RECEIPTS_TOPIC=${topics.receipts} npm run cli -- tail --receipts --pretty`,
    );
    say('Ctrl-C to stop');
    await new Promise<void>((resolve) => {
      process.once('SIGINT', () => resolve());
      process.once('SIGTERM', () => resolve());
    });
    say('stopping…');
    await cleanup();
    return 0;
  } catch (error) {
    console.error(`demo failed: ${error instanceof Error ? error.message : String(error)}`);
    await cleanup();
    return 1;
  }
}

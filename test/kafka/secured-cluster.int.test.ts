/**
 * The worker, `produce` and `tail` against a secured cluster: SASL_SSL with SCRAM-SHA-512,
 * certificates from a CA made at test time, the StandardAuthorizer, and only the ACLs
 * docs/operations.md lists. The broker is this file's own (test/helpers/secured-kafka.ts); the registry is the
 * shared one behind a loopback proxy that demands basic auth (test/helpers/registry-proxy.ts).
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { CommandResult } from '../../src/contracts/result.ts';
import { startSandbox, type RunningSandbox } from '../../src/sandbox/index.ts';
import { createTopics, eventually } from '../helpers/kafka.ts';
import { aclEntries, documentedAcls } from '../helpers/doc-acls.ts';
import { startRegistryAuthProxy, type RegistryAuthProxy } from '../helpers/registry-proxy.ts';
import { startSecuredKafka, type SaslUser, type SecuredKafka } from '../helpers/secured-kafka.ts';
import { WorkerProcess } from '../helpers/worker-process.ts';
import { testTopics, workerEnv, type TestTopics } from '../helpers/worker.ts';

const MAIN = join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts');
const PROVIDER_ACCESS_KEY_ID = `access-${randomUUID()}`;

let kafka: SecuredKafka;
let sandbox: RunningSandbox;
let registry: RegistryAuthProxy;
let topics: TestTopics;
let workerUser: SaslUser;
let cliUser: SaslUser;

beforeAll(async () => {
  [kafka, sandbox, registry] = await Promise.all([
    startSecuredKafka(['sms-worker', 'sms-cli']),
    startSandbox({ port: 0 }),
    startRegistryAuthProxy(inject('schemaRegistryUrl')),
  ]);
  workerUser = kafka.users['sms-worker'] as SaslUser;
  cliUser = kafka.users['sms-cli'] as SaslUser;
  topics = testTopics();
  const admin = kafka.client(kafka.admin, 'secured-test-admin').admin();
  await admin.connect();
  try {
    await createTopics(admin, [
      { topic: topics.commands, partitions: 2 },
      { topic: PRIORITY_TOPIC(), partitions: 2 },
      { topic: `${PRIORITY_TOPIC()}.ledger`, partitions: 2, configs: { 'cleanup.policy': 'compact' } },
      { topic: topics.results, partitions: 2 },
      { topic: topics.deadLetter },
      { topic: topics.ledger, partitions: 2, configs: { 'cleanup.policy': 'compact' } },
    ]);
    const acls = documentedAcls();
    expect(acls.map((a) => a.who)).toEqual(expect.arrayContaining(['worker', 'produce', 'tail']));
    await admin.createAcls({
      acl: aclEntries(
        acls,
        {
          COMMAND_TOPIC: topics.commands,
          PRIORITY_COMMAND_TOPIC: PRIORITY_TOPIC(),
          PRIORITY_CONSUMER_GROUP: `${topics.group}-priority`,
          PRIORITY_LEDGER_TOPIC: `${PRIORITY_TOPIC()}.ledger`,
          RESULT_TOPIC: topics.results,
          DEAD_LETTER_TOPIC: topics.deadLetter,
          LEDGER_TOPIC: topics.ledger,
          CONSUMER_GROUP: topics.group,
          TRANSACTIONAL_ID_PREFIX: topics.transactionalIdPrefix,
        },
        { worker: workerUser.username, produce: cliUser.username, tail: cliUser.username },
      ),
    });
  } finally {
    await admin.disconnect();
  }
}, 240_000);

afterAll(async () => {
  await Promise.all([kafka?.stop(), sandbox?.close(), registry?.close()]);
});

/** The connection variables for a user; `caFile` is the CA the client trusts. */
function securedEnv(user: SaslUser, caFile = kafka.caFile): Record<string, string> {
  return {
    KAFKA_BROKERS: kafka.bootstrap,
    KAFKA_SSL: 'true',
    KAFKA_SSL_CA_FILE: caFile,
    KAFKA_SASL_MECHANISM: 'scram-sha-512',
    KAFKA_SASL_USERNAME: user.username,
    KAFKA_SASL_PASSWORD: user.password,
    SCHEMA_REGISTRY_URL: registry.url,
    SCHEMA_REGISTRY_USERNAME: registry.username,
    SCHEMA_REGISTRY_PASSWORD: registry.password,
  };
}

/** The worker's high-priority command topic, in its default group (CONSUMER_GROUP-priority), with its default ledger (<topic>.ledger). */
const PRIORITY_TOPIC = (): string => `${topics.commands}.codes`;

function secureWorkerEnv(user: SaslUser, caFile?: string): Record<string, string> {
  return workerEnv(topics, sandbox.url, {
    ...securedEnv(user, caFile),
    TOPICS_CREATE: 'false',
    PROVIDER_ACCESS_KEY_ID,
    PRIORITY_COMMAND_TOPIC: PRIORITY_TOPIC(),
  });
}

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a shipped CLI command as its own process, with only the given environment. */
function cli(args: readonly string[], env: Record<string, string>, timeoutMs = 90_000): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], { env: { PATH: process.env['PATH'] ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`sms-worker ${args[0] ?? ''} did not exit within ${timeoutMs} ms:\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** No password, key or access key id of this test in any output. */
function expectNoSecret(output: string, ...extra: string[]): void {
  for (const secret of [workerUser.password, cliUser.password, kafka.admin.password, registry.password, PROVIDER_ACCESS_KEY_ID, ...extra]) {
    expect(output).not.toContain(secret);
  }
}

describe('a secured cluster: SASL_SSL (SCRAM-SHA-512) with the StandardAuthorizer', () => {
  it('with only the documented ACLs, produce publishes, the worker sends, tail prints the results', async () => {
    const registryRequestsBefore = registry.seen.length;
    const worker = new WorkerProcess(secureWorkerEnv(workerUser));
    try {
      await eventually(
        () => (worker.output.includes('"msg":"worker started"') ? true : undefined),
        90_000,
        () => `the worker to start; output:\n${worker.output.slice(-3000)}\nbroker:\n${kafka.logTail()}`,
      );
      const ids = [0, 1, 2].map((i) => `secured-${i}-${randomUUID()}`);
      const lines = ids.map((commandId) => JSON.stringify({ commandId, text: { to: ['+8613800138000'], signature: 'Acme', content: 'Hello over SASL_SSL' } }));
      const produced = await cli(['produce', ...lines], { ...securedEnv(cliUser), COMMAND_TOPIC: topics.commands });
      expect(produced.code, produced.stderr).toBe(0);
      expect(produced.stdout.trim().split('\n')).toHaveLength(3);
      // A code on the priority topic, consumed in the priority group: its rows of the table are enough too.
      const codeId = `secured-code-${randomUUID()}`;
      ids.push(codeId);
      const code = await cli(['produce', JSON.stringify({ commandId: codeId, voice: { to: '18509872103', code: '123456' } })], {
        ...securedEnv(cliUser),
        COMMAND_TOPIC: PRIORITY_TOPIC(),
      });
      expect(code.code, code.stderr).toBe(0);

      const tailed = await cli(['tail', '--count', '4'], { ...securedEnv(cliUser), RESULT_TOPIC: topics.results });
      expect(tailed.code, tailed.stderr).toBe(0);
      const results = tailed.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as CommandResult);
      expect(results.map((r) => r.commandId).sort()).toEqual([...ids].sort());
      expect(results.map((r) => r.outcome)).toEqual(['SENT', 'SENT', 'SENT', 'SENT']);
      expect(results.find((r) => r.commandId === codeId)?.source.topic).toBe(PRIORITY_TOPIC());
      for (const id of ids) expect(sandbox.state.acceptedSends(id)).toBe(1);
      // Every registry request (the worker's, produce's, tail's) carried the credentials; one without would have been refused.
      const registryRequests = registry.seen.slice(registryRequestsBefore);
      expect(registryRequests.length).toBeGreaterThan(0);
      expect(registryRequests.filter((r) => !r.authorized)).toEqual([]);

      worker.signal('SIGTERM');
      expect((await worker.stopped(60_000)).code, worker.output.slice(-3000)).toBe(0);
      // Every step was authorised: nothing was refused along the way (and retried past).
      expect(worker.output).not.toMatch(/not authorized|authorization failed/i);
      expectNoSecret(worker.output + produced.stdout + produced.stderr + code.stdout + code.stderr + tailed.stdout + tailed.stderr);
    } finally {
      worker.signal('SIGKILL');
    }
  });

  it('a priority group without its ACL rows: the worker gives up its start and exits 1 naming the group authorization failure', async () => {
    // The priority source starts first; its consumer's join is refused (GROUP_AUTHORIZATION_FAILED,
    // not retriable: kafkajs crashes it for good while `run` is still starting it). The worker must
    // not go on with the normal source alone, never ready and never exiting.
    const worker = new WorkerProcess({ ...secureWorkerEnv(workerUser), PRIORITY_CONSUMER_GROUP: `${topics.group}-unlisted-${randomUUID()}` });
    try {
      const exit = await worker.stopped(90_000);
      expect(exit.code, worker.output.slice(-3000)).toBe(1);
      expect(worker.output).toMatch(/not authorized to access group/i);
      // The lookup the broker refused ends the consumer for good (no restart in place), its crash naming the refusal.
      expect(worker.output).toMatch(/"restart":false/);
      expect(worker.output).toMatch(/a broker refused the lookup: Not authorized to access group/);
      expect(worker.output).not.toContain('"msg":"worker started"');
      expectNoSecret(worker.output);
    } finally {
      worker.signal('SIGKILL');
    }
  });

  it('a wrong password: the worker, produce and tail exit 1 saying authentication failed, and print no secret', async () => {
    const wrong = { username: workerUser.username, password: `wrong-${randomUUID()}` };
    const worker = new WorkerProcess(secureWorkerEnv(wrong));
    const [exit, produced, tailed] = await Promise.all([
      worker.stopped(90_000),
      cli(['produce', JSON.stringify({ voice: { to: '18509872103', code: '123456' } })], { ...securedEnv(wrong), COMMAND_TOPIC: topics.commands }),
      cli(['tail', '--count', '1'], { ...securedEnv(wrong), RESULT_TOPIC: topics.results }),
    ]);
    expect(exit.code, worker.output.slice(-3000)).toBe(1);
    expect(worker.output).toMatch(/SASL SCRAM SHA512 authentication failed/);
    expect(produced.code, produced.stderr).toBe(1);
    expect(produced.stderr).toMatch(/SASL SCRAM SHA512 authentication failed/);
    expect(tailed.code, tailed.stderr).toBe(1);
    expect(tailed.stderr).toMatch(/SASL SCRAM SHA512 authentication failed/);
    expectNoSecret(worker.output + produced.stdout + produced.stderr + tailed.stdout + tailed.stderr, wrong.password);
  });

  it('a broker certificate from a CA the client does not trust: all three exit 1 naming the TLS failure, and print no secret', async () => {
    const worker = new WorkerProcess(secureWorkerEnv(workerUser, kafka.untrustedCaFile));
    const [exit, produced, tailed] = await Promise.all([
      worker.stopped(120_000),
      cli(
        ['produce', JSON.stringify({ voice: { to: '18509872103', code: '123456' } })],
        { ...securedEnv(cliUser, kafka.untrustedCaFile), COMMAND_TOPIC: topics.commands },
        120_000,
      ),
      cli(['tail', '--count', '1'], { ...securedEnv(cliUser, kafka.untrustedCaFile), RESULT_TOPIC: topics.results }, 120_000),
    ]);
    // Refused by the certificate check before any client connects (src/kafka/tls-check.ts), not after kafkajs's retries.
    const tlsFailure =
      /the TLS certificate of Kafka broker 127\.0\.0\.1:\d+ is not trusted: (self[- ]signed certificate|unable to (get local issuer|verify the first) certificate)/i;
    expect(exit.code, worker.output.slice(-3000)).toBe(1);
    expect(worker.output).toMatch(tlsFailure);
    expect(produced.code, produced.stderr).toBe(1);
    expect(produced.stderr).toMatch(tlsFailure);
    expect(tailed.code, tailed.stderr).toBe(1);
    expect(tailed.stderr).toMatch(tlsFailure);
    expectNoSecret(worker.output + produced.stdout + produced.stderr + tailed.stdout + tailed.stderr);
  });
});

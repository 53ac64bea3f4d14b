import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KafkaSettings } from '../../src/config/index.ts';
import { SmsWorkerError } from '../../src/errors.ts';
import { checkBrokerCertificate, isCertificateRefusal } from '../../src/kafka/tls-check.ts';

// A self-signed certificate for 127.0.0.1 and its key, made for this test only (valid until 2126):
// a loopback TLS server plays the broker's TLS side; the check never speaks Kafka.
const FIXTURE_CERT = `
-----BEGIN CERTIFICATE-----
MIIBwDCCAWagAwIBAgIUBEnk8b96vXCxPqYUGnSzngx4d+AwCgYIKoZIzj0EAwIw
LDEqMCgGA1UEAwwhc21zLXdvcmtlciB0bHMtY2hlY2sgdGVzdCBmaXh0dXJlMCAX
DTI2MTEyMzEzNTU0NVoYDzIxMjYxMDMwMTM1NTQ1WjAsMSowKAYDVQQDDCFzbXMt
d29ya2VyIHRscy1jaGVjayB0ZXN0IGZpeHR1cmUwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAAS3bVpFPwVxRAARxx199FFO+Q98rJ/xdS4mhsGGBsW1HhjoVjZbF5qM
5ribpgwHOlfWoTXHDO6Jecu9Z8mfXHYYo2QwYjAdBgNVHQ4EFgQUofv2FjOjGC9b
pmR5d38UcDvMwUQwHwYDVR0jBBgwFoAUofv2FjOjGC9bpmR5d38UcDvMwUQwDwYD
VR0TAQH/BAUwAwEB/zAPBgNVHREECDAGhwR/AAABMAoGCCqGSM49BAMCA0gAMEUC
IQCgiMr1Kp7OCzcyFophu0+U2HivDdSJ1NKEC/1wGO9AXQIgBwlacLQeChRSH56F
gquHo0mB7SMRsE5LDHU1rHIwr/M=
-----END CERTIFICATE-----
`;
const FIXTURE_KEY = `
-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgEUdZDtX6H0aZYZuY
0uuyBns2z6pjRD5Q+E6OQPz3Zp6hRANCAAS3bVpFPwVxRAARxx199FFO+Q98rJ/x
dS4mhsGGBsW1HhjoVjZbF5qM5ribpgwHOlfWoTXHDO6Jecu9Z8mfXHYY
-----END PRIVATE KEY-----
`;

let server: Server;
let broker: string;
beforeAll(async () => {
  server = createServer({ cert: FIXTURE_CERT, key: FIXTURE_KEY }, (socket) => socket.end());
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  broker = `127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.close();
});

function settings(ssl: KafkaSettings['ssl'], brokers = [broker]): KafkaSettings {
  return { brokers, clientId: 'tls-check-test', ssl, sasl: undefined };
}

describe('isCertificateRefusal', () => {
  it('is true for the codes of an untrusted, self-signed, expired or misnamed certificate', () => {
    for (const code of [
      'SELF_SIGNED_CERT_IN_CHAIN',
      'DEPTH_ZERO_SELF_SIGNED_CERT',
      'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
      'CERT_HAS_EXPIRED',
      'ERR_TLS_CERT_ALTNAME_INVALID',
    ]) {
      expect(isCertificateRefusal(Object.assign(new Error(code), { code })), code).toBe(true);
    }
  });

  it('is false for failures a retry can fix, and for things that are not errors', () => {
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EAI_AGAIN'])
      expect(isCertificateRefusal(Object.assign(new Error(code), { code }))).toBe(false);
    expect(isCertificateRefusal(null)).toBe(false);
    expect(isCertificateRefusal('SELF_SIGNED_CERT_IN_CHAIN')).toBe(false);
  });
});

describe('checkBrokerCertificate', () => {
  it('refuses a broker whose certificate the client does not trust, at once, naming the broker and the cause', async () => {
    const error = await checkBrokerCertificate(settings({ rejectUnauthorized: true })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SmsWorkerError);
    expect(error).toMatchObject({ code: 'KAFKA_CERTIFICATE_REFUSED', retryable: false });
    expect((error as Error).message).toContain(`Kafka broker ${broker} is not trusted: self-signed certificate`);
    expect((error as Error).message).toContain('KAFKA_SSL_CA_FILE');
  });

  it('passes when the client trusts the certificate (KAFKA_SSL_CA_FILE), or does not verify it', async () => {
    await expect(checkBrokerCertificate(settings({ ca: FIXTURE_CERT, rejectUnauthorized: true }))).resolves.toBeUndefined();
    await expect(checkBrokerCertificate(settings({ rejectUnauthorized: false }))).resolves.toBeUndefined();
  });

  it('leaves other failures to the Kafka client (a closed port is retried there), and does nothing without TLS', async () => {
    const closed = createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const port = (closed.address() as AddressInfo).port;
    closed.close();
    await expect(checkBrokerCertificate(settings({ rejectUnauthorized: true }, [`127.0.0.1:${port}`]))).resolves.toBeUndefined();
    await expect(checkBrokerCertificate(settings(false))).resolves.toBeUndefined();
  });
});

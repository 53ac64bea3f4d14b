import { isIP } from 'node:net';
import { connect } from 'node:tls';
import type { KafkaSettings } from '../config/index.ts';
import { SmsWorkerError } from '../errors.ts';

/**
 * Node's codes for a broker certificate the client refuses (unknown CA, self-signed, wrong name,
 * expired, …). They are permanent: retrying cannot fix them. kafkajs reports them as a retriable
 * connection error and retries for about half a minute, so a wrong CA looked like a slow broker.
 */
const CERTIFICATE_REFUSALS = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'CERT_UNTRUSTED',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REVOKED',
  'CERT_SIGNATURE_FAILURE',
  'CERT_REJECTED',
  'INVALID_CA',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** True for a TLS error that means "this client does not trust the broker's certificate". */
export function isCertificateRefusal(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && CERTIFICATE_REFUSALS.has(code);
}

/** How long the check waits for one handshake before leaving the broker to kafkajs's own retries. */
const HANDSHAKE_TIMEOUT_MS = 5_000;

/**
 * One TLS handshake with the first broker, with exactly the options kafkajs will use, before any
 * client connects: a certificate the client refuses stops start-up at once with what Node said,
 * instead of after kafkajs's retries. Anything else (refused connection, timeout) is left to
 * kafkajs, which retries it as it should. Nothing is sent over the connection; no secret is read.
 */
export async function checkBrokerCertificate(settings: KafkaSettings, timeoutMs = HANDSHAKE_TIMEOUT_MS): Promise<void> {
  if (settings.ssl === false) return;
  const broker = settings.brokers[0];
  if (broker === undefined) return;
  const separator = broker.lastIndexOf(':');
  const host = broker.slice(0, separator);
  const port = Number(broker.slice(separator + 1));
  const ssl = settings.ssl;
  const refusal = await new Promise<Error | undefined>((resolve) => {
    const socket = connect({ host, port, ...(isIP(host) === 0 && { servername: host }), ...ssl }, () => {
      socket.end();
      resolve(undefined);
    });
    socket.setTimeout(timeoutMs, () => {
      socket.destroy();
      resolve(undefined);
    });
    socket.on('error', (error) => {
      socket.destroy();
      resolve(isCertificateRefusal(error) ? error : undefined);
    });
  });
  if (refusal !== undefined) {
    throw new SmsWorkerError(
      'KAFKA_CERTIFICATE_REFUSED',
      `the TLS certificate of Kafka broker ${broker} is not trusted: ${refusal.message} (check KAFKA_SSL_CA_FILE, or KAFKA_SSL_REJECT_UNAUTHORIZED)`,
      { cause: refusal },
    );
  }
}

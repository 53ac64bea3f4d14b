import net from 'node:net';
import tls from 'node:tls';
import type { ISocketFactory } from 'kafkajs';

/** kafkajs's own keep-alive delay for a broker's socket (network/socketFactory.js). */
const KEEP_ALIVE_DELAY_MS = 60_000;

/** The host names that stand in for IPv6 seed brokers: never resolved (`.invalid` is reserved for that). */
const ALIAS_SUFFIX = '.ipv6-seed.invalid';

/**
 * The seed brokers as kafkajs can take them. kafkajs reads a seed broker's host as what comes
 * before its first `:` (cluster/connectionPoolBuilder.js), so an IPv6 address (`[::1]:9092`)
 * would become the host `[`. Such a broker is given to kafkajs under a stand-in host name without
 * a colon, and the socket factory connects to the address behind it. (Brokers learnt from
 * metadata come with host and port apart: IPv6 works for them as it is.) `socketFactory`: one of
 * the caller's (the tests' proxies), else kafkajs's own behaviour.
 */
export function seedBrokers(brokers: readonly string[], socketFactory?: ISocketFactory): { brokers: string[]; socketFactory?: ISocketFactory } {
  const aliases = new Map<string, string>();
  const seeds = brokers.map((broker) => {
    const match = /^\[([0-9A-Fa-f:.]+)\]:(\d+)$/.exec(broker);
    if (match === null) return broker;
    const address = match[1] as string;
    const alias = `${address.replace(/[:.]/g, '-')}${ALIAS_SUFFIX}`;
    aliases.set(alias, address);
    return `${alias}:${match[2]}`;
  });
  if (aliases.size === 0) return { brokers: [...brokers], ...(socketFactory !== undefined && { socketFactory }) };
  const connect = socketFactory ?? defaultSocketFactory;
  return { brokers: seeds, socketFactory: (args) => connect({ ...args, host: aliases.get(args.host) ?? args.host }) };
}

/** kafkajs's default socket factory, as it is (network/socketFactory.js): TLS with the host as SNI unless it is an address. */
export const defaultSocketFactory: ISocketFactory = ({ host, port, ssl, onConnect }) => {
  const socket = ssl
    ? tls.connect({ host, port, ...(net.isIP(host) === 0 && { servername: host }), ...ssl }, onConnect)
    : net.connect({ host, port }, onConnect);
  socket.setKeepAlive(true, KEEP_ALIVE_DELAY_MS);
  return socket;
};

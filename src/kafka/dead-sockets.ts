import type { ISocketFactory } from 'kafkajs';

/**
 * kafkajs 2.2.4's `Connection.disconnect` ends and unrefs its socket every time it is called, and
 * it is called again on the same connection at each retry of a broker that stays away. On a socket
 * that never connected (the broker down: refused, timed out, destroyed), Node's `unref` waits for a
 * `connect` that never comes with a `once('connect')` listener: the listeners pile up on the dead
 * socket for as long as the outage lasts (12 disconnects left 15, and Node's
 * MaxListenersExceededWarning on stderr at 11: seen in CI's output during a broker restart).
 * Sockets made through this factory do nothing on `unref` once destroyed: nothing is left to
 * unref, and kafkajs makes a new socket for its next connect. Public API only (the client's
 * `socketFactory`), no kafkajs internal is touched.
 */
export function withDeadSocketGuard(factory: ISocketFactory): ISocketFactory {
  return (args) => {
    const socket = factory(args);
    const unref = socket.unref.bind(socket);
    socket.unref = () => (socket.destroyed ? socket : unref());
    return socket;
  };
}

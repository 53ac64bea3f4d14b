/**
 * `node tools/otlp-sink.ts [port]`: an OTLP/HTTP receiver that counts spans and discards them, for
 * measuring what exporting traces costs the worker (point OTEL_EXPORTER_OTLP_ENDPOINT at it and
 * run the bench). Prints its URL, then the spans received every 10 s. Bodies over 16 MiB are refused.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readCappedBody } from '../src/http-io.ts';

const MAX_BODY_BYTES = 16 * 1024 * 1024;
let spans = 0;
let requests = 0;

const server = createServer((req, res) => {
  void readCappedBody(req, MAX_BODY_BYTES).then((body) => {
    if (body.kind === 'aborted') return;
    if (body.kind === 'too-large') return void res.writeHead(413).end();
    requests += 1;
    // Counting the span ids is enough; the JSON encoding has one "spanId" per span (links aside).
    spans += (body.bytes.toString('utf8').match(/"spanId"/g) ?? []).length;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  console.log(`OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
setInterval(() => console.log(JSON.stringify({ requests, spans })), 10_000).unref();
process.on('SIGINT', () => server.close(() => process.exit(0)));

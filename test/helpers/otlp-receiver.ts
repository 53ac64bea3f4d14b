/**
 * A small OTLP/HTTP trace receiver on loopback: what a collector's `otlphttp` receiver does for
 * `POST /v1/traces` with a JSON body (what `@opentelemetry/exporter-trace-otlp-http` sends),
 * decoded into flat spans the tests can assert on. Bodies over MAX_BODY_BYTES are refused (413).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { readCappedBody } from '../../src/http-io.ts';

/** Largest export request accepted. */
const MAX_BODY_BYTES = 16 * 1024 * 1024;

/** OTLP span kinds (opentelemetry-proto trace.proto). */
export const OTLP_SPAN_KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;
/** OTLP status codes. */
export const OTLP_STATUS = { unset: 0, ok: 1, error: 2 } as const;

export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string | undefined;
  readonly name: string;
  readonly kind: number;
  readonly startNanos: bigint;
  readonly endNanos: bigint;
  readonly attributes: Readonly<Record<string, unknown>>;
  readonly links: readonly { traceId: string; spanId: string }[];
  readonly status: { readonly code: number; readonly message: string | undefined };
  readonly resource: Readonly<Record<string, unknown>>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
}
interface OtlpKeyValue {
  key: string;
  value: OtlpValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string | number;
  endTimeUnixNano: string | number;
  attributes?: OtlpKeyValue[];
  links?: { traceId: string; spanId: string }[];
  status?: { code?: number; message?: string };
}
interface ExportRequest {
  resourceSpans?: { resource?: { attributes?: OtlpKeyValue[] }; scopeSpans?: { spans?: OtlpSpan[] }[] }[];
}

function valueOf(value: OtlpValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(valueOf);
  return undefined;
}

function attributesOf(list: readonly OtlpKeyValue[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, valueOf(kv.value)]));
}

/** Spans of one OTLP JSON export request. */
export function decodeExport(body: ExportRequest): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const resourceSpans of body.resourceSpans ?? []) {
    const resource = attributesOf(resourceSpans.resource?.attributes);
    for (const scope of resourceSpans.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) {
        out.push({
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId: span.parentSpanId === undefined || span.parentSpanId === '' ? undefined : span.parentSpanId,
          name: span.name,
          kind: span.kind,
          startNanos: BigInt(span.startTimeUnixNano),
          endNanos: BigInt(span.endTimeUnixNano),
          attributes: attributesOf(span.attributes),
          links: (span.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
          status: { code: span.status?.code ?? 0, message: span.status?.message },
          resource,
        });
      }
    }
  }
  return out;
}

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Raw bodies, to check that nothing secret was exported anywhere in them. */
  readonly bodies: string[] = [];
  readonly #server: Server;

  private constructor(server: Server) {
    this.#server = server;
  }

  static async start(): Promise<OtlpReceiver> {
    const server = createServer();
    const receiver = new OtlpReceiver(server);
    server.on('request', (req, res) => {
      void readCappedBody(req, MAX_BODY_BYTES).then((read) => {
        if (read.kind === 'aborted') return;
        if (req.method !== 'POST' || req.url !== '/v1/traces') {
          res.writeHead(404).end();
          return;
        }
        if (read.kind === 'too-large') {
          res.writeHead(413).end();
          return;
        }
        const raw = read.bytes;
        try {
          const text = (req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString('utf8');
          receiver.bodies.push(text);
          receiver.spans.push(...decodeExport(JSON.parse(text) as ExportRequest));
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        } catch {
          res.writeHead(400).end();
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  /** The base URL to give as OTEL_EXPORTER_OTLP_ENDPOINT (the exporter appends /v1/traces). */
  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

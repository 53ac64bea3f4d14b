/**
 * The OpenTelemetry SDK, started only when tracing is configured (see config/tracing.ts): a
 * tracer provider with a batching processor and the OTLP/HTTP exporter. The SDK and the exporter
 * read the standard variables themselves (OTEL_TRACES_SAMPLER[_ARG], OTEL_EXPORTER_OTLP_*,
 * OTEL_BSP_*, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, span limits). Nothing is registered
 * globally: the tracer is handed to whoever needs it, so no library gets spans behind our back
 * (got and undici are not instrumented: attempts get their spans from the client's own reports).
 *
 * Without an endpoint nothing here runs: the worker makes no span, extracts no header and pays
 * only a null check per record. Nor does it load the SDK, the resources or the exporter (about
 * 55 ms of CPU at every start, measured: a pod's start competes with the pods that work).
 */
import type { Tracer } from '@opentelemetry/api';
import type * as OtlpHttpExporter from '@opentelemetry/exporter-trace-otlp-http';
import type * as Resources from '@opentelemetry/resources';
import type * as SdkTraceBase from '@opentelemetry/sdk-trace-base';
import { setGlobalErrorHandler } from '@opentelemetry/core';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { TracingSettings } from '../config/tracing.ts';
import { PACKAGE_VERSION } from '../provider/user-agent.ts';
import type { Logger } from './logger.ts';

/** Longest a shutdown waits for the last spans to be exported (the exporter's own timeout is 10 s). */
const SHUTDOWN_FLUSH_MS = 5_000;
/** Export failures are logged at most once per this interval (a collector down must not flood the log). */
const EXPORT_ERROR_LOG_INTERVAL_MS = 60_000;

export interface Tracing {
  readonly tracer: Tracer;
  /** Exports what is buffered and stops; bounded by SHUTDOWN_FLUSH_MS. */
  shutdown(): Promise<void>;
}

/** The SDK's modules, loaded only when tracing starts (and by the image's compile-cache fill, cli/compile-cache.ts). */
export function loadTracingSdk(): Promise<[typeof OtlpHttpExporter, typeof Resources, typeof SdkTraceBase]> {
  return Promise.all([import('@opentelemetry/exporter-trace-otlp-http'), import('@opentelemetry/resources'), import('@opentelemetry/sdk-trace-base')]);
}

/**
 * Starts the SDK when `settings.enabled`; undefined otherwise. `serviceName` is the default of
 * `service.name` (OTEL_SERVICE_NAME wins).
 */
export async function startTracing(settings: TracingSettings, log: Logger, serviceName: string): Promise<Tracing | undefined> {
  if (!settings.enabled) return undefined;
  const [{ OTLPTraceExporter }, { defaultResource, detectResources, envDetector, resourceFromAttributes }, { BasicTracerProvider, BatchSpanProcessor }] =
    await loadTracingSdk();
  const resource = defaultResource()
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: serviceName, [ATTR_SERVICE_VERSION]: PACKAGE_VERSION }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] });
  const exportErrors = throttledExportErrors(log);
  setGlobalErrorHandler(exportErrors);
  log.info({ endpoint: settings.endpoint, sampler: settings.sampler }, 'tracing: exporting spans over OTLP/HTTP');
  return {
    tracer: provider.getTracer('sms-worker', PACKAGE_VERSION),
    shutdown: async () => {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), SHUTDOWN_FLUSH_MS)));
      try {
        // The last export failing (a collector down) is reported, not thrown: stopping goes on.
        const flushed = provider.shutdown().then(
          () => 'flushed' as const,
          (error: unknown) => error,
        );
        const ended = await Promise.race([flushed, timeout]);
        if (ended === 'timeout') log.warn({ timeoutMs: SHUTDOWN_FLUSH_MS }, 'tracing: spans not exported before shutdown');
        else if (ended !== 'flushed') exportErrors(ended);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** The SDK reports export failures through its global error handler: a warn line, throttled. */
function throttledExportErrors(log: Logger): (error: unknown) => void {
  let lastLogged = 0;
  let suppressed = 0;
  return (error) => {
    const now = Date.now();
    if (now - lastLogged < EXPORT_ERROR_LOG_INTERVAL_MS) {
      suppressed += 1;
      return;
    }
    lastLogged = now;
    const message = error instanceof Error ? error.message : String(error);
    log.warn({ error: message.slice(0, 500), suppressedSinceLast: suppressed }, 'tracing: exporting spans failed');
    suppressed = 0;
  };
}

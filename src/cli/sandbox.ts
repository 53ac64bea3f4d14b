import { parseSandboxArgs, runSandboxFromArgs } from '../sandbox/main.ts';

const SANDBOX_HELP = `sms-worker sandbox — a local sandbox of the messaging service (both send operations)

Options:
  --host 127.0.0.1          --port 0 (0 = a free port)
  --access-key-id ID        accept only this key id (default: any)
  --secret SECRET           require HMAC-SHA256 signed requests with this secret
  --balance 1000000.000000  account balance; sends beyond it answer 105400 InsufficientFunds
  --home-region CN          --seed N (reproducible faults)   --log-capacity 200000
Faults:
  --latency-ms MS [--latency-p99-ms MS]   fixed, or log-normal with that median and p99
  --rate-500 R --rate-502 R --rate-503 R --rate-429 R --rate-reset R --rate-hang R
  --rate-reset-after R --rate-hang-after R --rate-malformed R   (probabilities 0..1)
  --retry-after-sec S       Retry-After on 429/503      --down   answer 503 to everything
Delivery reports (a JSON POST per accepted message, retried with backoff until answered 200):
  --callback-url URL        where reports go (e.g. a receiver: http://host:8080/receipts/<token>)
  --report-delay-ms 200     --report-fail-rate 0.1 (share reported 'failed' with an error code)
Admin (HTTP): GET /_sandbox/stats, GET /_sandbox/requests, POST /_sandbox/reset,
  POST /_sandbox/balance {"balance":"…"}, POST /_sandbox/faults {…},
  GET|POST /_sandbox/delivery-reports {"callbackUrl","accounts":{"<key id>":url},"delayMs","failRate",…}`;

/** `sms-worker sandbox`: the messaging-service sandbox, until SIGINT/SIGTERM. */
export async function runSandboxCommand(argv: readonly string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(SANDBOX_HELP);
    return 0;
  }
  try {
    parseSandboxArgs(argv);
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    return 2;
  }
  const sandbox = await runSandboxFromArgs(argv);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  await sandbox.close();
  return 0;
}

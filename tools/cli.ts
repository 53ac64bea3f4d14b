// The development CLI (`npm run cli -- …`, `npm run demo`): the shipped commands plus those that
// need a checkout and dev dependencies (the local stack), which the image must not offer.
import { PRODUCT_COMMANDS, runCli, type CliCommand } from '../src/cli/commands.ts';
import { quietKnownWarnings } from '../src/cli/warnings.ts';

const DEV_COMMANDS: readonly CliCommand[] = [
  ...PRODUCT_COMMANDS,
  {
    name: 'demo',
    summary: 'local Kafka + registry + sandbox + worker, sample commands, results table',
    run: async (argv) => (await import('./demo.ts')).runDemo(argv),
  },
];

quietKnownWarnings();
runCli(process.argv.slice(2), DEV_COMMANDS);

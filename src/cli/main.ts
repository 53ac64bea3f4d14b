#!/usr/bin/env node
import { quietKnownWarnings } from './warnings.ts';

quietKnownWarnings();

const HELP = `sms-worker — send text messages and voice verification codes from Kafka commands

Usage: sms-worker <command> [options]

Commands:
  run       the worker (default), configured from the environment
  sandbox   a local sandbox of the messaging service on a port
  produce   publish commands given as JSON lines (argument, file or stdin)
  tail      print committed results as JSON lines (or a table with --pretty)
  demo      local Kafka + registry + sandbox + worker, sample commands, results table

Run 'sms-worker <command> --help' for a command's options.
Exit codes: 0 success · 1 failure · 2 usage or configuration error`;

async function main(argv: readonly string[]): Promise<number> {
  const [command = 'run', ...rest] = argv;
  if (command === '--help' || command === '-h' || command === 'help') {
    console.log(HELP);
    return 0;
  }
  const wantsHelp = rest.includes('--help') || rest.includes('-h');
  switch (command) {
    case 'run': {
      const { runWorker, RUN_HELP } = await import('./run.ts');
      if (wantsHelp) {
        console.log(RUN_HELP);
        return 0;
      }
      return runWorker();
    }
    case 'sandbox': {
      const { runSandboxCommand } = await import('./sandbox.ts');
      return runSandboxCommand(rest);
    }
    case 'produce': {
      const { runProduce } = await import('./produce.ts');
      return runProduce(rest);
    }
    case 'tail': {
      const { runTail } = await import('./tail.ts');
      return runTail(rest);
    }
    case 'demo': {
      const { runDemo } = await import('./demo.ts');
      return runDemo(rest);
    }
    default:
      console.error(`unknown command: ${command}\n\n${HELP}`);
      return 2;
  }
}

async function exitCodeOf(argv: readonly string[]): Promise<number> {
  try {
    return await main(argv);
  } catch (error) {
    const { CliExit } = await import('./connection.ts');
    if (error instanceof CliExit) return error.code;
    throw error;
  }
}

exitCodeOf(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
    // Clients with keep-alive sockets or timers must not hold a finished command open.
    setTimeout(() => process.exit(code), 200).unref();
  },
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  },
);

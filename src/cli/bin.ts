#!/usr/bin/env node
import { CommanderError } from 'commander';
import { exitCodeOf, reportError } from './commands/errors.js';
import { isRunPluginsInvocation, runBuiltinPlugins } from './runPlugins.js';

// `stowage backup get | head`: a closed pipe ends the command quietly, as in other CLIs.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
}

try {
  // Every restart of the built-in plugins pays this process's start-up: skip loading the whole CLI.
  if (isRunPluginsInvocation(process.argv)) await runBuiltinPlugins();
  else await (await import('./program.js')).buildProgram().parseAsync(process.argv);
} catch (err) {
  // Commander has already printed its own message (unknown option, missing argument, help).
  process.exitCode = err instanceof CommanderError ? commanderExitCode(err) : reportError(err);
}

function commanderExitCode(err: CommanderError): number {
  if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return 0;
  return exitCodeOf(err);
}

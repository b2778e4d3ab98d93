// `stowage run-plugins`: serves the built-in plugins. The server starts it as a plugin process
// (through the same restartable host as third-party plugins); run by hand it explains that and exits.
import type { Command } from 'commander';
import { builtinPlugins } from '../plugin/builtin/index.js';
import { servePlugins } from '../plugin/sdk/index.js';

/** Serves the built-ins until the server stops this process. */
export async function runBuiltinPlugins(): Promise<void> {
  await servePlugins(builtinPlugins());
}

/**
 * True for `stowage run-plugins`: lets bin.ts skip loading the rest of the CLI, since every
 * plugin restart pays this process's start-up time.
 */
export function isRunPluginsInvocation(argv: readonly string[]): boolean {
  return argv[2] === 'run-plugins' && argv.length === 3;
}

export function registerRunPlugins(program: Command): void {
  program
    .command('run-plugins')
    .description('Serve the built-in plugins (started by the Stowage server, not by hand)')
    .action(runBuiltinPlugins);
}

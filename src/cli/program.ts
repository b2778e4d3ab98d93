import { Command } from 'commander';
import { backupCommand } from './commands/backup.js';
import { backupLocationCommand } from './commands/backupLocation.js';
import { debugCommand } from './commands/debug.js';
import { addGlobalOptions } from './commands/kubeContext.js';
import { restoreCommand } from './commands/restore.js';
import { restoreDeleteCommand } from './commands/restoreDelete.js';
import { scheduleCommand } from './commands/schedule.js';
import { versionCommand } from './commands/version.js';
import { registerRunPlugins } from './runPlugins.js';
import { serverCommand } from './server.js';

/** Settings every client command shares: errors thrown to bin.ts (exit 2 for usage), short hint after an error. */
function applyCliSettings(cmd: Command): void {
  cmd
    .exitOverride()
    .showHelpAfterError('(add --help for usage)')
    .configureOutput({ outputError: (str, write) => write(str) });
  for (const sub of cmd.commands) applyCliSettings(sub);
}

/** The `stowage` command tree. Each subcommand lives in its own module and registers itself here. */
export function buildProgram(): Command {
  const program = new Command('stowage')
    .description('Back up Kubernetes resources to S3-compatible storage and restore them')
    // Global flags may come before the subcommand (`stowage -n x backup get`); after it, each
    // command's own flags apply, so `stowage server --namespace` keeps its own meaning.
    .enablePositionalOptions();
  addGlobalOptions(program);
  applyCliSettings(program);

  const restore = restoreCommand().addCommand(restoreDeleteCommand());
  const client = [backupCommand(), backupLocationCommand(), restore, scheduleCommand(), versionCommand(), debugCommand()];
  for (const c of client) {
    applyCliSettings(c);
    program.addCommand(c);
  }
  // Server-side commands keep commander's default exit behaviour and their own flag parsing.
  // The CLI's server side (helper "cli"): DownloadRequests and ServerStatusRequests. Lead: move these
  // into main.ts's factory list with the other controllers, and drop the argument here.
  program.addCommand(serverCommand());
  registerRunPlugins(program);
  return program;
}

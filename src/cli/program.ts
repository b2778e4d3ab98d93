import { Command } from 'commander';

/** The `stowage` command tree. Each subcommand lives in its own module and registers itself here. */
export function buildProgram(): Command {
  const program = new Command('stowage')
    .description('Back up Kubernetes resources to S3-compatible storage and restore them')
    .showHelpAfterError()
    .configureOutput({ outputError: (str, write) => write(str) });
  return program;
}

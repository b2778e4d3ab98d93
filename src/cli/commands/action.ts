// The wrapper every client command runs in: global flags, a lazily opened API client, one error
// line with the right exit code, and cleanup so the process exits promptly.
import type { Command } from 'commander';
import { isDebug, reportError, type ErrorContext } from './errors.js';
import { globalOptions, openContext, type CliContext, type GlobalOptions } from './kubeContext.js';

export interface Session {
  global: GlobalOptions;
  /** Opens the kubeconfig and client on first use (so `version --client-only` needs neither). */
  client(): CliContext;
}

/** Exit code of the command that ran, for callers that drive the program in-process. */
let lastExitCode = 0;
export function lastActionExitCode(): number {
  return lastExitCode;
}

export function action(handler: (cmd: Command, session: Session) => Promise<void>): (...args: unknown[]) => Promise<void> {
  return async (...args: unknown[]): Promise<void> => {
    const cmd = args[args.length - 1] as Command;
    let errCtx: ErrorContext = {};
    let debug = isDebug();
    let ctx: CliContext | undefined;
    lastExitCode = 0;
    try {
      const g = globalOptions(cmd);
      debug = isDebug(g.debug);
      const session: Session = {
        global: g,
        client: () => {
          ctx ??= openContext(g);
          errCtx = ctx.errorContext;
          return ctx;
        },
      };
      await handler(cmd, session);
    } catch (err) {
      lastExitCode = reportError(err, errCtx, debug);
      process.exitCode = lastExitCode;
    } finally {
      ctx?.close();
      // A stray socket or timer must not keep a finished command alive.
      setTimeout(() => process.exit(), 3000).unref();
    }
  };
}

// How the CLI fails: one clear line on stderr and an exit code (1 for errors, 2 for usage errors).
// Apiserver errors are turned into sentences a user can act on; stacks only with --debug.
import { CommanderError } from 'commander';
import { KubeError } from '../../kube/index.js';
import { errorMessage } from '../../util/errors.js';

/** An error whose message is already the line to show the user. */
export class CliError extends Error {
  override readonly name: string = 'CliError';
  constructor(
    message: string,
    readonly exitCode = 1,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Wrong flags or arguments: exit code 2, like other CLIs. */
export class UsageError extends CliError {
  override readonly name = 'UsageError';
  constructor(message: string) {
    super(message, 2);
  }
}

/** What the error line says about the API server, filled in once the client is known. */
export interface ErrorContext {
  /** API server URL from the kubeconfig. */
  server?: string;
  /** Where the kubeconfig came from, for "check your kubeconfig" hints. */
  kubeconfigSource?: string;
}

const STOWAGE_GROUP = 'stowage.dev';

/** The one line printed for an error (without the "error: " prefix). */
export function describeError(err: unknown, ctx: ErrorContext = {}): string {
  if (err instanceof CliError) return err.message;
  if (err instanceof KubeError) return describeKubeError(err, ctx);
  return errorMessage(err);
}

function describeKubeError(err: KubeError, ctx: ErrorContext): string {
  const server = ctx.server ?? 'the API server';
  if (err.status === 0) {
    // The client's message already says "cannot reach the apiserver at URL: <cause>".
    const cause = err.apiMessage.replace(/^cannot reach the apiserver at \S+: /, '');
    return `cannot reach the Kubernetes API server at ${server}: ${cause}`;
  }
  if (err.status === 401) {
    const where = ctx.kubeconfigSource === undefined ? 'the kubeconfig' : `kubeconfig ${ctx.kubeconfigSource}`;
    return `the Kubernetes API server at ${server} rejected the credentials in ${where} (401 Unauthorized)`;
  }
  if (err.status === 403) {
    // The apiserver's message names user, verb, resource and namespace: exactly the missing permission.
    return `permission denied: ${err.apiMessage}`;
  }
  if (err.status === 404 && (err.target.name === undefined || err.target.name === '') && err.target.resource.endsWith(`.${STOWAGE_GROUP}`)) {
    return (
      `the Kubernetes API server at ${server} does not serve ${err.target.resource}: ` +
      'the Stowage CRDs are not installed (kubectl apply -f deploy/crds)'
    );
  }
  if (err.status === 422 && err.target.verb === 'create') {
    return `the API server refused to ${err.target.verb} ${err.target.resource}: ${err.apiMessage}`;
  }
  return err.message;
}

/** Exit code for anything thrown out of a command. */
export function exitCodeOf(err: unknown): number {
  if (err instanceof CliError) return err.exitCode;
  if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
  return 1;
}

export function isDebug(flag?: boolean): boolean {
  return flag === true || process.env.STOWAGE_DEBUG === '1' || process.env.STOWAGE_DEBUG === 'true';
}

/** Prints the error line (and the stack in debug mode) and returns the exit code. */
export function reportError(err: unknown, ctx: ErrorContext = {}, debug = isDebug()): number {
  process.stderr.write(`error: ${describeError(err, ctx)}\n`);
  if (debug && err instanceof Error && err.stack !== undefined) process.stderr.write(`${err.stack}\n`);
  return exitCodeOf(err);
}

// The minimal environment a plugin process starts with: the magic cookie, the protocol versions
// the host accepts, the server's log level, the object-store outage window, PATH (so
// `#!/usr/bin/env node` resolves), and the AWS workload-identity variables. Nothing else from the
// server's environment (static credentials in particular) leaks into plugins.
import {
  LOG_LEVEL_ENV,
  MAGIC_COOKIE_KEY,
  MAGIC_COOKIE_VALUE,
  OBJECT_STORE_OUTAGE_ENV,
  PLUGIN_PROTOCOL_VERSIONS,
  PROTOCOL_VERSIONS_ENV,
} from '../grpc/index.js';

export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * The pod's AWS workload identity: IRSA (a role and its projected token) and EKS Pod Identity (a
 * credentials endpoint and its token file). They name files and endpoints, not secrets. Without
 * them an AWS SDK in the plugin would fall back to the node's instance role, silently acting with
 * rights the server's pod was never given.
 */
export const AWS_IDENTITY_ENV = [
  'AWS_ROLE_ARN',
  'AWS_WEB_IDENTITY_TOKEN_FILE',
  'AWS_ROLE_SESSION_NAME',
  'AWS_STS_REGIONAL_ENDPOINTS',
  'AWS_REGION',
  'AWS_DEFAULT_REGION',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  'AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE',
] as const;

export function pluginEnv(opts: {
  logLevel: string;
  appVersions?: readonly number[];
  /** How long object stores ride out an unreachable backend (ms); unset: the plugin's own default. */
  objectStoreOutageMs?: number;
  /** The server's environment; only PATH and AWS_IDENTITY_ENV are taken from it. */
  parent?: NodeJS.ProcessEnv;
}): Record<string, string> {
  const identity: Record<string, string> = {};
  for (const k of AWS_IDENTITY_ENV) {
    const v = opts.parent?.[k];
    if (v !== undefined && v !== '') identity[k] = v;
  }
  return {
    ...identity,
    [MAGIC_COOKIE_KEY]: MAGIC_COOKIE_VALUE,
    [PROTOCOL_VERSIONS_ENV]: (opts.appVersions ?? PLUGIN_PROTOCOL_VERSIONS).join(','),
    [LOG_LEVEL_ENV]: opts.logLevel,
    ...(opts.objectStoreOutageMs !== undefined ? { [OBJECT_STORE_OUTAGE_ENV]: String(opts.objectStoreOutageMs) } : {}),
    PATH: opts.parent?.PATH ?? DEFAULT_PATH,
  };
}

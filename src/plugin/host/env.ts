// The minimal environment a plugin process starts with: the magic cookie, the protocol versions
// the host accepts, the server's log level, the object-store outage window, and PATH (so `#!/usr/bin/env node` resolves). Nothing
// else from the server's environment (credentials in particular) leaks into plugins.
import {
  LOG_LEVEL_ENV,
  MAGIC_COOKIE_KEY,
  MAGIC_COOKIE_VALUE,
  OBJECT_STORE_OUTAGE_ENV,
  PLUGIN_PROTOCOL_VERSIONS,
  PROTOCOL_VERSIONS_ENV,
} from '../grpc/index.js';

export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export function pluginEnv(opts: {
  logLevel: string;
  appVersions?: readonly number[];
  /** How long object stores ride out an unreachable backend (ms); unset: the plugin's own default. */
  objectStoreOutageMs?: number;
  /** The server's environment; only PATH is taken from it. */
  parent?: NodeJS.ProcessEnv;
}): Record<string, string> {
  return {
    [MAGIC_COOKIE_KEY]: MAGIC_COOKIE_VALUE,
    [PROTOCOL_VERSIONS_ENV]: (opts.appVersions ?? PLUGIN_PROTOCOL_VERSIONS).join(','),
    [LOG_LEVEL_ENV]: opts.logLevel,
    ...(opts.objectStoreOutageMs !== undefined ? { [OBJECT_STORE_OUTAGE_ENV]: String(opts.objectStoreOutageMs) } : {}),
    PATH: opts.parent?.PATH ?? DEFAULT_PATH,
  };
}

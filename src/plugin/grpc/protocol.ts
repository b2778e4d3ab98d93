// Constants of the host<->plugin handshake, shared by the SDK (plugin side) and the host.

/** go-plugin's core protocol version: the handshake line's first field. */
export const CORE_PROTOCOL_VERSION = 1;

/** Plugin (app) protocol versions this build speaks; the handshake's second field is one of them. */
export const PLUGIN_PROTOCOL_VERSIONS: readonly number[] = [1];

/** Environment variable set by the host so a plugin knows it was started by Stowage. */
export const MAGIC_COOKIE_KEY = 'STOWAGE_PLUGIN';
/** Fixed value: not a secret, only a guard against running a plugin binary by hand. */
export const MAGIC_COOKIE_VALUE = 'f2c7a1d0-stowage-plugin-protocol';

/** Comma-separated plugin protocol versions the host accepts (go-plugin's variable name). */
export const PROTOCOL_VERSIONS_ENV = 'PLUGIN_PROTOCOL_VERSIONS';
/** The server's log level, so plugins do not emit lines the server would drop. */
export const LOG_LEVEL_ENV = 'STOWAGE_PLUGIN_LOG_LEVEL';
/**
 * How long (ms) an object store should ride out an unreachable backend before failing a call
 * (the server's --object-store-outage-timeout). The host's deadlines for ObjectStore calls allow it.
 */
export const OBJECT_STORE_OUTAGE_ENV = 'STOWAGE_PLUGIN_OBJECT_STORE_OUTAGE_TIMEOUT_MS';

import { describe, expect, it } from 'vitest';
import { pluginEnv } from './env.js';

describe('pluginEnv', () => {
  it('passes the cookie, versions, log level and PATH and nothing else', () => {
    const env = pluginEnv({
      logLevel: 'debug',
      parent: { PATH: '/opt/bin:/usr/bin', AWS_SECRET_ACCESS_KEY: 'secret', HOME: '/root', NODE_OPTIONS: '--inspect' },
    });
    expect(Object.keys(env).sort()).toEqual(['PATH', 'PLUGIN_PROTOCOL_VERSIONS', 'STOWAGE_PLUGIN', 'STOWAGE_PLUGIN_LOG_LEVEL']);
    expect(env.PATH).toBe('/opt/bin:/usr/bin');
    expect(env.PLUGIN_PROTOCOL_VERSIONS).toBe('1');
    expect(env.STOWAGE_PLUGIN_LOG_LEVEL).toBe('debug');
    expect(JSON.stringify(env)).not.toContain('secret');
  });

  it('passes the object-store outage window when the server sets one', () => {
    const env = pluginEnv({ logLevel: 'info', parent: {}, objectStoreOutageMs: 5000 });
    expect(env.STOWAGE_PLUGIN_OBJECT_STORE_OUTAGE_TIMEOUT_MS).toBe('5000');
  });

  it('falls back to a standard PATH', () => {
    expect(pluginEnv({ logLevel: 'info', parent: {} }).PATH).toContain('/usr/bin');
  });
});

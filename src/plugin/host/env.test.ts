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

  it('passes the AWS workload-identity variables (IRSA, Pod Identity) and no other AWS variable', () => {
    const identity = {
      AWS_ROLE_ARN: 'arn:aws:iam::123456789012:role/stowage',
      AWS_WEB_IDENTITY_TOKEN_FILE: '/var/run/secrets/eks.amazonaws.com/serviceaccount/token',
      AWS_ROLE_SESSION_NAME: 'stowage-server',
      AWS_STS_REGIONAL_ENDPOINTS: 'regional',
      AWS_REGION: 'eu-west-1',
      AWS_DEFAULT_REGION: 'eu-west-1',
      AWS_CONTAINER_CREDENTIALS_FULL_URI: 'http://169.254.170.23/v1/credentials',
      AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: '/var/run/secrets/pods.eks.amazonaws.com/serviceaccount/eks-pod-identity-token',
    };
    const env = pluginEnv({
      logLevel: 'info',
      parent: { ...identity, PATH: '/usr/bin', AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_SECRET_ACCESS_KEY: 'secret', AWS_SESSION_TOKEN: 'token', AWS_PROFILE: 'p', AWS_CONFIG_FILE: '/x' },
    });
    expect(env).toEqual({ ...identity, PATH: '/usr/bin', PLUGIN_PROTOCOL_VERSIONS: '1', STOWAGE_PLUGIN: env.STOWAGE_PLUGIN, STOWAGE_PLUGIN_LOG_LEVEL: 'info' });
    expect(pluginEnv({ logLevel: 'info', parent: { AWS_REGION: '' } })).not.toHaveProperty('AWS_REGION');
  });

  it('passes the object-store outage window when the server sets one', () => {
    const env = pluginEnv({ logLevel: 'info', parent: {}, objectStoreOutageMs: 5000 });
    expect(env.STOWAGE_PLUGIN_OBJECT_STORE_OUTAGE_TIMEOUT_MS).toBe('5000');
  });

  it('falls back to a standard PATH', () => {
    expect(pluginEnv({ logLevel: 'info', parent: {} }).PATH).toContain('/usr/bin');
  });
});

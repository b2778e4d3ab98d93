// Plugin hardening with real processes: discovery refuses plugin files others could write or that
// live outside the plugin directory (server log and discovery error name the file and why), a tcp
// handshake off loopback is refused, and the AWS workload-identity variables reach the plugin
// while nothing else of the server's environment does.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPluginPool, PluginRegistryError } from '../../src/plugin/host/index.js';
import { configMap, livePids, memoryLogger, pluginDir, removeTempDirs, requireBuilt, RUN, tempDir, waitFor } from './support.js';

beforeAll(requireBuilt);
afterAll(removeTempDirs);

const backup = { apiVersion: 'stowage.dev/v1', kind: 'Backup', metadata: { name: 'b', namespace: 'stowage' } };

async function discoveryError(dir: string): Promise<{ err: PluginRegistryError; logged: string[] }> {
  const logs = memoryLogger();
  const err = await createPluginPool({ pluginDirs: [dir], logger: logs.logger }).then(
    () => {
      throw new Error('discovery unexpectedly succeeded');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PluginRegistryError);
  return { err: err as PluginRegistryError, logged: logs.entries.filter((e) => e.level === 'error').map((e) => e.message) };
}

describe('plugin discovery refuses untrusted files', () => {
  it('a group-writable plugin file: never started, named with the reason in the error and the server log', async () => {
    const p = pluginDir({ tester: 'test-plugin.mjs' });
    fs.chmodSync(p.path('tester'), 0o775);
    const { err, logged } = await discoveryError(p.dir);
    const why = `plugin file ${p.path('tester')} is group-writable (mode 0775); make it writable by its owner only (chmod go-w)`;
    expect(err.problems).toEqual([why]);
    expect(logged).toEqual([`plugin discovery: ${why}`]);
    expect(livePids(p.path('tester'))).toEqual([]);
  });

  it('a plugin file owned by another user', async () => {
    const p = pluginDir({ tester: 'test-plugin.mjs' });
    fs.chownSync(p.path('tester'), 4242, 4242); // the tests run as root; 4242 is neither root nor us
    const { err } = await discoveryError(p.dir);
    expect(err.problems).toEqual([`plugin file ${p.path('tester')} is owned by uid 4242, not by this server's uid ${process.getuid?.() ?? 0} or root`]);
  });

  it('a symlink to a plugin outside the directory; one inside the directory is followed', async () => {
    const outside = pluginDir({ elsewhere: 'test-plugin.mjs' });
    const p = pluginDir({ tester: 'test-plugin.mjs' });
    const real = fs.realpathSync(p.dir);
    fs.mkdirSync(path.join(p.dir, 'sub'));
    fs.symlinkSync(p.path('tester'), path.join(p.dir, 'sub', 'same'));
    fs.symlinkSync(outside.path('elsewhere'), path.join(p.dir, 'escape'));
    const { err } = await discoveryError(p.dir);
    expect(err.problems).toEqual([
      `plugin symlink ${real}/escape resolves to ${outside.path('elsewhere')}, outside the plugin directory ${real}; copy the plugin into the directory instead`,
    ]);
    fs.unlinkSync(path.join(p.dir, 'escape'));
    const pool = await createPluginPool({ pluginDirs: [p.dir], logger: memoryLogger().logger });
    try {
      expect(new Set(pool.plugins.map((x) => x.executable))).toEqual(new Set([p.path('tester')]));
    } finally {
      await pool.shutdown();
    }
  });
});

describe('tcp handshakes', () => {
  it('a plugin announcing a non-loopback tcp address is refused with the reason', async () => {
    const dir = tempDir('tcp-plugins');
    const file = path.join(dir, 'remote');
    // Prints a well-formed handshake for an address on the network, then waits to be killed.
    fs.writeFileSync(file, '#!/bin/sh\necho "1|1|tcp|10.1.2.3:4000|grpc"\nexec sleep 30\n');
    fs.chmodSync(file, 0o755);
    const { err } = await discoveryError(dir);
    expect(err.problems).toHaveLength(1);
    expect(err.problems[0]).toContain(
      `plugin ${fs.realpathSync(file)} serves on tcp address "10.1.2.3:4000", which is not a loopback address: a tcp plugin must listen on 127.0.0.0/8 or [::1] (IP:PORT), or use a unix socket`,
    );
    await waitFor('the refused plugin killed', () => (livePids(fs.realpathSync(file)).length === 0 ? true : undefined), 3000);
  });
});

describe('plugin environment', () => {
  it('passes the AWS workload-identity variables on and nothing else', async () => {
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
    const leaks = { AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_SECRET_ACCESS_KEY: 'must-not-leak', AWS_SESSION_TOKEN: 'must-not-leak', STOWAGE_TEST_SECRET: 'must-not-leak' };
    const saved = new Map(Object.keys({ ...identity, ...leaks }).map((k) => [k, process.env[k]]));
    Object.assign(process.env, identity, leaks);
    const p = pluginDir({ tester: 'test-plugin.mjs' });
    const pool = await createPluginPool({ pluginDirs: [p.dir], logger: memoryLogger().logger });
    const h = pool.handle(RUN);
    try {
      const out = await h.backupItemAction('test.stowage.dev/env').execute({ item: configMap('e'), backup });
      const env = JSON.parse(out.item.metadata.annotations?.env ?? '{}') as Record<string, string>;
      expect(Object.keys(env).sort()).toEqual(
        [...Object.keys(identity), 'PATH', 'PLUGIN_PROTOCOL_VERSIONS', 'STOWAGE_PLUGIN', 'STOWAGE_PLUGIN_LOG_LEVEL', 'STOWAGE_PLUGIN_OBJECT_STORE_OUTAGE_TIMEOUT_MS'].sort(),
      );
      for (const [k, v] of Object.entries(identity)) expect(env[k]).toBe(v);
      expect(JSON.stringify(env)).not.toContain('must-not-leak');
    } finally {
      h.release();
      await pool.shutdown();
      for (const [k, v] of saved) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });
});

// The credential files the server writes for plugins, with a real server and API: each location's
// private copy of its Secret key goes when the location is deleted, all of them when the server
// stops, and what a killed server left is removed when the next one starts.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { newBackupStorageLocation, RESOURCES, type BackupStorageLocation } from '../../src/apis/v1/index.js';
import { CORE, ensureCrds, isNotFound, type DynamicClient } from '../../src/kube/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { ensureNamespace, filesystemLocation, startServer, testClient, type RunningServer } from '../support/server.js';
import { requireBuilt } from './support.js';

const BSLS = RESOURCES.BackupStorageLocation;

describe('credential files for plugins', () => {
  const ns = uniqueName('creds');
  const scratchDir = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-creds-'));
  const credentials = path.join(scratchDir, 'credentials');
  const locs = [filesystemLocation('first'), filesystemLocation('second')];
  let client: DynamicClient;
  let server: RunningServer | undefined;

  beforeAll(async () => {
    requireBuilt();
    client = testClient(inject('cluster').kubeconfigPath);
    await ensureCrds(client);
    await ensureNamespace(client, ns);
    await client.create(CORE.secrets, ns, { metadata: { name: 'cloud-creds' }, stringData: { cloud: '[default]\naws_access_key_id=AKIDTEST\n' } });
    for (const l of locs) {
      await client.create(BSLS, ns, newBackupStorageLocation(l.name, ns, { ...l.spec, default: l.name === 'first', credential: { name: 'cloud-creds', key: 'cloud' } }));
    }
  });

  afterAll(async () => {
    await server?.stop();
    client?.close();
    fs.rmSync(scratchDir, { recursive: true, force: true });
    for (const l of locs) fs.rmSync(l.root, { recursive: true, force: true });
  });

  const filesOf = (location: string): string[] => {
    const dir = path.join(credentials, location);
    return fs.existsSync(dir) ? fs.readdirSync(dir).map((f) => path.join(dir, f)) : [];
  };

  it('are written per location (0600), removed with their location, and all removed at start and stop', async () => {
    // What a server killed with SIGKILL left behind.
    fs.mkdirSync(path.join(credentials, 'long-gone'), { recursive: true });
    fs.writeFileSync(path.join(credentials, 'long-gone', 'abc'), 'old secret', { mode: 0o600 });

    server = await startServer({ kubeconfigPath: inject('cluster').kubeconfigPath, namespace: ns, scratchDir });
    for (const l of locs) {
      await waitUntil(`location ${l.name} Available`, async () => {
        const cur = await client.get<BackupStorageLocation>(BSLS, ns, l.name);
        return cur.status?.phase === 'Available' ? cur : undefined;
      }, 60_000);
    }
    expect(fs.existsSync(path.join(credentials, 'long-gone'))).toBe(false);
    for (const l of locs) {
      const files = filesOf(l.name);
      expect(files).toHaveLength(1);
      expect(fs.readFileSync(files[0] as string, 'utf8')).toBe('[default]\naws_access_key_id=AKIDTEST\n');
      expect(fs.statSync(files[0] as string).mode & 0o777).toBe(0o600);
    }

    await client.delete(BSLS, ns, 'first');
    await waitUntil('the deleted location\'s credential file to go', async () => (fs.existsSync(path.join(credentials, 'first')) ? undefined : true), 30_000);
    await expect(client.get(BSLS, ns, 'first').catch((e: unknown) => (isNotFound(e) ? 'gone' : e))).resolves.toBe('gone');
    expect(filesOf('second')).toHaveLength(1);

    expect(await server.stop()).toBe(0);
    expect(fs.existsSync(credentials)).toBe(false);
  });
});

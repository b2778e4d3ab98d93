// runBackup and BackupStore over the built-in object stores (stowage.dev/filesystem and
// stowage.dev/aws against the S3 server), used in-process: the tarball and artifacts land in the store
// and read back intact.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import winston from 'winston';
import { newBackup } from '../../src/apis/v1/index.js';
import { manifestEntries, readArchive, verifyManifest } from '../../src/archive/index.js';
import { runBackup } from '../../src/backup/index.js';
import { CORE, createDynamicClient, loadKubeConfig, type DynamicClient } from '../../src/kube/index.js';
import { createBackupStore } from '../../src/persistence/backupStore.js';
import { AwsObjectStore } from '../../src/plugin/builtin/aws.js';
import { FilesystemObjectStore } from '../../src/plugin/builtin/index.js';
import type { ObjectStore } from '../../src/plugin/api/index.js';
import { uniqueName } from '../support/kube.js';
import { testS3, type TestS3 } from '../support/s3ObjectStore.js';

describe('backups through the built-in object stores', () => {
  let client: DynamicClient;
  let s3: TestS3;
  let ns = '';
  let tmp = '';
  const log = winston.createLogger({ transports: [new winston.transports.Console({ silent: true })] });

  beforeAll(async () => {
    client = createDynamicClient(loadKubeConfig(inject('cluster').kubeconfigPath), { qps: 200, burst: 400 });
    s3 = testS3();
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-stores-'));
    ns = uniqueName('stores');
    await client.create(CORE.namespaces, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await Promise.all(Array.from({ length: 30 }, (_, i) =>
      client.create(CORE.configMaps, ns, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `c${i}` }, data: { i: String(i) } })));
  });

  afterAll(async () => {
    await client?.delete(CORE.namespaces, undefined, ns).catch(() => undefined);
    client?.close();
    s3?.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  const stores: [string, () => Promise<{ store: ObjectStore; bucket: string }>][] = [
    ['stowage.dev/filesystem', async () => {
      const store = new FilesystemObjectStore();
      await store.init({ root: path.join(tmp, 'fs') });
      return { store, bucket: 'backups' };
    }],
    ['stowage.dev/aws', async () => {
      const cfg = inject('s3');
      const credentialsFile = path.join(tmp, 'aws-credentials');
      fs.writeFileSync(credentialsFile, `[default]\naws_access_key_id = ${cfg.accessKeyId}\naws_secret_access_key = ${cfg.secretAccessKey}\n`, { mode: 0o600 });
      const store = new AwsObjectStore();
      await store.init({ region: cfg.region, s3Url: cfg.endpoint, s3ForcePathStyle: 'true', credentialsFile });
      return { store, bucket: await s3.createBucket(uniqueName('aws')) };
    }],
  ];

  for (const [provider, make] of stores) {
    it(`writes a whole backup through ${provider}`, async () => {
      const { store: objectStore, bucket } = await make();
      const store = createBackupStore({ objectStore, bucket, prefix: 'p' });
      const backup = newBackup('b1', 'stowage', { includedNamespaces: [ns] });
      const result = await runBackup({ client, store, log }, backup);
      expect(result.phase).toBe('Completed');
      await store.completeBackup('b1', { resourceList: result.resourceList, results: result.results, manifest: result.manifest, backup });
      await expect(store.validate()).resolves.toBeUndefined();
      expect(await store.listBackupNames()).toEqual(['b1']);

      const contents = await readArchive(await store.getTarball('b1'));
      const manifest = await store.getManifest('b1');
      // The writer keeps its table compactly (ManifestTable); the stored manifest is its JSON form.
      expect(manifest).toEqual({ ...result.manifest, entries: Object.fromEntries(manifestEntries(result.manifest!)) });
      expect(verifyManifest(contents, manifest!)).toEqual([]);
      expect(contents.items.filter((i) => i.groupResource === 'configmaps' && i.name.startsWith('c')).map((i) => i.name).sort())
        .toEqual(Array.from({ length: 30 }, (_, i) => `c${i}`).sort());
      expect(await store.getResourceList('b1')).toEqual(result.resourceList);

      await store.deleteBackup('b1');
      expect(await store.listBackupNames()).toEqual([]);
      expect(await objectStore.listObjects(bucket, 'p/backups/')).toEqual([]);
    });
  }
});

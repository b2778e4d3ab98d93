// Proves the committed CRD YAML is valid on the local Kubernetes apiserver: every CRD becomes
// Established, a sample of each kind is accepted, its status subresource works, and the schema
// validates and prunes (or, in run specs, keeps for validation) as declared.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it, beforeAll } from 'vitest';
import * as k8s from '@kubernetes/client-node';
import {
  GROUP,
  KINDS,
  RESOURCES,
  VERSION,
  newBackup,
  newBackupStorageLocation,
  newDeleteBackupRequest,
  newDownloadRequest,
  newObject,
  newRestore,
  newSchedule,
  newServerStatusRequest,
  type KindMap,
  type StowageKind,
} from '../../src/apis/v1/index.js';
import { createDynamicClient, resourcePath } from '../../src/kube/index.js';
import { adminConfig, createNamespace, waitUntil } from '../support/kube.js';

const CRD_DIR = path.resolve(import.meta.dirname, '../../deploy/crds');

// loadYaml maps wire names (`enum`, `x-kubernetes-*`) onto client-node's model; a plain YAML parse
// would have them silently dropped by the typed serializer.
async function applyCrd(ext: k8s.ApiextensionsV1Api, crd: k8s.V1CustomResourceDefinition): Promise<void> {
  const name = crd.metadata?.name ?? '';
  // Other test files may install the same CRDs concurrently: create, else replace at the current version.
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      await ext.createCustomResourceDefinition({ body: crd });
      return;
    } catch (err) {
      if ((err as { code?: number }).code !== 409) throw err;
    }
    const cur = await ext.readCustomResourceDefinition({ name });
    try {
      await ext.replaceCustomResourceDefinition({ name, body: { ...crd, metadata: { ...crd.metadata, resourceVersion: cur.metadata?.resourceVersion } } });
      return;
    } catch (err) {
      if ((err as { code?: number }).code !== 409) throw err;
    }
  }
  throw new Error(`could not apply CRD ${name}`);
}

/** A valid sample of each kind, plus the status the test writes through /status. */
function samples(ns: string): { [K in StowageKind]: { obj: KindMap[K]; status: NonNullable<KindMap[K]['status']> } } {
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  return {
    Backup: {
      obj: newBackup('b1', ns, {
        includedNamespaces: ['app'],
        includeClusterResources: null,
        labelSelector: { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['a', 'b'] }] },
        ttl: '720h0m0s',
        storageLocation: 'default',
        hooks: { resources: [{ name: 'h', pre: [{ exec: { command: ['true'] } }] }] },
        orderedResources: { pods: 'app/a,app/b' },
      }),
      status: { phase: 'Completed', startTimestamp: now, completionTimestamp: now, expiration: now, progress: { totalItems: 3, itemsBackedUp: 3 }, warnings: 0, errors: 0, formatVersion: '1.1.0' },
    },
    BackupStorageLocation: {
      obj: newBackupStorageLocation('default', ns, {
        provider: 'stowage.dev/aws',
        objectStorage: { bucket: 'bk', prefix: 'cluster-a' },
        config: { region: 'us-east-1' },
        credential: { name: 'creds', key: 'cloud' },
        default: true,
        accessMode: 'ReadWrite',
        validationFrequency: '1m',
      }),
      status: { phase: 'Available', lastValidationTime: now },
    },
    Restore: {
      obj: newRestore('r1', ns, { backupName: 'b1', namespaceMapping: { app: 'app2' }, existingResourcePolicy: 'update', restoreStatus: { includedResources: ['*'] }, dryRun: true }),
      status: { phase: 'Completed', progress: { totalItems: 3, itemsRestored: 3 }, summary: { created: 2, updated: 1, skipped: 0, failed: 0 }, warnings: 1, errors: 0 },
    },
    Schedule: {
      obj: newSchedule('nightly', ns, { schedule: '0 1 * * *', template: { includedNamespaces: ['app'] }, paused: false, skipImmediately: true, keepLast: 3, keepDaily: 7 }),
      status: { phase: 'Enabled', lastBackup: now, lastBackupName: 'nightly-20240101010000' },
    },
    DeleteBackupRequest: { obj: newDeleteBackupRequest('b1', ns), status: { phase: 'Processed', errors: ['bucket gone'] } },
    DownloadRequest: { obj: newDownloadRequest(ns, { kind: 'BackupLog', name: 'b1' }), status: { phase: 'Processed', sealedURL: { algorithm: 'X25519-HKDF-SHA256-AES-256-GCM', ephemeralPublicKey: 'ZXBo', nonce: 'bm9uY2U=', ciphertext: 'Y3Q=' }, expiration: now } },
    ServerStatusRequest: {
      obj: newServerStatusRequest(ns),
      status: { phase: 'Processed', processedTimestamp: now, serverVersion: '0.1.0', plugins: [{ name: 'stowage.dev/aws', kind: 'ObjectStore' }] },
    },
    VolumeSnapshotLocation: { obj: newObject('VolumeSnapshotLocation', { name: 'vsl', namespace: ns }, { provider: 'stowage.dev/none' }), status: { phase: 'Available' } },
  };
}

describe('CRDs on the local Kubernetes', () => {
  const kc = adminConfig();
  const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  let ns = '';

  beforeAll(async () => {
    const files = fs.readdirSync(CRD_DIR).filter((f) => f.endsWith('.yaml'));
    expect(files.length).toBe(KINDS.length);
    await Promise.all(files.map((f) => applyCrd(ext, k8s.loadYaml<k8s.V1CustomResourceDefinition>(fs.readFileSync(path.join(CRD_DIR, f), 'utf8')))));
    await Promise.all(
      KINDS.map((def) =>
        waitUntil(`CRD ${def.plural} established`, async () => {
          const crd = await ext.readCustomResourceDefinition({ name: `${def.plural}.${GROUP}` });
          return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ? true : undefined;
        }, 30_000),
      ),
    );
    ns = await createNamespace(kc, 'crds');
  });

  it('accepts a sample of every kind and stores status through the status subresource only', async () => {
    const all = samples(ns);
    for (const kind of Object.keys(all) as StowageKind[]) {
      const { obj, status } = all[kind];
      const plural = RESOURCES[kind].resource;
      const base = { group: GROUP, version: VERSION, namespace: ns, plural };
      // Status sent with create is dropped: the status subresource is enabled.
      const created = (await custom.createNamespacedCustomObject({ ...base, body: { ...obj, status } })) as KindMap[StowageKind];
      expect(created.status, kind).toBeUndefined();
      const name = created.metadata.name;
      expect(name, kind).not.toBe('');
      // The spec round-trips unchanged: nothing in the sample was pruned.
      expect(created.spec, kind).toEqual(obj.spec);

      await custom.patchNamespacedCustomObjectStatus(
        { ...base, name, body: { status } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
      const got = (await custom.getNamespacedCustomObject({ ...base, name })) as KindMap[StowageKind];
      expect(got.status, kind).toEqual(status);
    }
  });

  it('rejects values outside the declared enums and missing required fields', async () => {
    const base = { group: GROUP, version: VERSION, namespace: ns, plural: RESOURCES.BackupStorageLocation.resource };
    const bad = newBackupStorageLocation('bad', ns, { provider: 'p', objectStorage: { bucket: 'b' } });
    const err = await custom
      .createNamespacedCustomObject({ ...base, body: { ...bad, spec: { ...bad.spec, accessMode: 'WriteOnly' } } })
      .then(() => undefined, (e: unknown) => e as { code?: number; body?: string });
    expect(err?.code).toBe(422);
    expect(String(err?.body)).toContain('spec.accessMode');

    const noBucket = await custom
      .createNamespacedCustomObject({ ...base, body: { ...bad, metadata: { name: 'bad2' }, spec: { provider: 'p', objectStorage: {} } } })
      .then(() => undefined, (e: unknown) => e as { code?: number; body?: string });
    expect(noBucket?.code).toBe(422);
    expect(String(noBucket?.body)).toContain('spec.objectStorage.bucket');
  });

  it('serves the printer columns kubectl shows', async () => {
    const client = createDynamicClient(kc);
    try {
      const table = await client.request<{ columnDefinitions: { name: string }[]; rows: { cells: unknown[] }[] }>({
        method: 'GET',
        path: resourcePath(RESOURCES.Backup, ns),
        accept: 'application/json;as=Table;v=v1;g=meta.k8s.io',
      });
      expect(table.columnDefinitions.map((c) => c.name)).toEqual(['Name', 'Phase', 'Items', 'Errors', 'Warnings', 'Expiration', 'Storage Location', 'Age']);
      const row = table.rows.find((r) => r.cells[0] === 'b1');
      expect(row?.cells.slice(1, 4)).toEqual(['Completed', 3, 0]);
    } finally {
      client.close();
    }
  });

  it('keeps undeclared fields of a run\'s spec, for validation to refuse by name, and prunes them elsewhere', async () => {
    // Backup, Restore and Schedule specs preserve unknown fields: pruned, a typo or a Velero field
    // Stowage does not implement would vanish and the run go ahead without it.
    const base = { group: GROUP, version: VERSION, namespace: ns, plural: RESOURCES.Backup.resource };
    const b = newBackup('kept', ns, { ttl: '1h' });
    const created = (await custom.createNamespacedCustomObject({
      ...base, body: { ...b, spec: { ...b.spec, bogusField: 1, labelSelector: { matchLables: { a: 'b' } } } },
    })) as KindMap['Backup'];
    expect(created.spec).toEqual({ ttl: '1h', bogusField: 1, labelSelector: { matchLables: { a: 'b' } } });
    const loc = newBackupStorageLocation('pruned', ns, { provider: 'stowage.dev/filesystem', objectStorage: { bucket: 'b' } });
    const bsl = (await custom.createNamespacedCustomObject({
      group: GROUP, version: VERSION, namespace: ns, plural: RESOURCES.BackupStorageLocation.resource,
      body: { ...loc, spec: { ...loc.spec, bogusField: 1, objectStorage: { bucket: 'b', bogus: 2 } } },
    })) as KindMap['BackupStorageLocation'];
    expect(bsl.spec).toEqual({ provider: 'stowage.dev/filesystem', objectStorage: { bucket: 'b' } });
  });
});

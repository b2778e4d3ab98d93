// BackupStorageLocation validation as an operator meets it: a typo in the bucket makes the location
// Unavailable with the reason; fixing the spec is validated at once (not at the next period), and a
// backup or restore created right after the fix waits for that validation instead of failing on the
// old phase.
import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { RESOURCES, newBackup, newRestore, type Backup, type BackupStorageLocation, type BackupStorageLocationSpec, type Restore } from '../../src/apis/v1/index.js';
import { startS3Server, type S3Server } from '../../scripts/cluster/s3.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { createS3CredentialsSecret, ensureNamespace, s3LocationSpec, startServer, testClient, waitFinished } from '../support/server.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

const s3Location = (s3: S3Server, bucket: string, validationFrequency?: string): BackupStorageLocationSpec =>
  s3LocationSpec(s3, { bucket, prefix: 'site', secret: 'cloud-credentials', ...(validationFrequency !== undefined ? { validationFrequency } : {}) });

describe('backup storage location validation', () => {
  const c = testClient(inject('cluster').kubeconfigPath);

  async function setUp(spec: (s3: S3Server) => BackupStorageLocationSpec): Promise<{ ns: string; s3: S3Server }> {
    const ns = uniqueName('bsl');
    const s3 = await startS3Server({ buckets: ['vault'] });
    cleanups.push(() => s3.close());
    // The credentials exist before the server's first validation, so only the bucket can be wrong.
    await ensureNamespace(c, ns);
    await createS3CredentialsSecret(c, ns, 'cloud-credentials', s3);
    const server = await startServer({ kubeconfigPath: inject('cluster').kubeconfigPath, namespace: ns, location: { name: 'default', spec: spec(s3) } });
    cleanups.push(() => server.stop());
    return { ns, s3 };
  }

  const location = (ns: string): Promise<BackupStorageLocation> => c.get<BackupStorageLocation>(RESOURCES.BackupStorageLocation, ns, 'default');

  /** The location once its status describes its current spec with `phase`. */
  const validated = (ns: string, phase: string, timeoutMs: number): Promise<BackupStorageLocation> =>
    waitUntil(`location ${phase} for its current spec`, async () => {
      const l = await location(ns);
      return l.status?.phase === phase && l.status.observedGeneration === l.metadata.generation ? l : undefined;
    }, timeoutMs, 100);

  it('names the missing bucket, and validates a fixed spec at once so the next backup runs', async () => {
    // The default validation period (1m) is far longer than this test waits for the fix to show.
    const { ns } = await setUp((s3) => s3Location(s3, 'vualt'));
    const bad = await validated(ns, 'Unavailable', 60_000);
    expect(bad.status?.message).toMatch(/bucket "vualt" under prefix "site\/" is not reachable: .*bucket does not exist/);
    expect(bad.status?.message).not.toContain('S3RVER');

    await c.create(RESOURCES.Backup, ns, newBackup('too-early', ns, { includedNamespaces: ['default'] }));
    const rejected = await waitUntil('too-early rejected', async () => {
      const b = await c.get<Backup>(RESOURCES.Backup, ns, 'too-early');
      return b.status?.phase === 'FailedValidation' ? b : undefined;
    }, 30_000, 100);
    expect(rejected.status?.validationErrors?.join('\n')).toContain('backup storage location "default" is Unavailable: bucket "vualt"');

    await c.patch(RESOURCES.BackupStorageLocation, ns, 'default', { spec: { objectStorage: { bucket: 'vault', prefix: 'site' } } }, 'merge');
    await c.create(RESOURCES.Backup, ns, newBackup('after-fix', ns, { includedNamespaces: ['default'] }));
    const t0 = Date.now();
    const good = await validated(ns, 'Available', 20_000);
    expect(Date.now() - t0).toBeLessThan(20_000);
    expect(good.status?.message).toBeUndefined();
    const done = await waitFinished<Backup>(c, RESOURCES.Backup, ns, 'after-fix', 60_000);
    expect(done.status?.validationErrors).toBeUndefined();
    expect(done.status?.phase).toBe('Completed');

    // The same for a restore: break the location, then fix it and restore at once.
    await c.patch(RESOURCES.BackupStorageLocation, ns, 'default', { spec: { objectStorage: { bucket: 'vualt', prefix: 'site' } } }, 'merge');
    await validated(ns, 'Unavailable', 20_000);
    await c.patch(RESOURCES.BackupStorageLocation, ns, 'default', { spec: { objectStorage: { bucket: 'vault', prefix: 'site' } } }, 'merge');
    await c.create(RESOURCES.Restore, ns, newRestore('after-fix', ns, { backupName: 'after-fix', dryRun: true }));
    const restored = await waitFinished<Restore>(c, RESOURCES.Restore, ns, 'after-fix', 60_000);
    expect(restored.status?.validationErrors).toBeUndefined();
    expect(restored.status?.phase).toBe('Completed');
  });

  it('with validationFrequency 0s, validates each spec once and never again on its own', async () => {
    const { ns } = await setUp((s3) => s3Location(s3, 'vault', '0s'));
    const first = await validated(ns, 'Available', 60_000);
    const firstTime = first.status?.lastValidationTime;
    await new Promise((r) => setTimeout(r, 2500));
    expect((await location(ns)).status?.lastValidationTime).toBe(firstTime);

    await c.patch(RESOURCES.BackupStorageLocation, ns, 'default', { spec: { objectStorage: { bucket: 'vault', prefix: 'elsewhere' } } }, 'merge');
    const again = await validated(ns, 'Available', 20_000);
    expect(again.metadata.generation).toBe((first.metadata.generation ?? 0) + 1);
  });
});

// No field is accepted and ignored, through the real apiserver: the CRDs keep Velero's
// unimplemented fields and typos (a structural schema would prune them silently), and
// `stowage server` refuses a run that sets one, naming the field in status.validationErrors.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { LABEL_SCHEDULE_NAME, RESOURCES, newBackup, newRestore, newSchedule, type Backup, type BackupStorageLocation, type Restore, type Schedule } from '../../src/apis/v1/index.js';
import type { DynamicClient } from '../../src/kube/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { ensureNamespace, filesystemLocation, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';

describe('spec fields Stowage does not implement', () => {
  const ns = uniqueName('stowage');
  const app = uniqueName('app');
  let client: DynamicClient;
  let server: RunningServer;
  let loc: ReturnType<typeof filesystemLocation>;

  beforeAll(async () => {
    const kc = inject('cluster').kubeconfigPath;
    client = testClient(kc);
    await ensureNamespace(client, app);
    await client.create({ group: '', version: 'v1', resource: 'configmaps', namespaced: true }, app, { metadata: { name: 'cm' }, data: { k: 'v' } });
    const fsLoc = filesystemLocation();
    loc = { ...fsLoc, spec: { ...fsLoc.spec, backupSyncPeriod: '1s' } };
    server = await startServer({ kubeconfigPath: kc, namespace: ns, location: loc });
    // A run refused for its fields also lists a location that is not validated yet: wait, so that
    // each test sees the field errors alone.
    await waitUntil('location Available', async () => {
      const l = await client.get<BackupStorageLocation>(RESOURCES.BackupStorageLocation, ns, loc.name);
      return l.status?.phase === 'Available' ? l : undefined;
    });
  });

  afterAll(async () => {
    await server?.stop();
  });

  /** Creates a Backup from raw spec JSON (fields the TypeScript types do not have included) and waits for its end. */
  async function backup(name: string, spec: Record<string, unknown>): Promise<Backup> {
    await client.create(RESOURCES.Backup, ns, { ...newBackup(name, ns), spec });
    return waitFinished<Backup>(client, RESOURCES.Backup, ns, name);
  }

  it('a Backup whose hooks (Velero\'s format, accepted) hold bad values fails validation naming each field', async () => {
    const b = await backup('bad-hooks', {
      includedNamespaces: [app],
      hooks: { resources: [{ name: 'freeze', includedNamespaces: [app], pre: [{ exec: { command: [], onError: 'Ignore', timeout: 'soon' } }], post: [{ exec: { command: ['thaw'], timeout: '10s' } }] }] },
    });
    expect(b.status?.phase).toBe('FailedValidation');
    expect(b.status?.validationErrors).toEqual([
      'spec.hooks.resources[0].pre[0].exec.command is empty: give the executable and its arguments',
      'spec.hooks.resources[0].pre[0].exec.onError: "Ignore" is not an onError mode (use Fail or Continue)',
      'spec.hooks.resources[0].pre[0].exec.timeout "soon" is not a duration like 720h0m0s: expected a number at position 1, found "s"',
    ]);
    // The controller logs the refusal just after the status patch lands.
    await waitUntil('the refusal in the server log', async () => (server.output().includes('spec.hooks.resources[0].pre[0].exec.onError') ? true : undefined), 10_000);
  });

  it('a Backup with defaultVolumesToFsBackup: true (kept by the apiserver, not pruned) fails validation naming it, with why', async () => {
    const b = await backup('fs-backup', { includedNamespaces: [app], defaultVolumesToFsBackup: true, snapshotVolumes: true });
    expect(b.spec.defaultVolumesToFsBackup).toBe(true);
    expect(b.status?.phase).toBe('FailedValidation');
    expect(b.status?.validationErrors).toEqual([
      'spec.defaultVolumesToFsBackup: file-system backup of pod volumes (Velero\'s node agent, Kopia or Restic) is not supported: Stowage backs volume data up through CSI snapshots (snapshotVolumes); remove the field or set it to false',
    ]);
  });

  it('a field no schema declares is stored and refused by name, at the top and nested', async () => {
    const b = await backup('typos', { includedNamespaces: [app], snapshotVolume: true, labelSelector: { matchLables: { app: 'web' } } });
    expect((b.spec as Record<string, unknown>).snapshotVolume).toBe(true);
    expect(b.status?.phase).toBe('FailedValidation');
    expect(b.status?.validationErrors).toEqual([
      'spec.labelSelector.matchLables: unknown field (spec.labelSelector has no such field); fix its spelling or remove it',
      'spec.snapshotVolume: unknown field (the Backup spec has no such field); fix its spelling or remove it',
    ]);
  });

  it('Velero\'s defaults that ask for nothing (false, {}) do not stop a backup', async () => {
    const b = await backup('velero-defaults', { includedNamespaces: [app], hooks: {}, metadata: {}, snapshotVolumes: false, defaultVolumesToFsBackup: false });
    expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
  });

  it('a backup synced from the bucket that carries them (written by Velero) is imported as it is, not validated again', async () => {
    const dir = path.join(loc.root, 'backups', 'backups');
    const stored = JSON.parse(fs.readFileSync(path.join(dir, 'velero-defaults', 'stowage-backup.json'), 'utf8')) as Backup;
    const spec = { ...stored.spec, hooks: { resources: [{ name: 'freeze' }] }, snapshotVolumes: true, defaultVolumesToFsBackup: true };
    fs.mkdirSync(path.join(dir, 'from-velero'));
    fs.writeFileSync(path.join(dir, 'from-velero', 'stowage-backup.json'), JSON.stringify({ ...stored, metadata: { ...stored.metadata, name: 'from-velero' }, spec }));
    const b = await waitUntil('from-velero synced', async () => {
      const cur = await client.get<Backup>(RESOURCES.Backup, ns, 'from-velero').catch(() => undefined);
      return cur?.status?.phase !== undefined ? cur : undefined;
    }, 60_000, 250);
    expect(b.status?.phase).toBe('Completed');
    expect(b.status?.validationErrors).toBeUndefined();
    expect(b.spec.hooks).toEqual({ resources: [{ name: 'freeze' }] });
    expect(b.spec.defaultVolumesToFsBackup).toBe(true);
    expect(server.output()).not.toMatch(/from-velero failed validation/);
  });

  it('a Restore whose hooks hold a bad value fails validation naming the field (its hooks are honoured, docs/restore-hooks.md; restorePVs is honoured: CSI snapshots)', async () => {
    await client.create(RESOURCES.Restore, ns, {
      ...newRestore('with-hooks', ns, { backupName: 'velero-defaults' }),
      spec: { backupName: 'velero-defaults', restorePVs: true, hooks: { resources: [{ name: 'init', postHooks: [{ init: { initContainers: [] } }] }] } },
    });
    const r = await waitFinished<Restore>(client, RESOURCES.Restore, ns, 'with-hooks');
    expect(r.status?.phase).toBe('FailedValidation');
    expect(r.status?.validationErrors).toEqual([
      'spec.hooks.resources[0].postHooks[0].init.initContainers is empty: give at least one container',
    ]);
  });

  it('lists over their caps fail validation at once, naming the field, its length and the cap, before any LIST', async () => {
    const names = (n: number, prefix: string): string[] => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
    // The 5,000 names of issue 18: one LIST per namespace and resource would have taken about 27 minutes.
    const b = await backup('five-thousand', { includedNamespaces: names(5000, 'team') });
    expect(b.status?.phase).toBe('FailedValidation');
    expect(b.status?.startTimestamp).toBeUndefined();
    expect(b.status?.validationErrors).toEqual([
      'includedNamespaces has 5000 entries, more than the 1000 allowed; name a larger set with a pattern (e.g. "team-*") or a label selector',
    ]);

    await client.create(RESOURCES.Restore, ns, {
      ...newRestore('many-mappings', ns, { backupName: 'velero-defaults' }),
      spec: {
        backupName: 'velero-defaults',
        namespaceMapping: Object.fromEntries(names(1001, 'src').map((n) => [n, `${n}-copy`])),
        orLabelSelectors: names(17, 'app').map((v) => ({ matchLabels: { app: v } })),
      },
    });
    const r = await waitFinished<Restore>(client, RESOURCES.Restore, ns, 'many-mappings');
    expect(r.status?.phase).toBe('FailedValidation');
    expect(r.status?.validationErrors).toEqual([
      'orLabelSelectors has 17 entries, more than the 16 allowed; each one is another LIST of every resource; combine them with "In" expressions',
      'namespaceMapping has 1001 entries, more than the 1000 allowed; restore fewer namespaces per Restore',
    ]);

    await client.create(RESOURCES.Schedule, ns, {
      ...newSchedule('many-resources', ns, { schedule: '0 3 * * *', template: {} }),
      spec: { schedule: '0 3 * * *', template: { includedResources: names(2001, 'things') } },
    });
    const s = await waitUntil('schedule many-resources validated', async () => {
      const cur = await client.get<Schedule>(RESOURCES.Schedule, ns, 'many-resources');
      return cur.status?.phase !== undefined ? cur : undefined;
    });
    expect(s.status?.phase).toBe('FailedValidation');
    expect(s.status?.validationErrors).toEqual([
      'spec.template: includedResources has 2001 entries, more than the 2000 allowed; include "*" and exclude what to leave out instead',
    ]);
  });

  it('a Schedule whose template sets one fails validation naming spec.template.<field>, and creates no backup', async () => {
    await client.create(RESOURCES.Schedule, ns, {
      ...newSchedule('fs-nightly', ns, { schedule: '0 3 * * *', template: {} }),
      spec: { schedule: '0 3 * * *', template: { includedNamespaces: [app], defaultVolumesToFsBackup: true } },
    });
    const s = await waitUntil('schedule fs-nightly validated', async () => {
      const cur = await client.get<Schedule>(RESOURCES.Schedule, ns, 'fs-nightly');
      return cur.status?.phase !== undefined ? cur : undefined;
    });
    expect(s.status?.phase).toBe('FailedValidation');
    expect(s.status?.validationErrors).toEqual([
      'spec.template.defaultVolumesToFsBackup: file-system backup of pod volumes (Velero\'s node agent, Kopia or Restic) is not supported: Stowage backs volume data up through CSI snapshots (snapshotVolumes); remove the field or set it to false',
    ]);
    const backups = await client.list<Backup>(RESOURCES.Backup, { namespace: ns, labelSelector: `${LABEL_SCHEDULE_NAME}=fs-nightly` });
    expect(backups.items).toEqual([]);
  });
});

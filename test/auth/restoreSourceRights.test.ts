// A requester brings back only what they could read (issue 31, item 1), end to end: the server as
// its ServiceAccount in trust mode "requester", the admission webhook stamping what alice creates
// with her own token, and alice holding exactly the team Role docs/security.md documents (create
// on Stowage's kinds in the server's namespace, `admin` in her team's namespace and nowhere else).
// Restoring an admin's backup of team-b into team-a, from a schedule, of the server's own namespace
// (its storage credentials), as a dry run, or from an imported Velero backup: each fails
// validation naming the source namespace, the kinds and the verbs she lacks, before anything is
// written. Her own namespace still restores.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  LABEL_SCHEDULE_NAME, RESOURCES, newBackup, newBackupStorageLocation, newRestore, type Backup, type BackupSpec, type Restore, type RestoreSpec,
} from '../../src/apis/v1/index.js';
import { REQUESTER_ANNOTATION, formatRequester, type Requester } from '../../src/auth/index.js';
import { CORE, type DynamicClient } from '../../src/kube/index.js';
import { writeVeleroBucket, type Item } from '../fixtures/velero/bucket.js';
import { teamUserKubeconfig, uniqueName, waitUntil } from '../support/kube.js';
import { testS3 } from '../support/s3ObjectStore.js';
import { createS3CredentialsSecret, ensureNamespace, s3LocationSpec, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';
import { RBAC, ROLE_BINDINGS, getOrUndefined, res } from '../restore/support.js';

const ROLES = res(RBAC, 'v1', 'roles', true);
const ADMIN: Requester = { username: 'admin', uid: 'admin', groups: ['system:masters', 'system:authenticated'] };

describe('a restore takes only what its requester could read', () => {
  const ns = uniqueName('stowage-rsr');
  const teamA = uniqueName('team-a');
  const teamB = uniqueName('team-b');
  const bucket = uniqueName('restore-sources');
  const kubeconfig = inject('cluster').kubeconfigPath;
  let admin: DynamicClient;
  let alice: DynamicClient;
  let server: RunningServer | undefined;

  const backup = async (name: string, spec: BackupSpec, labels: Record<string, string> = {}): Promise<void> => {
    const b = newBackup(name, ns, spec);
    b.metadata.labels = labels;
    b.metadata.annotations = { [REQUESTER_ANNOTATION]: formatRequester(ADMIN) };
    await admin.create(RESOURCES.Backup, ns, b);
    const done = await waitFinished<Backup>(admin, RESOURCES.Backup, ns, name);
    expect(done.status?.phase, JSON.stringify(done.status)).toBe('Completed');
  };
  /** Created by alice with her own token: the webhook stamps her. */
  const restoreAsAlice = async (name: string, spec: RestoreSpec): Promise<Restore> => {
    await alice.create(RESOURCES.Restore, ns, newRestore(name, ns, spec));
    return waitFinished<Restore>(admin, RESOURCES.Restore, ns, name);
  };
  const lacks = (backupName: string, what: string): string =>
    `alice may not restore backup "${backupName}": what it would restore holds ${what}, which alice may neither list nor create`;

  beforeAll(async () => {
    admin = testClient(kubeconfig);
    alice = testClient(teamUserKubeconfig('alice'));
    const s3 = testS3();
    try {
      await s3.createBucket(bucket);
      // An imported Velero backup of team-b's Secret, in a location of its own.
      const secret: Item = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'velero-db', namespace: teamB }, type: 'Opaque', data: { password: Buffer.from('pa55-velero').toString('base64') } };
      await writeVeleroBucket(s3.client, bucket, 'velero/', [{ name: 'team-b-velero', items: [secret] }]);
    } finally {
      s3.close();
    }
    for (const n of [teamA, teamB, ns]) await ensureNamespace(admin, n);
    await createS3CredentialsSecret(admin, ns, 'cloud-credentials', inject('s3'));
    await admin.create(CORE.secrets, teamB, { metadata: { name: 'db' }, stringData: { password: 'hunter2' } });
    await admin.create(CORE.configMaps, teamA, { metadata: { name: 'settings' }, data: { color: 'blue' } });
    // The documented team Role (docs/security.md "Self-service backups for a team"), with admin in team-a.
    await admin.create(ROLES, ns, {
      metadata: { name: 'stowage-requester' },
      rules: [
        { apiGroups: ['stowage.dev'], resources: ['backups', 'restores', 'downloadrequests', 'deletebackuprequests', 'schedules'], verbs: ['get', 'list', 'watch', 'create'] },
        { apiGroups: ['stowage.dev'], resources: ['backupstoragelocations'], verbs: ['get', 'list'] },
      ],
    });
    await admin.create(ROLE_BINDINGS, ns, {
      metadata: { name: 'team-a-stowage' }, roleRef: { apiGroup: RBAC, kind: 'Role', name: 'stowage-requester' },
      subjects: [{ apiGroup: RBAC, kind: 'Group', name: 'team-a' }],
    });
    await admin.create(ROLE_BINDINGS, teamA, {
      metadata: { name: 'team-a-admin' }, roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'admin' },
      subjects: [{ apiGroup: RBAC, kind: 'Group', name: 'team-a' }],
    });
    const spec = (prefix: string) => ({ ...s3LocationSpec(inject('s3'), { bucket, prefix, secret: 'cloud-credentials' }), backupSyncPeriod: '1s' });
    server = await startServer({ kubeconfigPath: kubeconfig, namespace: ns, location: { name: 'default', spec: spec('cluster') } });
    await admin.create(RESOURCES.BackupStorageLocation, ns, newBackupStorageLocation('from-velero', ns, { ...spec('velero'), default: false, velero: true, accessMode: 'ReadOnly' }));
    await backup('team-b', { includedNamespaces: [teamB], includedResources: ['secrets'] });
    await backup('team-b-nightly', { includedNamespaces: [teamB], includedResources: ['secrets'] }, { [LABEL_SCHEDULE_NAME]: 'team-b-nightly' });
    await backup('server-ns', { includedNamespaces: [ns], includedResources: ['secrets'] });
    await backup('team-a', { includedNamespaces: [teamA], includedResources: ['configmaps'] });
    await waitUntil('the Velero backup imported', async () =>
      admin.get<Backup>(RESOURCES.Backup, ns, 'team-b-velero').then((b) => (b.status?.phase === 'Completed' ? b : undefined), () => undefined), 60_000);
  }, 240_000);

  afterAll(async () => {
    await server?.stop();
    for (const n of [teamA, teamB, ns]) await admin?.delete(CORE.namespaces, undefined, n).catch(() => undefined);
  });

  it("refuses alice an admin's backup of team-b mapped into team-a, naming team-b, secrets and the verbs; nothing is created", async () => {
    const r = await restoreAsAlice('b-into-a', { backupName: 'team-b', namespaceMapping: { [teamB]: teamA } });
    expect(r.status?.phase).toBe('FailedValidation');
    expect(r.status?.validationErrors).toEqual([lacks('team-b', `secrets in namespace ${teamB}`)]);
    expect(await getOrUndefined(admin, CORE.secrets, teamA, 'db')).toBeUndefined();
  });

  it('refuses the same through scheduleName', async () => {
    const r = await restoreAsAlice('b-schedule', { scheduleName: 'team-b-nightly', namespaceMapping: { [teamB]: teamA } });
    expect(r.status?.phase).toBe('FailedValidation');
    expect(r.status?.validationErrors).toEqual([lacks('team-b-nightly', `secrets in namespace ${teamB}`)]);
    expect(await getOrUndefined(admin, CORE.secrets, teamA, 'db')).toBeUndefined();
  });

  it("refuses a backup of the server's own namespace (its storage credentials), also unmapped", async () => {
    const mapped = await restoreAsAlice('server-into-a', { backupName: 'server-ns', namespaceMapping: { [ns]: teamA } });
    expect(mapped.status?.phase).toBe('FailedValidation');
    expect(mapped.status?.validationErrors).toEqual([lacks('server-ns', `secrets in namespace ${ns}`)]);
    expect(await getOrUndefined(admin, CORE.secrets, teamA, 'cloud-credentials')).toBeUndefined();
    const unmapped = await restoreAsAlice('server-unmapped', { backupName: 'server-ns' });
    expect(unmapped.status?.validationErrors).toEqual([
      lacks('server-ns', `secrets in namespace ${ns}`),
      `alice may not create objects in namespace ${ns}: not allowed to create secrets`,
    ]);
  });

  it('refuses a dry run the same way', async () => {
    const r = await restoreAsAlice('b-dry', { backupName: 'team-b', dryRun: true, namespaceMapping: { [teamB]: teamA } });
    expect(r.status?.phase).toBe('FailedValidation');
    expect(r.status?.validationErrors).toEqual([lacks('team-b', `secrets in namespace ${teamB}`)]);
  });

  it('refuses an imported Velero backup of team-b the same way', async () => {
    const r = await restoreAsAlice('velero-into-a', { backupName: 'team-b-velero', namespaceMapping: { [teamB]: teamA } });
    expect(r.status?.phase).toBe('FailedValidation');
    expect(r.status?.validationErrors).toEqual([lacks('team-b-velero', `secrets in namespace ${teamB}`)]);
    expect(await getOrUndefined(admin, CORE.secrets, teamA, 'velero-db')).toBeUndefined();
  });

  it('restores her own namespace', async () => {
    await alice.delete(CORE.configMaps, teamA, 'settings');
    await waitUntil('settings deleted', async () => ((await getOrUndefined(admin, CORE.configMaps, teamA, 'settings')) === undefined ? true : undefined));
    const r = await restoreAsAlice('a-own', { backupName: 'team-a', includedResources: ['configmaps'], existingResourcePolicy: 'none' });
    expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
    const cm = await admin.get<{ data?: Record<string, string> }>(CORE.configMaps, teamA, 'settings');
    expect(cm.data).toEqual({ color: 'blue' });
  });
});

// The admission webhook against the real API server and the real server binary: creates by a
// team user come back stamped with who they are; nobody sets or changes the stamp except those
// who may impersonate whom it names (the server passing a Schedule's creator on, an admin); with
// the server down, creates fail closed.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RESOURCES, newBackup, newRestore, newSchedule, LABEL_SCHEDULE_NAME, type Backup } from '../../src/apis/v1/index.js';
import { REQUESTER_ANNOTATION, formatRequester, parseRequester } from '../../src/auth/index.js';
import { KubeError, isNotFound, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import { ensureBuilt, runCli } from '../cli/helpers.js';
import { teamUserKubeconfig, uniqueName, waitUntil } from '../support/kube.js';
import { filesystemLocation, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';

const ROLES = { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'roles', namespaced: true } as const;
const ROLE_BINDINGS = { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'rolebindings', namespaced: true } as const;

const ADMIN = { username: 'admin', uid: '', groups: ['system:masters', 'system:authenticated'] };

let admin: DynamicClient;
let alice: DynamicClient;
let aliceKubeconfig: string;
let ns: string;
let server: RunningServer;
const location = filesystemLocation();
const servers: RunningServer[] = [];

/** The API server's message for a refused request (the KubeError message also names the request). */
async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof KubeError) return err.apiMessage;
    throw err;
  }
  throw new Error('the request was not refused');
}

const stampOf = (o: KubeObject): unknown => {
  const raw = o.metadata?.annotations?.[REQUESTER_ANNOTATION];
  return raw === undefined ? undefined : parseRequester(raw);
};

beforeAll(async () => {
  await ensureBuilt();
  const cluster = inject('cluster');
  admin = testClient(cluster.kubeconfigPath);
  aliceKubeconfig = teamUserKubeconfig('alice');
  alice = testClient(aliceKubeconfig);
  ns = uniqueName('webhook');
  server = await startServer({ kubeconfigPath: cluster.kubeconfigPath, namespace: ns, location });
  servers.push(server);
  // alice may make and edit runs in the server namespace, nothing else.
  await admin.create(ROLES, ns, {
    metadata: { name: 'runs' },
    rules: [{ apiGroups: ['stowage.dev'], resources: ['backups', 'restores', 'schedules', 'downloadrequests', 'deletebackuprequests'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch'] }],
  });
  await admin.create(ROLE_BINDINGS, ns, {
    metadata: { name: 'alice-runs' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'runs' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
  });
});

afterAll(async () => {
  for (const s of servers) await s.stop();
});

describe('admission webhook', () => {
  it('stamps a Backup with the user who created it', async () => {
    const created = await alice.create<Backup>(RESOURCES.Backup, ns, newBackup('by-alice', ns, { includedNamespaces: [ns] }));
    expect(stampOf(created)).toEqual({ username: 'alice', uid: 'alice-uid', groups: ['team-a', 'system:authenticated'] });
    // What was stored, not only what the create returned.
    expect(stampOf(await admin.get(RESOURCES.Backup, ns, 'by-alice'))).toEqual({ username: 'alice', uid: 'alice-uid', groups: ['team-a', 'system:authenticated'] });
    // The other kinds too, and next to annotations of the user's own.
    const restore = newRestore('r-by-alice', ns, { backupName: 'by-alice' });
    restore.metadata.annotations = { note: 'mine' };
    const r = await alice.create(RESOURCES.Restore, ns, restore, { dryRun: true });
    expect(stampOf(r)).toEqual({ username: 'alice', uid: 'alice-uid', groups: ['team-a', 'system:authenticated'] });
    expect(r.metadata?.annotations?.note).toBe('mine');
  });

  it('refuses a stamp set by the user herself, naming her and whom it names', async () => {
    const forged = newBackup('forged', ns, {});
    forged.metadata.annotations = { [REQUESTER_ANNOTATION]: formatRequester(ADMIN) };
    expect(await refusal(alice.create(RESOURCES.Backup, ns, forged))).toBe(
      'admission webhook "requester.stowage.dev" denied the request: the stowage.dev/requester annotation records who created this Backup and is set only by the Stowage admission webhook: user "alice" may not set it (it names "admin")',
    );
    await expect(admin.get(RESOURCES.Backup, ns, 'forged')).rejects.toSatisfy(isNotFound);
    expect(server.output()).toContain(`admission webhook refused CREATE of Backup ${ns}/forged by user "alice": the stowage.dev/requester annotation records who created this Backup and is set only by the Stowage admission webhook: user "alice" may not set it (it names "admin")`);
    // Her own identity, exactly, is what the webhook would write anyway.
    const own = newBackup('own-stamp', ns, {});
    own.metadata.annotations = { [REQUESTER_ANNOTATION]: formatRequester({ username: 'alice', uid: 'alice-uid', groups: ['team-a', 'system:authenticated'] }) };
    expect(stampOf(await alice.create(RESOURCES.Backup, ns, own, { dryRun: true }))).toEqual({ username: 'alice', uid: 'alice-uid', groups: ['team-a', 'system:authenticated'] });
    // A forged group is a forgery too.
    own.metadata.annotations = { [REQUESTER_ANNOTATION]: formatRequester({ username: 'alice', uid: 'alice-uid', groups: ['team-a', 'team-b', 'system:authenticated'] }) };
    expect(await refusal(alice.create(RESOURCES.Backup, ns, own))).toBe(
      'admission webhook "requester.stowage.dev" denied the request: the stowage.dev/requester annotation records who created this Backup and is set only by the Stowage admission webhook: user "alice" may not set it (it names "alice")',
    );
  });

  it('refuses changing or removing the stamp later, by the user or an admin', async () => {
    await alice.create(RESOURCES.Schedule, ns, newSchedule('edit-me', ns, { schedule: '0 0 1 1 *', paused: true, template: { includedNamespaces: [ns] } }));
    const changed = await refusal(alice.patch(RESOURCES.Schedule, ns, 'edit-me', { metadata: { annotations: { [REQUESTER_ANNOTATION]: formatRequester(ADMIN) } } }, 'merge'));
    expect(changed).toBe('admission webhook "requester.stowage.dev" denied the request: the stowage.dev/requester annotation records who created this Schedule and cannot be changed or removed: user "alice" tried to change it');
    const removed = await refusal(alice.patch(RESOURCES.Schedule, ns, 'edit-me', { metadata: { annotations: { [REQUESTER_ANNOTATION]: null } } }, 'merge'));
    expect(removed).toBe('admission webhook "requester.stowage.dev" denied the request: the stowage.dev/requester annotation records who created this Schedule and cannot be changed or removed: user "alice" tried to remove it');
    const byAdmin = await refusal(admin.patch(RESOURCES.Schedule, ns, 'edit-me', { metadata: { annotations: { [REQUESTER_ANNOTATION]: formatRequester(ADMIN) } } }, 'merge'));
    expect(byAdmin).toBe('admission webhook "requester.stowage.dev" denied the request: the stowage.dev/requester annotation records who created this Schedule and cannot be changed or removed: user "admin" tried to change it');
    // Other edits go through and keep the stamp.
    const edited = await alice.patch(RESOURCES.Schedule, ns, 'edit-me', { metadata: { labels: { team: 'a' } } }, 'merge');
    expect(stampOf(edited)).toEqual({ username: 'alice', uid: 'alice-uid', groups: ['team-a', 'system:authenticated'] });
  });

  it('lets an admin, who may impersonate, set it', async () => {
    const b = newBackup('on-behalf', ns, { includedNamespaces: [ns] });
    b.metadata.annotations = { [REQUESTER_ANNOTATION]: formatRequester({ username: 'alice', uid: 'alice-uid', groups: ['team-a', 'system:authenticated'] }) };
    const created = await admin.create(RESOURCES.Backup, ns, b, { dryRun: true });
    expect(stampOf(created)).toEqual({ username: 'alice', uid: 'alice-uid', groups: ['team-a', 'system:authenticated'] });
  });

  it('passes a Schedule\'s creator on to the Backups the server creates for it', async () => {
    await alice.create(RESOURCES.Schedule, ns, newSchedule('nightly', ns, { schedule: '0 0 1 1 *', template: { includedNamespaces: [ns] } }));
    const made = await waitUntil('the schedule\'s first backup', async () => {
      const list = await admin.list<Backup>(RESOURCES.Backup, { namespace: ns, labelSelector: `${LABEL_SCHEDULE_NAME}=nightly` });
      return list.items[0];
    }, 60_000, 250);
    expect(stampOf(made)).toEqual({ username: 'alice', uid: 'alice-uid', groups: ['team-a', 'system:authenticated'] });
  });

  it('admits and stamps a 2.5 MiB Backup, as large as the API server takes', async () => {
    // Labels have no total cap (annotations do, at 256 KiB): 7 000 of the longest keys and values make a 2.5 MiB object.
    const prefix = `${'p'.repeat(59)}.${'q'.repeat(59)}.${'r'.repeat(59)}.${'s'.repeat(59)}.example.com`;
    const labels: Record<string, string> = {};
    for (let i = 0, bytes = 0; bytes < 2.5 * 1024 * 1024; i++) {
      const key = `${prefix}/label-${String(i).padStart(6, '0')}-${'k'.repeat(50)}`;
      labels[key] = 'v'.repeat(63);
      bytes += key.length + 63 + 6;
    }
    const big = newBackup('big', ns, { includedNamespaces: [ns] });
    big.metadata.labels = labels;
    expect(Buffer.byteLength(JSON.stringify(big))).toBeGreaterThan(2.5 * 1024 * 1024);
    // A dry run: the API server admits it whole, and etcd's own 1.5 MiB default would refuse to store it.
    const created = await alice.create<Backup>(RESOURCES.Backup, ns, big, { dryRun: true });
    expect(stampOf(created)).toEqual({ username: 'alice', uid: 'alice-uid', groups: ['team-a', 'system:authenticated'] });
    expect(Object.keys(created.metadata?.labels ?? {})).toHaveLength(Object.keys(labels).length);
  });

  it('shows who asked in describe', async () => {
    const r = await runCli(['backup', 'describe', 'by-alice'], { kubeconfig: aliceKubeconfig, namespace: ns });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^Requested by: +alice \(groups: team-a\)$/m);
    expect(r.stdout).not.toContain('alice-uid');
  });

  it('stamps a Backup that backup sync imports with the server\'s identity, not the stamp stored with it', async () => {
    const done = await waitFinished<Backup>(admin, RESOURCES.Backup, ns, 'by-alice');
    expect(done.status?.phase, done.status?.failureReason).toBe('Completed');
    // A second server, in another namespace, on the same storage under the same location name (sync
    // imports only a marker naming its own location, unless the backup is signed): it imports the backup.
    const other = uniqueName('webhook-sync');
    const second = await startServer({ kubeconfigPath: inject('cluster').kubeconfigPath, namespace: other, location: { name: location.name, spec: { ...location.spec, default: false, backupSyncPeriod: '1s' } } });
    servers.push(second);
    const imported = await waitUntil('the imported backup', () => admin.get<Backup>(RESOURCES.Backup, other, 'by-alice').catch((err: unknown) => (isNotFound(err) ? undefined : Promise.reject(err))), 60_000, 250);
    // The server runs as its namespace's ServiceAccount (test/support/serverIdentity.ts).
    expect(stampOf(imported)).toMatchObject({ username: `system:serviceaccount:${other}:stowage`, groups: ['system:serviceaccounts', `system:serviceaccounts:${other}`, 'system:authenticated'] });
    await second.stop();
  });

  it('fails closed with the webhook down: a Restore is refused and nothing is created; a restarted server serves again', async () => {
    await server.stop();
    const message = await refusal(admin.create(RESOURCES.Restore, ns, newRestore('while-down', ns, { backupName: 'by-alice' })));
    expect(message).toMatch(/^Internal error occurred: failed calling webhook "requester\.stowage\.dev": failed to call webhook: Post "https:\/\/127\.0\.0\.1:\d+\/mutate\?timeout=10s": dial tcp 127\.0\.0\.1:\d+: connect: connection refused$/);
    await expect(admin.get(RESOURCES.Restore, ns, 'while-down')).rejects.toSatisfy(isNotFound);
    const list = await admin.list(RESOURCES.Restore, { namespace: ns });
    expect(list.items.map((x) => x.metadata?.name)).not.toContain('while-down');

    const again = await startServer({ kubeconfigPath: inject('cluster').kubeconfigPath, namespace: ns });
    servers.push(again);
    expect(again.output()).toContain(`admission webhook certificate: reusing the one in Secret ${ns}/stowage-${ns}-webhook-tls`);
    expect(again.output()).toMatch(new RegExp(`admission webhook serving on 127\\.0\\.0\\.1:\\d+, CA bundle published to MutatingWebhookConfiguration stowage-${ns}`));
    const r = await alice.create(RESOURCES.Restore, ns, newRestore('after-restart', ns, { backupName: 'by-alice' }), { dryRun: true });
    expect(stampOf(r)).toEqual({ username: 'alice', uid: 'alice-uid', groups: ['team-a', 'system:authenticated'] });
  });
});

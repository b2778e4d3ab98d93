// Only the webhook's stamps count: against the real API server and the real server binary, a
// requester stamp written while the webhook did not see the object (its configuration deleted) is
// refused by the server with the reason, whether written by hand or copied with its seal from an
// object the webhook did seal. Objects the webhook sealed run.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { LABEL_SCHEDULE_NAME, RESOURCES, newBackup, newDownloadRequest, newRestore, newSchedule, type Backup, type DownloadRequest, type Restore, type Schedule } from '../../src/apis/v1/index.js';
import { REQUESTER_ANNOTATION, SEAL_ANNOTATION, createAccessReviewer, formatRequester } from '../../src/auth/index.js';
import type { DynamicClient, KubeObject } from '../../src/kube/index.js';
import { NO_PUBLIC_KEY } from '../../src/controller/downloadRequest.js';
import { ensureBuilt } from '../cli/helpers.js';
import { teamUserKubeconfig, uniqueName, waitUntil } from '../support/kube.js';
import { filesystemLocation, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';
import { suspendWebhook } from '../support/webhook.js';

const ROLES = { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'roles', namespaced: true } as const;
const ROLE_BINDINGS = { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'rolebindings', namespaced: true } as const;
const MASTERS = { username: 'admin', uid: '', groups: ['system:masters', 'system:authenticated'] };
const NOT_OURS = 'so it was not written by this server\'s admission webhook (it was written by hand, copied from another object, or set while the webhook did not cover this namespace) and cannot say whose rights to use';
const NO_SEAL = `its stowage.dev/requester annotation carries no stowage.dev/requester-seal, ${NOT_OURS}`;

let admin: DynamicClient;
let alice: DynamicClient;
let ns: string;
let server: RunningServer;
/** The stamp and seal the webhook wrote on an admin's Backup (a dry run: nothing kept), taken while it ran. */
let sealedForAdmin: Record<string, string>;
const location = filesystemLocation();

const handStamped = <T extends KubeObject>(o: T, annotations: Record<string, string> = { [REQUESTER_ANNOTATION]: formatRequester(MASTERS) }): T => ({
  ...o, metadata: { ...o.metadata, annotations: { ...o.metadata?.annotations, ...annotations } },
});
const backupDir = (name: string): string => path.join(location.root, 'backups', 'backups', name);

beforeAll(async () => {
  await ensureBuilt();
  const cluster = inject('cluster');
  admin = testClient(cluster.kubeconfigPath);
  alice = testClient(teamUserKubeconfig('alice'));
  ns = uniqueName('seal');
  server = await startServer({ kubeconfigPath: cluster.kubeconfigPath, namespace: ns, location });
  // The documented team Role for the server namespace: create and read the Stowage kinds.
  await admin.create(ROLES, ns, {
    metadata: { name: 'runs' },
    rules: [{ apiGroups: ['stowage.dev'], resources: ['backups', 'restores', 'schedules', 'downloadrequests', 'deletebackuprequests'], verbs: ['get', 'list', 'watch', 'create'] }],
  });
  await admin.create(ROLE_BINDINGS, ns, {
    metadata: { name: 'alice-runs' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'runs' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
  });
  // A fresh Role and binding reach the API server's RBAC cache a moment later: waited for, as the
  // API server's authorizer answers for alice (alice's first create once met a Role "not found").
  // A fresh reviewer each time: one reviewer keeps its answers.
  const aliceUser = { username: 'alice', uid: '', groups: [] };
  await waitUntil('the API server lets alice create DownloadRequests', async () =>
    (await createAccessReviewer(admin, aliceUser).review({ namespace: ns, verb: 'create', group: 'stowage.dev', resource: 'downloadrequests' })).allowed ? true : undefined,
  60_000, 100);
}, 180_000);

afterAll(async () => {
  await server?.stop();
});

describe('requester seals', () => {
  it('seals what the webhook stamps, and runs it', async () => {
    const created = await alice.create<DownloadRequest>(RESOURCES.DownloadRequest, ns, newDownloadRequest(ns, { kind: 'BackupLog', name: 'nothing' }));
    // Created with generateName only: the webhook named it and sealed the stamp for that name.
    expect(created.metadata.name).toMatch(/^nothing-[a-z0-9]{5}$/);
    expect(created.metadata.annotations?.[SEAL_ANNOTATION]).toMatch(/^v1 \S+ \S+$/);
    const done = await waitUntil('the DownloadRequest answered', async () => {
      const d = await admin.get<DownloadRequest>(RESOURCES.DownloadRequest, ns, created.metadata.name);
      return d.status?.phase === 'Processed' ? d : undefined;
    }, 60_000);
    // Past the requester check (which comes first): refused only for lacking a key to seal the link to.
    expect(done.status?.message).toBe(NO_PUBLIC_KEY);
  });

  describe('with the webhook configuration deleted', () => {
    let restoreWebhook: () => Promise<void>;
    beforeAll(async () => {
      const probe = await admin.create<Backup>(RESOURCES.Backup, ns, newBackup('admins', ns, {}), { dryRun: true });
      sealedForAdmin = { ...probe.metadata.annotations };
      restoreWebhook = await suspendWebhook(admin, ns);
    }, 60_000);

    afterAll(() => restoreWebhook(), 60_000);

    it('refuses a Backup whose hand-written stamp names system:masters, and backs up nothing', async () => {
      await alice.create(RESOURCES.Backup, ns, handStamped(newBackup('forged-backup', ns, { includedNamespaces: ['kube-system'] })));
      const b = await waitFinished<Backup>(admin, RESOURCES.Backup, ns, 'forged-backup');
      expect(b.status?.phase).toBe('FailedValidation');
      expect(b.status?.validationErrors).toEqual([NO_SEAL]);
      expect(fs.existsSync(backupDir('forged-backup'))).toBe(false);
    });

    it('refuses a Restore whose hand-written stamp names system:masters', async () => {
      await alice.create(RESOURCES.Restore, ns, handStamped(newRestore('forged-restore', ns, { backupName: 'forged-backup' })));
      const r = await waitFinished<Restore>(admin, RESOURCES.Restore, ns, 'forged-restore');
      expect(r.status?.phase).toBe('FailedValidation');
      expect(r.status?.validationErrors).toContain(NO_SEAL);
    });

    it('refuses a DownloadRequest whose hand-written stamp names system:masters, with no link', async () => {
      const req = handStamped(newDownloadRequest(ns, { kind: 'BackupContents', name: 'forged-backup' }));
      req.metadata.name = 'forged-download';
      await alice.create(RESOURCES.DownloadRequest, ns, req);
      const d = await waitUntil('the DownloadRequest answered', async () => {
        const x = await admin.get<DownloadRequest>(RESOURCES.DownloadRequest, ns, 'forged-download');
        return x.status?.phase === 'Processed' ? x : undefined;
      }, 60_000);
      expect(d.status?.message).toBe(`this DownloadRequest is refused: ${NO_SEAL}`);
      expect(d.status?.sealedURL).toBeUndefined();
    });

    it('refuses a Schedule whose hand-written stamp names system:masters, and creates no Backup for it', async () => {
      // Due at once (it never fired and does not skip the first tick), so only the refusal stops it.
      await alice.create(RESOURCES.Schedule, ns, handStamped(newSchedule('forged-schedule', ns, { schedule: '0 * * * *', template: { includedNamespaces: ['kube-system'] } })));
      const s = await waitUntil('the Schedule judged', async () => {
        const x = await admin.get<Schedule>(RESOURCES.Schedule, ns, 'forged-schedule');
        return x.status?.phase !== undefined ? x : undefined;
      }, 60_000);
      expect(s.status?.phase).toBe('FailedValidation');
      expect(s.status?.validationErrors).toEqual([NO_SEAL]);
      const backups = await admin.list<Backup>(RESOURCES.Backup, { namespace: ns, labelSelector: `${LABEL_SCHEDULE_NAME}=forged-schedule` });
      expect(backups.items).toEqual([]);
    });

    it('refuses a stamp copied with its seal from an object the webhook sealed for someone else', async () => {
      expect(sealedForAdmin[SEAL_ANNOTATION]).toMatch(/^v1 /);
      expect(JSON.parse(sealedForAdmin[REQUESTER_ANNOTATION] ?? '{}')).toMatchObject({ username: 'admin', groups: expect.arrayContaining(['system:masters']) });
      await alice.create(RESOURCES.Backup, ns, handStamped(newBackup('copied-seal', ns, { includedNamespaces: ['kube-system'] }), sealedForAdmin));
      const b = await waitFinished<Backup>(admin, RESOURCES.Backup, ns, 'copied-seal');
      expect(b.status?.phase).toBe('FailedValidation');
      expect(b.status?.validationErrors).toEqual([`its stowage.dev/requester-seal does not match this Backup's name, namespace and stowage.dev/requester annotation, ${NOT_OURS}`]);
      expect(fs.existsSync(backupDir('copied-seal'))).toBe(false);
    });
  });
});


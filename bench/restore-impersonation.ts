// What impersonation costs a restore (issue 19): the restore engine, in this process, restores the
// same backup into fresh namespaces with the server's own client (trust mode cluster-admin) and
// with that client impersonating a team user (trust mode requester), in alternating rounds, under
// the server's client limits (QPS 100, burst 200; --qps raises them to show the API server's own cost). The requester arm also pays the validation's
// SubjectAccessReviews (restore/rights.ts). The user has `edit` cluster-wide plus the right to
// create namespaces, so every item is authorized by RBAC walking real bindings (an admin in
// system:masters would be waved through before RBAC).
//
//   npx tsx bench/restore-impersonation.ts [--objects 3000] [--namespaces 6] [--rounds 3] [--qps 100]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import winston from 'winston';
import { newBackup, newRestore } from '../src/apis/v1/index.js';
import { createAccessReviewer, type Requester } from '../src/auth/index.js';
import { runBackup } from '../src/backup/index.js';
import { CORE, createDynamicClient, loadKubeConfig, type DynamicClient } from '../src/kube/index.js';
import { createBackupStore, type BackupStore } from '../src/persistence/backupStore.js';
import { FilesystemObjectStore } from '../src/plugin/builtin/filesystem.js';
import { setLogSink } from '../src/plugin/sdk/logger.js';
import { checkTargetNamespaces, newRestoreRequest, runRestore, targetsOfResourceList } from '../src/restore/index.js';
import { mapLimit } from '../src/util/concurrency.js';
import { startControlPlane } from '../scripts/cluster/controlPlane.js';

const RBAC = 'rbac.authorization.k8s.io';
const CLUSTER_ROLES = { group: RBAC, version: 'v1', resource: 'clusterroles', namespaced: false };
const CLUSTER_ROLE_BINDINGS = { group: RBAC, version: 'v1', resource: 'clusterrolebindings', namespaced: false };

const { values } = parseArgs({ options: { objects: { type: 'string', default: '3000' }, namespaces: { type: 'string', default: '6' }, rounds: { type: 'string', default: '3' }, qps: { type: 'string', default: '100' } } });
const objects = Number(values.objects);
const nsCount = Number(values.namespaces);
const rounds = Number(values.rounds);
const qps = Number(values.qps);

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[m] ?? 0) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
};

async function seed(client: DynamicClient, namespaces: string[]): Promise<void> {
  for (const ns of namespaces) await client.create(CORE.namespaces, undefined, { metadata: { name: ns } });
  await mapLimit(Array.from({ length: objects }, (_, i) => i), 32, async (i) => {
    const ns = namespaces[i % namespaces.length] ?? '';
    const payload = 'x'.repeat(1024 + (i % 3) * 1024);
    if (i % 2 === 0) await client.create(CORE.configMaps, ns, { metadata: { name: `cm-${i}`, labels: { i: String(i) } }, data: { payload } });
    else await client.create(CORE.secrets, ns, { metadata: { name: `s-${i}` }, stringData: { payload } });
  });
}

async function grant(client: DynamicClient, user: string): Promise<void> {
  await client.create(CLUSTER_ROLES, undefined, {
    metadata: { name: 'bench-namespace-creator' }, rules: [{ apiGroups: [''], resources: ['namespaces'], verbs: ['create', 'get', 'patch'] }],
  });
  for (const role of ['edit', 'bench-namespace-creator']) {
    await client.create(CLUSTER_ROLE_BINDINGS, undefined, {
      metadata: { name: `bench-${user}-${role}` }, roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: role },
      subjects: [{ apiGroup: RBAC, kind: 'User', name: user }],
    });
  }
}

async function main(): Promise<void> {
  setLogSink(() => undefined);
  const cp = await startControlPlane();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-imp-bench-'));
  const client = createDynamicClient(loadKubeConfig(cp.kubeconfigPath), { qps, burst: 2 * qps });
  try {
    const alice = cp.teamUsers.find((u) => u.name === 'alice');
    if (alice === undefined) throw new Error('the control plane has no alice');
    const requester: Requester = { username: alice.name, uid: alice.uid, groups: [...alice.groups, 'system:authenticated'] };
    await grant(client, alice.name);
    const namespaces = Array.from({ length: nsCount }, (_, i) => `seed-${i}`);
    await seed(client, namespaces);
    const objectStore = new FilesystemObjectStore();
    await objectStore.init({ root: path.join(work, 'store') });
    const store: BackupStore = createBackupStore({ objectStore, bucket: 'bench', prefix: '' });
    const log = winston.createLogger({ level: 'info', transports: [new winston.transports.Stream({ stream: fs.createWriteStream(path.join(work, 'run.log')) })] });
    const backup = newBackup('b', 'stowage', { includedNamespaces: namespaces });
    const b = await runBackup({ client, store, log }, backup);
    await store.completeBackup('b', { resourceList: b.resourceList, results: b.results, ...(b.manifest !== undefined ? { manifest: b.manifest } : {}), backup });
    console.log(`seeded ${objects} objects in ${nsCount} namespaces; backup ${b.phase}, ${b.progress.itemsBackedUp} items`);

    const times: Record<'server' | 'impersonated', number[]> = { server: [], impersonated: [] };
    let reviews = 0;
    for (let round = 0; round < rounds; round++) {
      const arms = round % 2 === 0 ? (['server', 'impersonated'] as const) : (['impersonated', 'server'] as const);
      for (const arm of arms) {
        const mapping = Object.fromEntries(namespaces.map((ns) => [ns, `${ns}-${arm === 'server' ? 's' : 'i'}${round}`]));
        const restore = newRestore(`r-${arm}-${round}`, 'stowage', { backupName: 'b', namespaceMapping: mapping });
        const req = newRestoreRequest(restore, backup);
        const t0 = performance.now();
        let runClient = client;
        if (arm === 'impersonated') {
          const reviewer = createAccessReviewer(client, requester);
          const list = (await store.getResourceList('b')) ?? {};
          const verdict = await checkTargetNamespaces(reviewer, targetsOfResourceList(list, req) ?? []);
          if (verdict.refused.length > 0) throw new Error(verdict.refused.join('; '));
          reviews = verdict.reviews;
          runClient = client.impersonating({ username: requester.username, groups: requester.groups });
        }
        const r = await runRestore({ client: runClient, source: store, log, spillDir: path.join(work, 'spill') }, req);
        const seconds = (performance.now() - t0) / 1000;
        if (r.phase !== 'Completed') throw new Error(`${arm} round ${round}: ${r.phase} ${r.failureReason ?? JSON.stringify(r.summary)}`);
        times[arm].push(seconds);
        console.log(`round ${round} ${arm}: ${seconds.toFixed(2)} s, ${JSON.stringify(r.summary)}`);
      }
    }
    const s = median(times.server);
    const i = median(times.impersonated);
    console.log(`median server ${s.toFixed(2)} s, impersonated ${i.toFixed(2)} s: ratio ${(i / s).toFixed(3)}; ${reviews} SubjectAccessReviews per impersonated restore`);
  } finally {
    client.close();
    await cp.stop();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

await main();

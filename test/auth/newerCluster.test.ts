// Paths that only newer clusters take, on the release the suite runs (scripts/cluster/paths.ts),
// end to end through `stowage server` in trust mode requester: alice's Restores are stamped by the
// admission webhook and every write goes out impersonating her. Impersonate-Uid (1.22+) is sent
// and the API server acts on it; Pod Security admission (1.25+, on by default) refuses her restore
// of a privileged pod into a `restricted` namespace with its own message; a batch/v1 CronJob
// (1.21+; v1beta1 is gone) round trips.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RESOURCES, newBackup, newRestore, type Backup, type Restore, type RestoreSpec } from '../../src/apis/v1/index.js';
import { CORE, KubeError, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import type { ItemOutcome } from '../../src/restore/index.js';
import { ensureBuilt } from '../cli/helpers.js';
import { teamUserKubeconfig, uniqueName, waitUntil } from '../support/kube.js';
import { filesystemLocation, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';
import { ROLE_BINDINGS, ROLES, createNs, getOrUndefined, res } from '../restore/support.js';

const PODS = res('', 'v1', 'pods', true);
const CRONJOBS = res('batch', 'v1', 'cronjobs', true);
const POLICIES = res('admissionregistration.k8s.io', 'v1', 'validatingadmissionpolicies', false);
const POLICY_BINDINGS = res('admissionregistration.k8s.io', 'v1', 'validatingadmissionpolicybindings', false);
const ALICE = { username: 'alice', uid: 'alice-uid', groups: ['team-a', 'system:authenticated'] };

const CRON_SPEC = {
  // Yearly and suspended: no Job appears while the test runs.
  schedule: '15 2 1 1 *', timeZone: 'Etc/UTC', suspend: true, concurrencyPolicy: 'Forbid',
  successfulJobsHistoryLimit: 2, failedJobsHistoryLimit: 1,
  jobTemplate: { spec: { backoffLimit: 1, template: { spec: { restartPolicy: 'Never', containers: [{ name: 'report', image: 'registry.invalid/report:1', args: ['--yearly'] }] } } } },
};

describe('newer-cluster paths, through the server in requester mode', () => {
  const stowageNs = uniqueName('stowage-new');
  const src = uniqueName('new-src');
  const uidTarget = uniqueName('new-uid');
  const restricted = uniqueName('new-psa');
  const policy = uniqueName('alice-uid-check');
  const location = filesystemLocation();
  let admin: DynamicClient;
  let alice: DynamicClient;
  let server: RunningServer | undefined;

  const stored = (run: string, file: string): Buffer =>
    zlib.gunzipSync(fs.readFileSync(path.join(location.root, 'backups', 'restores', run, `restore-${run}-${file}`)));
  const outcomes = (run: string): ItemOutcome[] => (JSON.parse(stored(run, 'results.gz').toString()) as { outcomes: ItemOutcome[] }).outcomes;
  const runLog = (run: string): string =>
    stored(run, 'logs.gz').toString().split('\n').filter((l) => l !== '').map((l) => (JSON.parse(l) as { msg: string }).msg).join('\n');
  /** alice creates the Restore (the webhook stamps her) and it runs to a final phase. */
  const restoreAsAlice = async (name: string, spec: RestoreSpec): Promise<Restore> => {
    await alice.create(RESOURCES.Restore, stowageNs, newRestore(name, stowageNs, spec));
    return waitFinished<Restore>(admin, RESOURCES.Restore, stowageNs, name);
  };
  const refusal = async (p: Promise<unknown>): Promise<string> => {
    try {
      await p;
    } catch (err) {
      if (err instanceof KubeError) return err.apiMessage;
      throw err;
    }
    return '(allowed)';
  };

  beforeAll(async () => {
    await ensureBuilt();
    const cluster = inject('cluster');
    admin = testClient(cluster.kubeconfigPath);
    alice = testClient(teamUserKubeconfig('alice'));
    server = await startServer({ kubeconfigPath: cluster.kubeconfigPath, namespace: stowageNs, location });
    await admin.create(ROLES, stowageNs, {
      metadata: { name: 'runs' },
      rules: [{ apiGroups: ['stowage.dev'], resources: ['backups', 'restores'], verbs: ['get', 'list', 'watch', 'create'] }],
    });
    await createNs(admin, src);
    await createNs(admin, uidTarget);
    await createNs(admin, restricted, { 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/enforce-version': 'latest' });
    // alice runs restores in the server's namespace and is admin of the three app namespaces.
    for (const [ns, role] of [[stowageNs, 'Role:runs'], [src, 'ClusterRole:admin'], [uidTarget, 'ClusterRole:admin'], [restricted, 'ClusterRole:admin']] as const) {
      const [kind, name] = role.split(':');
      await admin.create(ROLE_BINDINGS, ns, {
        metadata: { name: 'alice' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind, name },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
      });
    }

    await admin.create(CORE.configMaps, src, { metadata: { name: 'settings', labels: { 'uid-check': policy } }, data: { colour: 'blue' } });
    // Privileged: allowed in src (no Pod Security label, so the privileged level), refused by restricted.
    await admin.create(PODS, src, {
      metadata: { name: 'priv' },
      spec: { containers: [{ name: 'tool', image: 'registry.invalid/tool:1', securityContext: { privileged: true } }] },
    });
    await admin.create(CRONJOBS, src, { apiVersion: 'batch/v1', kind: 'CronJob', metadata: { name: 'yearly' }, spec: CRON_SPEC });
    await admin.create(RESOURCES.Backup, stowageNs, newBackup('src', stowageNs, { includedNamespaces: [src] }));
    const b = await waitFinished<Backup>(admin, RESOURCES.Backup, stowageNs, 'src');
    expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
  });

  afterAll(async () => {
    await server?.stop();
    await admin?.delete(POLICY_BINDINGS, undefined, policy).catch(() => undefined);
    await admin?.delete(POLICIES, undefined, policy).catch(() => undefined);
    for (const ns of [src, uidTarget, restricted, stowageNs]) await admin?.delete(CORE.namespaces, undefined, ns).catch(() => undefined);
  });

  it('sends Impersonate-Uid: an admission policy that demands alice\'s uid admits her restore\'s writes', async () => {
    // A ValidatingAdmissionPolicy (CEL, 1.30+) sees the request's user as the API server resolved
    // it: alice's writes to labelled ConfigMaps must carry her uid, which only Impersonate-Uid sets.
    await admin.create(POLICIES, undefined, {
      metadata: { name: policy },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['configmaps'] }] },
        validations: [{
          expression: "request.userInfo.username != 'alice' || (has(request.userInfo.uid) && request.userInfo.uid == 'alice-uid')",
          messageExpression: "'alice wrote with uid \"' + (has(request.userInfo.uid) ? request.userInfo.uid : '') + '\", not alice-uid'",
        }],
      },
    });
    await admin.create(POLICY_BINDINGS, undefined, {
      metadata: { name: policy },
      spec: { policyName: policy, validationActions: ['Deny'], matchResources: { objectSelector: { matchLabels: { 'uid-check': policy } } } },
    });
    const probe = (uid: string): Promise<string> => refusal(admin.impersonating({ ...ALICE, uid }).create(CORE.configMaps, uidTarget,
      { metadata: { name: 'probe', labels: { 'uid-check': policy } } }, { dryRun: true }));
    // The policy is in force once it refuses alice without her uid (the API server loads it through a watch).
    const refused = await waitUntil('the admission policy to refuse alice without her uid', async () => {
      const m = await probe('');
      return m === '(allowed)' ? undefined : m;
    }, 60_000, 250);
    expect(refused).toBe(`configmaps "probe" is forbidden: ValidatingAdmissionPolicy '${policy}' with binding '${policy}' denied request: alice wrote with uid "", not alice-uid`);
    expect(await probe('alice-uid')).toBe('(allowed)');

    const r = await restoreAsAlice('uid', { backupName: 'src', includedResources: ['configmaps'], namespaceMapping: { [src]: uidTarget } });
    expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
    expect(outcomes('uid').find((o) => o.name === 'settings')).toMatchObject({ namespace: uidTarget, action: 'created' });
    expect((await admin.get<KubeObject & { data?: Record<string, string> }>(CORE.configMaps, uidTarget, 'settings')).data).toEqual({ colour: 'blue' });
    expect(runLog('uid')).toContain('acting with the rights of alice (groups: team-a) (trust mode requester)');
  });

  it('a Pod Security "restricted" namespace refuses alice\'s restore of a privileged pod, and the restore says what the API server said', async () => {
    const r = await restoreAsAlice('psa', { backupName: 'src', includedResources: ['pods'], namespaceMapping: { [src]: restricted } });
    expect(r.status?.phase, JSON.stringify(r.status)).toBe('PartiallyFailed');
    // The namespace exists already (skipped); the pod is refused.
    expect(r.status?.summary).toEqual({ created: 0, updated: 0, skipped: 1, failed: 1 });
    expect(r.status?.errors).toBe(1);
    expect(outcomes('psa').find((o) => o.action === 'skipped')).toMatchObject({ groupResource: 'namespaces', name: restricted });
    const failed = outcomes('psa').find((o) => o.groupResource === 'pods' && o.name === 'priv');
    expect(failed).toMatchObject({ namespace: restricted, action: 'failed' });
    const apiMessage = `pods "priv" is forbidden: violates PodSecurity "restricted:latest": privileged (container "tool" must not set securityContext.privileged=true)`;
    expect(failed?.reason).toContain(apiMessage);
    expect(failed?.reason).toContain('(403 Forbidden)');
    expect(runLog('psa')).toContain(apiMessage);
    expect(await getOrUndefined(admin, PODS, restricted, 'priv')).toBeUndefined();
  });

  it('round-trips a batch/v1 CronJob: backed up, deleted, restored by alice with the same spec', async () => {
    const before = await admin.get<KubeObject & { spec: Record<string, unknown> }>(CRONJOBS, src, 'yearly');
    await admin.delete(CRONJOBS, src, 'yearly');
    await waitUntil('the CronJob to be gone', async () => ((await getOrUndefined(admin, CRONJOBS, src, 'yearly')) === undefined ? true : undefined));
    const r = await restoreAsAlice('cron', { backupName: 'src', includedResources: ['cronjobs'] });
    expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
    expect(outcomes('cron').find((o) => o.groupResource === 'cronjobs.batch')).toMatchObject({ namespace: src, name: 'yearly', action: 'created' });
    const after = await admin.get<KubeObject & { apiVersion: string; spec: Record<string, unknown> }>(CRONJOBS, src, 'yearly');
    expect(after.apiVersion).toBe('batch/v1');
    expect(after.spec).toEqual(before.spec);
    expect(after.spec).toMatchObject({ schedule: '15 2 1 1 *', timeZone: 'Etc/UTC', suspend: true });
  });
});

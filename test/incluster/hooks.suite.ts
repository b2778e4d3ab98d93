// Backup hooks in real containers (issue 36): Stowage's whole server in process (startInProcessServer,
// trust mode requester, its own ServiceAccount with the generated RBAC) against the real node's
// cluster, whose busybox pods run the hooks' commands through pods/exec. Pre hooks come from pod
// annotations (Velero's names) and from spec.hooks; post hooks likewise. Registered from
// test/incluster/node.test.ts (backupHooksSuite), which starts the cluster.
import fs from 'node:fs';
import type * as k8s from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { RESOURCES, type Backup, type BackupSpec } from '../../src/apis/v1/index.js';
import type { DynamicClient } from '../../src/kube/index.js';
import { BUSYBOX_IMAGE } from '../../scripts/node/node.js';
import { runCli, show } from '../cli/helpers.js';
import { startInProcessServer, type InProcessServer } from '../support/inProcessServer.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { filesystemLocation, testClient, waitFinished } from '../support/server.js';
import { idleContainer, inCluster, kubectl, kubectlAsync, kubectlOk, log, podReady, suiteStowage } from './context.js';

const ROLE_BINDINGS = { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'rolebindings', namespaced: true } as const;
const ROLES = { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'roles', namespaced: true } as const;

/** A busybox pod that idles (and dies at once when deleted); `containers` names its containers. */
async function startPod(ns: string, name: string, annotations: Record<string, string> = {}, labels: Record<string, string> = {}, containers = ['app']): Promise<void> {
  const body: k8s.V1Pod = {
    metadata: { name, annotations, labels: { ...labels, pod: name } },
    spec: {
      terminationGracePeriodSeconds: 0,
      containers: containers.map((c) => idleContainer(c)),
    },
  };
  await inCluster().core.createNamespacedPod({ namespace: ns, body });
  await podReady(ns, `pod=${name}`, 1);
}

/** The run's own lines in the server's log, in order. */
function runLines(server: InProcessServer, ns: string, backup: string): string[] {
  return server.output().split('\n').filter((l) => l.includes(`backup=${ns}/${backup}`));
}

/** The one line of `lines` holding `text`; fails showing them all when none does. */
function lineWith(lines: readonly string[], text: string): string {
  const found = lines.find((l) => l.includes(text));
  if (found === undefined) throw new Error(`no run-log line holds ${JSON.stringify(text)}; the run's lines:\n${lines.join('\n')}`);
  return found;
}

/** Whether the run's log says it backed up pods of `ns` (collect.ts logs each LIST's count). */
function tookPods(server: InProcessServer, srv: string, backup: string, ns: string): boolean {
  return runLines(server, srv, backup).some((l) => l.includes(`backed up 1 pods in namespace "${ns}"`));
}

export function backupHooksSuite(): void {
  describe('backup hooks in real containers', () => {
    const stowage = suiteStowage('hooks-srv');
    const srv = stowage.namespace;
    const namespaces: string[] = [];
    const appNs = (prefix: string): string => {
      const n = uniqueName(prefix);
      namespaces.push(n);
      kubectlOk(['create', 'namespace', n]);
      return n;
    };

    const backup = async (name: string, spec: BackupSpec, as?: DynamicClient): Promise<Backup> => {
      const body = { apiVersion: 'stowage.dev/v1', kind: 'Backup', metadata: { name }, spec };
      // A requester's fresh RoleBinding reaches the API server's RBAC cache within moments: retried until it has.
      await waitUntil(`Backup ${name} created`, async () => (as ?? stowage.client).create(RESOURCES.Backup, srv, body).then(() => true, (err: unknown) => {
        if (as === undefined) throw err;
        return undefined;
      }), 30_000, 250);
      return waitFinished<Backup>(stowage.client, RESOURCES.Backup, srv, name, 180_000);
    };

    afterAll(() => {
      for (const n of namespaces) kubectl(['delete', 'namespace', n, '--wait=false']);
    });

    it('a pre hook (pod annotations) writes a marker file and a post hook (spec.hooks) removes it: both run in order, with their output in the log, and describe counts them', async () => {
      const ns = appNs('hooks-marker');
      await startPod(ns, 'db', {
        'pre.hook.backup.velero.io/container': 'app',
        'pre.hook.backup.velero.io/command': '["/bin/sh", "-c", "echo frozen-at-$(date +%s) > /tmp/marker && cat /tmp/marker"]',
        'pre.hook.backup.velero.io/timeout': '20s',
      }, { app: 'db' });
      const t0 = Date.now();
      const b = await backup('marker', {
        includedNamespaces: [ns],
        hooks: {
          resources: [{
            name: 'thaw', includedNamespaces: [ns], includedResources: ['pods'], labelSelector: { matchLabels: { app: 'db' } },
            // Fails (exit 1, onError Fail) unless the pre hook's marker is still there.
            post: [{ exec: { container: 'app', command: ['/bin/sh', '-c', 'test -f /tmp/marker && rm /tmp/marker && echo thawed'], onError: 'Fail', timeout: '20s' } }],
          }],
        },
      });
      log(`hooks: marker backup ${b.status?.phase} in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
      expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
      expect(b.status?.hookStatus).toEqual({ hooksAttempted: 2, hooksFailed: 0 });
      const lines = runLines(stowage.server, srv, 'marker');
      const pre = lines.findIndex((l) => l.includes(`pre hook "pre.hook.backup.velero.io" (from the pod's annotations) in pod ${ns}/db, container app: succeeded in`));
      const post = lines.findIndex((l) => l.includes(`post hook "thaw" (spec.hooks) in pod ${ns}/db, container app: succeeded in`));
      expect(pre, lines.join('\n')).toBeGreaterThanOrEqual(0);
      expect(post).toBeGreaterThan(pre);
      expect(lines[pre]).toMatch(/stdout: "frozen-at-\d+\\n"/);
      expect(lines[post]).toContain('stdout: "thawed\\n"');
      // The pod itself was taken after its post hook (Velero's order), and the marker is gone.
      expect(tookPods(stowage.server, srv, 'marker', ns), runLines(stowage.server, srv, 'marker').join('\n')).toBe(true);
      expect(kubectl(['-n', ns, 'exec', 'db', '--', 'test', '-e', '/tmp/marker']).status).toBe(1);
      const described = await runCli(['backup', 'describe', 'marker'], { kubeconfig: inCluster().cluster.cp.kubeconfigPath, namespace: srv });
      expect(described.code, show(described)).toBe(0);
      expect(described.stdout).toMatch(/Hooks attempted:\s+2\n/);
      expect(described.stdout).toMatch(/Hooks failed:\s+0\n/);
      expect(described.stdout).toMatch(/Hooks:\s+thaw \(0 pre, 1 post\)/);
    }, 300_000);

    it('onError Continue is a warning, onError Fail keeps the pod out and ends PartiallyFailed naming the hook, container, exit code and output; post hooks still run', async () => {
      const ns = appNs('hooks-fail');
      await startPod(ns, 'app', {}, { tier: 'x' }, ['app', 'side']);
      const b = await backup('fail', {
        includedNamespaces: [ns],
        hooks: {
          resources: [{
            name: 'checks', includedNamespaces: [ns],
            pre: [
              { exec: { container: 'side', command: ['/bin/sh', '-c', 'echo soft >&2; exit 3'], onError: 'Continue' } },
              { exec: { command: ['/bin/sh', '-c', 'echo hard-failure-output; exit 4'], onError: 'Fail' } },
            ],
            post: [{ exec: { command: ['/bin/sh', '-c', 'echo thawed-anyway'] } }],
          }],
        },
      });
      expect(b.status?.phase).toBe('PartiallyFailed');
      expect(b.status?.hookStatus).toEqual({ hooksAttempted: 3, hooksFailed: 2 });
      expect(b.status?.warnings).toBeGreaterThanOrEqual(1);
      const lines = runLines(stowage.server, srv, 'fail');
      expect(lineWith(lines, `pre hook "checks" (spec.hooks) in pod ${ns}/app, container side: failed in`)).toMatch(
        /^\S+ warn .*: exit code 3; stderr: "soft\\n"; going on \(onError Continue\)/,
      );
      expect(lineWith(lines, `pre hook "checks" (spec.hooks) in pod ${ns}/app, container app: failed in`)).toMatch(
        /^\S+ error .*: exit code 4; stdout: "hard-failure-output\\n"; the pod is not backed up and its remaining pre hooks are not run \(onError Fail\)/,
      );
      expect(lines.some((l) => l.includes(`post hook "checks" (spec.hooks) in pod ${ns}/app, container app: succeeded in`) && l.includes('thawed-anyway'))).toBe(true);
      expect(tookPods(stowage.server, srv, 'fail', ns)).toBe(false);
    }, 300_000);

    it('a backup canceled while a pre hook runs: the hook\'s exec is ended, the pod\'s post hook still runs (what it thaws does not stay frozen), and the run ends Canceled naming who canceled', async () => {
      const ns = appNs('hooks-cancel');
      await startPod(ns, 'db', {
        // Holds the run for 5 minutes unless it is canceled; /tmp/frozen says it has started.
        'pre.hook.backup.velero.io/command': '["/bin/sh", "-c", "touch /tmp/frozen; echo frozen; sleep 300"]',
        'pre.hook.backup.velero.io/timeout': '5m',
        'post.hook.backup.velero.io/command': '["/bin/sh", "-c", "rm /tmp/frozen && echo thawed"]',
      });
      await stowage.client.create(RESOURCES.Backup, srv, { apiVersion: 'stowage.dev/v1', kind: 'Backup', metadata: { name: 'canceled' }, spec: { includedNamespaces: [ns] } });
      await waitUntil('the pre hook running in pod db', () => kubectlAsync(['-n', ns, 'exec', 'db', '--', 'test', '-e', '/tmp/frozen']).then(() => true, () => undefined), 120_000, 250);
      const t0 = Date.now();
      const canceled = await runCli(['backup', 'cancel', 'canceled', '--wait'], { kubeconfig: inCluster().cluster.cp.kubeconfigPath, namespace: srv, timeoutMs: 120_000 });
      expect(canceled.code, show(canceled)).toBe(0);
      const b = await waitFinished<Backup>(stowage.client, RESOURCES.Backup, srv, 'canceled', 120_000);
      log(`hooks: backup canceled during its pre hook: Canceled ${((Date.now() - t0) / 1000).toFixed(1)}s after the cancel`);
      expect(b.status?.phase, JSON.stringify(b.status)).toBe('Canceled');
      const by = b.metadata.annotations?.['stowage.dev/canceled-by'] ?? '';
      expect(by).not.toBe('');
      expect(b.status?.failureReason).toBe(`canceled by ${by}`);
      const lines = runLines(stowage.server, srv, 'canceled');
      const pre = lines.findIndex((l) => l.includes(`pre hook "pre.hook.backup.velero.io" (from the pod's annotations) in pod ${ns}/db, container app: failed in`));
      const post = lines.findIndex((l) => l.includes(`post hook "post.hook.backup.velero.io" (from the pod's annotations) in pod ${ns}/db, container app: succeeded in`));
      expect(pre, lines.join('\n')).toBeGreaterThanOrEqual(0);
      expect(lines[pre]).toContain('the run was ended while the hook ran; the exec\'s connection was closed; stdout: "frozen\\n"');
      expect(post, lines.join('\n')).toBeGreaterThan(pre);
      expect(lines[post]).toContain('stdout: "thawed\\n"');
      // The post hook ran in the container: the pre hook's marker is gone. The pod itself was not taken.
      expect((await kubectlAsync(['-n', ns, 'exec', 'db', '--', 'sh', '-c', 'test -e /tmp/frozen && echo frozen || echo thawed'])).trim()).toBe('thawed');
      expect(tookPods(stowage.server, srv, 'canceled', ns)).toBe(false);
    }, 300_000);

    it('a hook that overruns its timeout is ended and fails; a container the pod lacks is named; an unreadable annotation fails the pod, named', async () => {
      const ns = appNs('hooks-timeout');
      await startPod(ns, 'slow', { 'pre.hook.backup.velero.io/command': '["/bin/sh", "-c", "echo started; sleep 60"]', 'pre.hook.backup.velero.io/timeout': '2s' });
      await startPod(ns, 'nocontainer', { 'post.hook.backup.stowage.dev/command': 'true', 'post.hook.backup.stowage.dev/container': 'database' });
      // Velero would run this with its defaults (on-error "fail" is not a mode); Stowage fails the pod, naming the annotation.
      await startPod(ns, 'typo', { 'pre.hook.backup.velero.io/command': 'true', 'pre.hook.backup.velero.io/on-error': 'fail' });
      // A pod whose container has ended: nothing can run in it, and its hooks are skipped with a warning.
      await inCluster().core.createNamespacedPod({ namespace: ns, body: {
        metadata: { name: 'done', annotations: { 'pre.hook.backup.velero.io/command': 'true' } },
        spec: { restartPolicy: 'Never', containers: [{ name: 'app', image: BUSYBOX_IMAGE, imagePullPolicy: 'Never', command: ['true'] }] },
      } });
      await waitUntil('pod done Succeeded', async () => ((await inCluster().core.readNamespacedPod({ namespace: ns, name: 'done' })).status?.phase === 'Succeeded' ? true : undefined), 120_000, 250);
      const t0 = Date.now();
      const b = await backup('timeout', { includedNamespaces: [ns] });
      const took = (Date.now() - t0) / 1000;
      log(`hooks: timeout backup ${b.status?.phase} in ${took.toFixed(1)}s`);
      expect(b.status?.phase).toBe('PartiallyFailed');
      expect(b.status?.hookStatus).toEqual({ hooksAttempted: 3, hooksFailed: 3 });
      const lines = runLines(stowage.server, srv, 'timeout');
      expect(lineWith(lines, `the hooks of pod ${ns}/typo cannot be run`)).toMatch(
        /^\S+ error +the hooks of pod \S+ cannot be run: annotation pre\.hook\.backup\.velero\.io\/on-error: "fail" is not an onError mode \(use Fail or Continue\); the pod is not backed up/,
      );
      const slow = lineWith(lines, `pre hook "pre.hook.backup.velero.io" (from the pod's annotations) in pod ${ns}/slow, container app: failed in`);
      expect(slow, lines.join('\n')).toMatch(/failed in 2\.\d\ds: timed out after 2s; its exec was ended; stdout: "started\\n"; the pod is not backed up/);
      expect(lineWith(lines, `post hook "post.hook.backup.stowage.dev" (from the pod's annotations) in pod ${ns}/nocontainer, container database: failed`))
        .toContain('the pod has no container "database" (its containers: app); the pod is not backed up (onError Fail)');
      expect(lineWith(lines, `pod ${ns}/done`)).toMatch(new RegExp(`^\\S+ warn +the 1 pre hook\\(s\\) of pod ${ns}/done are not run: the pod has ended \\(Succeeded\\)`));
      // Well inside the 60 s the command would have taken.
      expect(took).toBeLessThan(45);
      // Only the pod whose hooks were skipped is backed up.
      expect(runLines(stowage.server, srv, 'timeout').filter((l) => l.includes(`pods in namespace "${ns}"`))).toEqual([expect.stringContaining(`backed up 1 pods in namespace "${ns}"`)]);
      // Closing the exec's connection does not stop the command in the container (the runtime keeps it).
      const ps = kubectlOk(['-n', ns, 'exec', 'slow', '--', 'ps', '-o', 'pid,args']);
      log(`hooks: processes in pod slow after its hook timed out:\n${ps}`);
      expect(ps).toContain('sleep 60');
    }, 300_000);

    it('a requester who may back up the namespace but not exec into its pods is refused, by name, pod and right', async () => {
      const ns = appNs('hooks-rights');
      await startPod(ns, 'app', { 'pre.hook.backup.velero.io/command': 'true' });
      const alice = inCluster().cluster.cp.teamUsers.find((u) => u.name === 'alice');
      if (alice === undefined) throw new Error('the control plane has no team user alice');
      // alice may create Backups in the server's namespace, and view (no pods/exec) the app's.
      await stowage.client.create(ROLES, srv, { metadata: { name: 'backup-creator' }, rules: [{ apiGroups: ['stowage.dev'], resources: ['backups'], verbs: ['create', 'get'] }] });
      const bind = (namespace: string, kind: 'Role' | 'ClusterRole', name: string): Promise<unknown> => stowage.client.create(ROLE_BINDINGS, namespace, {
        metadata: { name: `alice-${name}` }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind, name },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
      });
      await bind(srv, 'Role', 'backup-creator');
      await bind(ns, 'ClusterRole', 'view');
      const asAlice = testClient(alice.kubeconfigPath);
      const b = await backup('rights', { includedNamespaces: [ns], includedResources: ['pods'] }, asAlice);
      expect(b.metadata.annotations?.['stowage.dev/requester']).toContain('"username":"alice"');
      expect(b.status?.phase).toBe('PartiallyFailed');
      expect(b.status?.hookStatus).toEqual({ hooksAttempted: 1, hooksFailed: 1 });
      const line = lineWith(runLines(stowage.server, srv, 'rights'), `pre hook "pre.hook.backup.velero.io" (from the pod's annotations) in pod ${ns}/app, container app: failed`);
      expect(line).toContain(`alice may not exec into pod ${ns}/app: lacks create pods/exec in namespace ${ns} (the API server said: pods "app" is forbidden: User "alice" cannot`);
      expect(tookPods(stowage.server, srv, 'rights', ns)).toBe(false);
    }, 300_000);

    it('in trust mode cluster-admin a hook runs with the server\'s own rights: the generated RBAC (hook-exec) lets it exec', async () => {
      const ns = appNs('hooks-ca');
      await startPod(ns, 'app', { 'pre.hook.backup.stowage.dev/command': '["/bin/sh", "-c", "id -u; echo as-server"]' });
      const caNs = uniqueName('hooks-ca-srv');
      namespaces.push(caNs);
      const caLoc = filesystemLocation();
      const ca = await startInProcessServer({ kubeconfigPath: inCluster().cluster.cp.kubeconfigPath, namespace: caNs, trustMode: 'cluster-admin', location: { name: caLoc.name, spec: caLoc.spec } });
      try {
        await stowage.client.create(RESOURCES.Backup, caNs, { apiVersion: 'stowage.dev/v1', kind: 'Backup', metadata: { name: 'as-server' }, spec: { includedNamespaces: [ns] } });
        const b = await waitFinished<Backup>(stowage.client, RESOURCES.Backup, caNs, 'as-server', 180_000);
        expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
        expect(b.status?.hookStatus).toEqual({ hooksAttempted: 1, hooksFailed: 0 });
        const lines = runLines(ca, caNs, 'as-server');
        expect(lineWith(lines, 'running with the server\'s rights (trust mode cluster-admin)')).toBeDefined();
        expect(lineWith(lines, `pre hook "pre.hook.backup.stowage.dev" (from the pod's annotations) in pod ${ns}/app, container app: succeeded in`)).toContain('as-server');
      } finally {
        await ca.stop();
        fs.rmSync(caLoc.root, { recursive: true, force: true });
      }
    }, 300_000);

    it('a Velero Schedule manifest with hooks, applied unchanged but for its apiVersion and namespace, makes backups that run them', async () => {
      const ns = appNs('hooks-schedule');
      await startPod(ns, 'web', {}, { app: 'web' });
      // As Velero's documentation writes one (velero.io/v1 Schedule, spec.template.hooks).
      // Created through the API, not kubectl: a synchronous kubectl would block this process, which
      // serves the admission webhook the API server calls for the create.
      await stowage.client.create(RESOURCES.Schedule, srv, parseYaml(`
apiVersion: stowage.dev/v1
kind: Schedule
metadata:
  name: nightly
  namespace: ${srv}
spec:
  schedule: 0 3 * * *
  template:
    includedNamespaces:
    - ${ns}
    ttl: 720h0m0s
    hooks:
      resources:
      - name: sync-web
        includedNamespaces:
        - ${ns}
        labelSelector:
          matchLabels:
            app: web
        pre:
        - exec:
            container: app
            command:
            - /bin/sh
            - -c
            - echo pre-sync
            onError: Fail
            timeout: 30s
        post:
        - exec:
            command:
            - /bin/sh
            - -c
            - echo post-sync
`) as object);
      const name = await waitUntil('the schedule\'s first backup', async () => {
        const list = await stowage.client.list<Backup>(RESOURCES.Backup, { namespace: srv, labelSelector: 'stowage.dev/schedule-name=nightly' });
        return list.items[0]?.metadata.name;
      }, 60_000, 250);
      const b = await waitFinished<Backup>(stowage.client, RESOURCES.Backup, srv, name, 180_000);
      expect(b.spec.hooks?.resources?.[0]?.name).toBe('sync-web');
      expect(b.status?.phase).toBe('Completed');
      expect(b.status?.hookStatus).toEqual({ hooksAttempted: 2, hooksFailed: 0 });
      const lines = runLines(stowage.server, srv, name);
      expect(lines.some((l) => l.includes(`pre hook "sync-web" (spec.hooks) in pod ${ns}/web, container app: succeeded`) && l.includes('pre-sync'))).toBe(true);
      expect(lines.some((l) => l.includes(`post hook "sync-web" (spec.hooks) in pod ${ns}/web, container app: succeeded`) && l.includes('post-sync'))).toBe(true);
      await stowage.client.delete(RESOURCES.Schedule, srv, 'nightly');
    }, 300_000);
  });
}

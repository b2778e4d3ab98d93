// Restore hooks (issue 36) in real containers on the real node: Stowage runs in process against the
// node's cluster (trust mode requester, the admission webhook served from the test process), backs
// up one namespace with three bare pods, and restores it under namespace mappings with Velero's hooks:
// init containers from a pod's annotations and from spec.hooks (a Velero Restore manifest as
// written), exec hooks that wait for the container to be ready, failing hooks with onError Fail and
// Continue and one that overruns its execTimeout, a waitTimeout on a pod never ready, a requester
// who may not exec, and a dry run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { RESOURCES, newBackup, type Backup, type Restore } from '../../src/apis/v1/index.js';
import { REQUESTER_ANNOTATION, formatRequester, type Requester } from '../../src/auth/index.js';
import { loadKubeConfig, type DynamicClient } from '../../src/kube/index.js';
import { BUSYBOX_IMAGE } from '../../scripts/node/node.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { startInProcessServer, type InProcessServer } from '../support/inProcessServer.js';
import { installServerIdentity } from '../deploy/manifests.js';
import { ensureNamespace, filesystemLocation, testClient, waitFinished } from '../support/server.js';
import { idleContainer, inCluster, kubectl, kubectlOk, log, podReady, timed } from './context.js';

const ADMIN: Requester = { username: 'admin', uid: 'admin', groups: ['system:masters', 'system:authenticated'] };
/** May restore pods (read, create, watch) into her namespaces, but not exec into them. */
const DANA: Requester = { username: 'dana', uid: 'dana-uid', groups: ['team-d', 'system:authenticated'] };

/** stuck: a pod whose container runs but is never ready (its probe always fails), for waitTimeout. */
const NEVER_READY = {
  apiVersion: 'v1', kind: 'Pod', metadata: { name: 'stuck', labels: { app: 'stuck' } },
  spec: { terminationGracePeriodSeconds: 1, containers: [{ ...idleContainer('app'), readinessProbe: { exec: { command: ['false'] }, periodSeconds: 1 } }] },
};

const stamp = (manifest: string, who: Requester): Record<string, unknown> => {
  const o = YAML.parse(manifest) as { metadata: { annotations?: Record<string, string> } };
  o.metadata.annotations = { ...o.metadata.annotations, [REQUESTER_ANNOTATION]: formatRequester(who) };
  return o;
};

export function restoreHooksSuite(): void {
  describe('restore hooks on the real node', () => {
    const stowageNs = uniqueName('stowage-rh');
    const src = uniqueName('rh-src');
    const made: string[] = [];
    let client: DynamicClient;
    let server: InProcessServer | undefined;

    /** A namespace for one restore's target, removed at the end. */
    const target = (what: string): string => {
      const ns = uniqueName(`rh-${what}`);
      made.push(ns);
      return ns;
    };
    const restore = async (manifest: string, who: Requester = ADMIN): Promise<Restore> => {
      const obj = stamp(manifest, who);
      await client.create(RESOURCES.Restore, stowageNs, obj);
      return waitFinished<Restore>(client, RESOURCES.Restore, stowageNs, (obj.metadata as { name: string }).name, 300_000);
    };
    /**
     * A Restore (in `namespace`) of backup b's pods labelled app=`app` into `dst`; `hooks`, when given,
     * is the YAML list under spec.hooks.resources (indented four spaces).
     */
    const podsRestore = (name: string, app: string, dst: string, hooks?: string, namespace = stowageNs): string => `
apiVersion: stowage.dev/v1
kind: Restore
metadata: {name: ${name}, namespace: ${namespace}}
spec:
  backupName: b
  includedResources: [pods]
  labelSelector: {matchLabels: {app: ${app}}}
  namespaceMapping: {${src}: ${dst}}
${hooks === undefined ? '' : `  hooks:\n    resources:\n${hooks}`}`;
    /** The restore's lines of the server log (its run log is mirrored there). */
    const runLines = (name: string): string[] => (server?.output() ?? '').split('\n').filter((l) => l.includes(`restore=${stowageNs}/${name}`));
    /** podsRestore as `who` into `dst` (a new namespace unless given), timed as `what`; the restore, its target and its log lines. */
    const restorePods = async (
      what: string, name: string, app: string, hooks?: string, opts: { who?: Requester; dst?: string } = {},
    ): Promise<{ r: Restore; dst: string; lines: string }> => {
      const dst = opts.dst ?? target(name);
      const r = await timed(`restore hooks: ${what}`, () => restore(podsRestore(name, app, dst, hooks), opts.who));
      return { r, dst, lines: runLines(name).join('\n') };
    };

    beforeAll(async () => {
      const { cluster } = inCluster();
      client = testClient(cluster.cp.kubeconfigPath);
      kubectlOk(['create', 'namespace', src]);
      made.push(src);
      // web: hooks in its annotations (Velero's keys); db: none of its own, for spec.hooks. Both share
      // an emptyDir with what init containers may write, and become ready 3 s after they start.
      kubectlOk(['apply', '-n', src, '-f', '-'], `
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
  annotations:
    init.hook.restore.velero.io/container-image: ${BUSYBOX_IMAGE}
    init.hook.restore.velero.io/container-name: restore-init
    init.hook.restore.velero.io/command: '["sh", "-c", "echo init ran before the app"]'
    post.hook.restore.velero.io/container: app
    post.hook.restore.velero.io/command: '["sh", "-c", "test -f /tmp/ready && echo hooked > /tmp/hooked && echo exec hook saw the app ready"]'
    post.hook.restore.velero.io/wait-for-ready: "true"
    post.hook.restore.velero.io/wait-timeout: 2m
    post.hook.restore.velero.io/exec-timeout: 30s
    post.hook.restore.velero.io/on-error: Fail
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: ${BUSYBOX_IMAGE}
    imagePullPolicy: Never
    command: [sh, -c, 'echo app started; sleep 3; touch /tmp/ready; exec sleep 100000']
    readinessProbe: {exec: {command: [cat, /tmp/ready]}, periodSeconds: 1}
---
apiVersion: v1
kind: Pod
metadata:
  name: db
  labels: {app: db}
spec:
  terminationGracePeriodSeconds: 1
  volumes: [{name: work, emptyDir: {}}]
  containers:
  - name: db
    image: ${BUSYBOX_IMAGE}
    imagePullPolicy: Never
    command: [sh, -c, 'echo "db saw: $(cat /work/marker 2>/dev/null || echo no marker)"; sleep 3; touch /tmp/ready; exec sleep 100000']
    volumeMounts: [{name: work, mountPath: /work}]
    readinessProbe: {exec: {command: [cat, /tmp/ready]}, periodSeconds: 1}
---
${JSON.stringify(NEVER_READY)}
`);
      await podReady(src, 'app in (web,db)', 2);
      const location = filesystemLocation('default');
      server = await timed('restore hooks: in-process server (requester mode) on the real cluster', () => startInProcessServer({
        kubeconfigPath: cluster.cp.kubeconfigPath, namespace: stowageNs, location,
      }));
      await client.create(RESOURCES.Backup, stowageNs, stamp(YAML.stringify(newBackup('b', stowageNs, { includedNamespaces: [src] })), ADMIN));
      const b = await waitFinished<Backup>(client, RESOURCES.Backup, stowageNs, 'b', 120_000);
      expect(b.status?.phase, b.status?.failureReason).toBe('Completed');
      // dana: pods in her target namespaces (and reading what the backup holds), never pods/exec.
      kubectlOk(['apply', '-f', '-'], `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: ${stowageNs}-pods-no-exec}
rules:
- {apiGroups: [""], resources: [pods, namespaces, configmaps, serviceaccounts], verbs: [get, list, watch, create]}
`);
      made.push(`clusterrole/${stowageNs}-pods-no-exec`);
    }, 600_000);

    afterAll(async () => {
      await server?.stop();
      for (const ns of made) {
        if (ns.startsWith('clusterrole/')) kubectl(['delete', ns, '--wait=false']);
        else kubectl(['delete', 'namespace', ns, '--wait=false']);
      }
    }, 120_000);

    it('an init container from the pod\'s annotations runs before the app container, and the exec hook waits for readiness, under a namespace mapping', async () => {
      const { r, dst, lines } = await restorePods('annotations (init + exec waiting for ready)', 'ann', 'web');
      expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
      expect(r.status?.hookStatus).toEqual({ hooksAttempted: 2, hooksFailed: 0 });
      const pod = (await inCluster().core.readNamespacedPod({ namespace: dst, name: 'web' }));
      // Put before the pod's own (it has none here), and run to completion before the app started.
      expect(pod.spec?.initContainers?.map((c) => [c.name, c.image])).toEqual([['restore-init', BUSYBOX_IMAGE]]);
      const init = pod.status?.initContainerStatuses?.[0]?.state?.terminated;
      expect(init?.exitCode).toBe(0);
      const appStarted = pod.status?.containerStatuses?.[0]?.state?.running?.startedAt;
      expect(new Date(String(appStarted)).getTime()).toBeGreaterThanOrEqual(new Date(String(init?.finishedAt)).getTime());
      expect(kubectlOk(['logs', '-n', dst, 'web', '-c', 'restore-init'])).toBe('init ran before the app\n');
      expect(kubectlOk(['logs', '-n', dst, 'web', '-c', 'app'])).toContain('app started');
      // The hook ran after readiness (its test -f would have failed before), in the restored pod.
      expect(kubectlOk(['exec', '-n', dst, 'web', '-c', 'app', '--', 'cat', '/tmp/hooked'])).toBe('hooked\n');
      expect(lines).toContain(`init hook from the pod's annotations in init container restore-init of pod ${dst}/web: exited 0 (ok)`);
      expect(lines).toMatch(new RegExp(`exec hook from the pod's annotations in container app of pod ${dst}/web: .* exited 0 \\(ok\\) in [0-9.]+s, after waiting [0-9.]+s for the container; stdout: exec hook saw the app ready`));
    }, 600_000);

    it('a Velero Restore manifest with spec.hooks, applied unchanged: its init container seeds a shared volume the app reads, its exec hook runs; hooks match the target namespace', async () => {
      const dst = target('spec');
      // Velero's format as its docs write it; only apiVersion and the names are Stowage's. The second
      // entry names the source namespace: hooks follow the namespace mapping, so it applies to nothing.
      const r = await timed('restore hooks: Velero manifest (init seeds, exec reads)', () => restore(`
apiVersion: stowage.dev/v1
kind: Restore
metadata: {name: velero-spec, namespace: ${stowageNs}}
spec:
  backupName: b
  includedNamespaces: ['*']
  includedResources: [pods]
  labelSelector: {matchLabels: {app: db}}
  namespaceMapping: {${src}: ${dst}}
  hooks:
    resources:
    - name: restore-hook-1
      includedNamespaces: [${dst}]
      includedResources: [pods]
      excludedResources: []
      labelSelector: {matchLabels: {app: db}}
      postHooks:
      - init:
          initContainers:
          - name: restore-hook-init1
            image: ${BUSYBOX_IMAGE}
            imagePullPolicy: Never
            volumeMounts: [{mountPath: /work, name: work}]
            command: [/bin/sh, -c, 'echo -n seeded > /work/marker']
          timeout: 2m
      - exec:
          execTimeout: 1m
          waitTimeout: 5m
          onError: Fail
          container: db
          waitForReady: true
          command: [/bin/sh, -c, 'cat /work/marker']
    - name: source-namespace
      includedNamespaces: [${src}]
      excludedNamespaces: [kube-system]
      postHooks:
      - exec: {command: ['false'], onError: Fail}
`));
      expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
      expect(r.status?.hookStatus).toEqual({ hooksAttempted: 2, hooksFailed: 0 });
      await podReady(dst, 'app=db', 1);
      expect(kubectlOk(['logs', '-n', dst, 'db', '-c', 'db'])).toContain('db saw: seeded');
      const lines = runLines('velero-spec');
      expect(lines.some((l) => l.includes(`init hook "restore-hook-1" in init container restore-hook-init1 of pod ${dst}/db: exited 0 (ok)`))).toBe(true);
      expect(lines.some((l) => l.includes(`exec hook "restore-hook-1" in container db of pod ${dst}/db: ["/bin/sh","-c","cat /work/marker"] exited 0 (ok)`) && l.includes('stdout: seeded')), lines.join('\n')).toBe(true);
      expect(lines.some((l) => l.includes('source-namespace'))).toBe(false);
    }, 600_000);

    it('failing exec hooks: Continue is a warning, Fail an error (PartiallyFailed) that stops the pod\'s later hooks, and an overrun execTimeout fails; each names hook, container, exit code and output', async () => {
      const { r, dst, lines } = await restorePods('failing hooks', 'failing', 'db', `
    - name: missing
      postHooks:
      - exec: {container: nosuch, command: ['true']}
    - name: slow
      postHooks:
      - exec: {command: [sh, -c, 'echo starting; sleep 60'], execTimeout: 2s, onError: Continue}
    - name: soft
      postHooks:
      - exec: {container: db, command: [sh, -c, 'echo soft failure >&2; exit 3'], onError: Continue}
    - name: hard
      postHooks:
      - exec: {command: [sh, -c, 'echo hard failure; exit 7'], onError: Fail}
      - exec: {command: ['true']}
`);
      expect(r.status?.phase, JSON.stringify(r.status)).toBe('PartiallyFailed');
      expect(r.status?.hookStatus).toEqual({ hooksAttempted: 5, hooksFailed: 5 });
      const pod = `pod ${dst}/db`;
      expect(lines).toContain(`exec hook "missing" in container nosuch of ${pod} failed: ${pod} has no container nosuch (it has db)`);
      expect(lines).toContain(`exec hook "slow" in container db of ${pod} failed: ["sh","-c","echo starting; sleep 60"] ran past its execTimeout of 2.0s and was ended; stdout: starting`);
      const ran = 'in [0-9.]+s, after waiting [0-9.]+s for the container';
      expect(lines).toMatch(new RegExp(`exec hook "soft" in container db of ${pod} failed: \\["sh","-c","echo soft failure >&2; exit 3"\\] exited 3 ${ran}; stderr: soft failure`));
      expect(lines).toMatch(new RegExp(`exec hook "hard" in container db of ${pod} failed: \\["sh","-c","echo hard failure; exit 7"\\] exited 7 ${ran}; stdout: hard failure`));
      expect(lines).toContain(`exec hook "hard" in container db of ${pod} not run: the pod's hook before it failed with onError Fail (exec hook "hard" in container db of ${pod})`);
      // Continue's failures are warnings, Fail's (and the hook it stopped, onError Continue by default: a warning) errors.
      expect(r.status?.errors).toBe(1);
      expect(r.status?.warnings).toBeGreaterThanOrEqual(4);
    }, 600_000);

    it('an init container that fails is an error naming its exit code and output, and the pod\'s exec hooks are reported not run at once', async () => {
      const { r, dst, lines } = await restorePods('failing init container', 'initfail', 'db', `
    - name: broken
      postHooks:
      - init:
          initContainers:
          - {name: broken, image: ${BUSYBOX_IMAGE}, imagePullPolicy: Never, terminationMessagePolicy: FallbackToLogsOnError, command: [sh, -c, 'echo setup broke >&2; exit 4']}
      - exec: {command: ['true'], waitTimeout: 10m}
`);
      expect(r.status?.phase, JSON.stringify(r.status)).toBe('PartiallyFailed');
      expect(r.status?.hookStatus).toEqual({ hooksAttempted: 2, hooksFailed: 2 });
      const init = `init hook "broken" in init container broken of pod ${dst}/db`;
      expect(lines).toMatch(new RegExp(`${init} failed: exited 4 \\(Error\\) [0-9.]+s after the pod was created: setup broke`));
      expect(lines).toContain(`exec hook "broken" in container db of pod ${dst}/db not run: ${init} failed, so the pod's containers do not start`);
    }, 600_000);

    it('waitTimeout bounds the wait for a container that never becomes ready: the hook fails once it has passed, naming it, and does not run', async () => {
      const t0 = Date.now();
      const { r, dst, lines } = await restorePods('waitTimeout 3s on a pod never ready', 'notready', 'stuck', `
    - name: when-ready
      postHooks:
      - exec: {command: [sh, -c, 'touch /tmp/hooked'], waitForReady: true, waitTimeout: 3s, onError: Fail}
`);
      const took = (Date.now() - t0) / 1000;
      log(`restore hooks: waitTimeout 3s: the restore ended ${r.status?.phase} ${took.toFixed(1)}s after it was created`);
      expect(r.status?.phase, JSON.stringify(r.status)).toBe('PartiallyFailed');
      expect(r.status?.hookStatus).toEqual({ hooksAttempted: 1, hooksFailed: 1 });
      expect(lines).toContain(`exec hook "when-ready" in container app of pod ${dst}/stuck failed: container app was not ready 3.0s after the pod was created (waitTimeout)`);
      // It waited that long (not the 10m default), and the command never ran in the running container.
      expect(took).toBeGreaterThanOrEqual(3);
      const running = await waitUntil('the restored pod stuck running', async () => {
        const st = (await inCluster().core.readNamespacedPod({ namespace: dst, name: 'stuck' })).status?.containerStatuses?.[0];
        return st?.state?.running !== undefined ? st : undefined;
      }, 120_000, 250);
      expect(running.ready).toBe(false);
      expect(kubectlOk(['exec', '-n', dst, 'stuck', '-c', 'app', '--', 'sh', '-c', 'test -e /tmp/hooked && echo hooked || echo not hooked']).trim()).toBe('not hooked');
    }, 300_000);

    it('a requester who may not exec into the pod cannot hook it: the refusal names the pod and the right', async () => {
      const dst = target('noexec');
      kubectlOk(['create', 'namespace', dst]);
      for (const ns of [src, dst]) kubectlOk(['create', 'rolebinding', '-n', ns, 'dana-pods', `--clusterrole=${stowageNs}-pods-no-exec`, '--group=team-d']);
      const { r, lines } = await restorePods('requester without pods/exec', 'noexec', 'db', `
    - name: check
      postHooks:
      - exec: {command: ['true'], onError: Fail}
`, { who: DANA, dst });
      expect(r.status?.phase, JSON.stringify(r.status)).toBe('PartiallyFailed');
      expect(r.status?.hookStatus).toEqual({ hooksAttempted: 1, hooksFailed: 1 });
      // The pod itself was hers to create.
      await podReady(dst, 'app=db', 1);
      expect(lines).toContain(`exec hook "check" in container db of pod ${dst}/db failed: dana may not exec into pod ${dst}/db: lacks create pods/exec in namespace ${dst}`);
    }, 600_000);

    it('a dry run says which hooks it would add and run, and runs none', async () => {
      const dst = target('dry');
      const r = await restore(`
apiVersion: stowage.dev/v1
kind: Restore
metadata: {name: dry, namespace: ${stowageNs}}
spec:
  backupName: b
  dryRun: true
  includedResources: [pods]
  namespaceMapping: {${src}: ${dst}}
  hooks:
    resources:
    - name: seed
      labelSelector: {matchLabels: {app: db}}
      postHooks:
      - init: {initContainers: [{name: seed, image: ${BUSYBOX_IMAGE}, command: ['true']}]}
      - exec: {command: [sh, -c, 'echo would not run']}
`);
      expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
      expect(r.status?.hookStatus).toBeUndefined();
      const lines = runLines('dry').join('\n');
      expect(lines).toContain(`dry run: pod ${dst}/db: init container seed (${BUSYBOX_IMAGE}) would be added by restore hook "seed"; nothing runs`);
      expect(lines).toContain(`dry run: pod ${dst}/db: exec hook "seed" in container db of pod ${dst}/db would run: ["sh","-c","echo would not run"] (onError Continue); nothing runs`);
      expect(lines).toContain(`dry run: pod ${dst}/web: init container restore-init (${BUSYBOX_IMAGE}) would be added by restore hook from the pod's annotations; nothing runs`);
      expect(kubectl(['get', 'namespace', dst]).status).not.toBe(0);
      expect(lines).not.toMatch(/exited \d/);
      log(`restore hooks dry run:\n${lines}`);
    }, 300_000);

    it('in trust mode cluster-admin the server\'s own rules run the hooks; without restore-hooks-watch the hook fails naming the right', async () => {
      const { cluster } = inCluster();
      const admin = loadKubeConfig(cluster.cp.kubeconfigPath);
      /** A cluster-admin server in a namespace of its own (its identity the generated rules, less `without`), a backup of `src`, and a restore with one exec hook. */
      const runAsClusterAdmin = async (tag: string, without: string[]): Promise<{ r: Restore; dst: string; lines: string }> => {
        const ns = uniqueName(`stowage-rh-${tag}`);
        made.push(ns);
        await ensureNamespace(client, ns);
        const identity = await installServerIdentity(client, admin, { namespace: ns, trustMode: 'cluster-admin', withoutRules: without });
        const s = await startInProcessServer({
          kubeconfigPath: identity.kubeconfigPath, adminKubeconfigPath: cluster.cp.kubeconfigPath, identity: 'kubeconfig',
          namespace: ns, trustMode: 'cluster-admin', location: filesystemLocation('default'),
        });
        try {
          await client.create(RESOURCES.Backup, ns, newBackup('b', ns, { includedNamespaces: [src], includedResources: ['pods'], labelSelector: { matchLabels: { app: 'db' } } }));
          expect((await waitFinished<Backup>(client, RESOURCES.Backup, ns, 'b', 120_000)).status?.phase).toBe('Completed');
          const dst = target(tag);
          await client.create(RESOURCES.Restore, ns, YAML.parse(podsRestore('r', 'db', dst, `
    - name: check
      postHooks:
      - exec: {command: [sh, -c, 'echo as the server'], onError: Fail, waitForReady: true}
`, ns)) as Record<string, unknown>);
          const r = await waitFinished<Restore>(client, RESOURCES.Restore, ns, 'r', 300_000);
          return { r, dst, lines: s.output().split('\n').filter((l) => l.includes(`restore=${ns}/r`)).join('\n') };
        } finally {
          await s.stop();
          await identity.remove().catch(() => undefined);
        }
      };
      const ok = await timed('restore hooks: cluster-admin mode', () => runAsClusterAdmin('ca', []));
      expect(ok.r.status?.phase, ok.lines).toBe('Completed');
      expect(ok.r.status?.hookStatus).toEqual({ hooksAttempted: 1, hooksFailed: 0 });
      expect(ok.lines).toContain(`exec hook "check" in container db of pod ${ok.dst}/db: ["sh","-c","echo as the server"] exited 0 (ok)`);
      const lacking = await timed('restore hooks: cluster-admin mode without restore-hooks-watch', () => runAsClusterAdmin('nowatch', ['restore-hooks-watch']));
      expect(lacking.r.status?.phase, lacking.lines).toBe('PartiallyFailed');
      expect(lacking.r.status?.hookStatus).toEqual({ hooksAttempted: 1, hooksFailed: 1 });
      expect(lacking.lines).toMatch(new RegExp(`restore hooks of pod ${lacking.dst}/db stopped: cannot watch pod ${lacking.dst}/db: .*cannot watch resource \\\\?"pods\\\\?"`));
    }, 900_000);

    it('refuses wrong hooks at validation, each by its field path', async () => {
      const r = await restore(`
apiVersion: stowage.dev/v1
kind: Restore
metadata: {name: invalid, namespace: ${stowageNs}}
spec:
  backupName: b
  hooks:
    resources:
    - name: bad
      postHooks:
      - exec: {command: ['true'], execTimeout: soon}
      - init: {initContainers: [{name: Seed}]}
`);
      expect(r.status?.phase).toBe('FailedValidation');
      expect(r.status?.validationErrors).toEqual(expect.arrayContaining([
        expect.stringMatching(/^spec\.hooks\.resources\[0\]\.postHooks\[0\]\.exec\.execTimeout "soon" is not a duration/),
        'spec.hooks.resources[0].postHooks[1].init.initContainers[0].name "Seed" is not a valid container name (a DNS label: lowercase letters, digits and "-", at most 63)',
        'spec.hooks.resources[0].postHooks[1].init.initContainers[0].image is required',
      ]));
    }, 120_000);
  });
}

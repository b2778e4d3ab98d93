import { describe, expect, it } from 'vitest';
import { newRestore } from '../../apis/v1/index.js';
import type { KubeObject } from '../../plugin/api/index.js';
import { BUILTIN_RESTORE_ITEM_ACTIONS, actionMatcher, resolveRestoreItemActions } from './index.js';
import { restoreJob } from './job.js';
import { restorePod } from './pod.js';
import { restoreService, serviceAction } from './service.js';
import { isGeneratedTokenName, restoreServiceAccount, restoreTokenSecret, tokenSecretAction } from './serviceAccounts.js';
import { restorePersistentVolume, restorePersistentVolumeClaim } from './volumes.js';

describe('pod action', () => {
  it('clears nodeName and drops projected token volumes with their mounts', () => {
    const pod: KubeObject = {
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' },
      spec: {
        nodeName: 'node-1',
        serviceAccountName: 'app',
        volumes: [
          { name: 'data', emptyDir: {} },
          { name: 'kube-api-access-x7k2p', projected: { sources: [{ serviceAccountToken: { path: 'token' } }, { configMap: { name: 'kube-root-ca.crt' } }] } },
          { name: 'custom-token', projected: { sources: [{ serviceAccountToken: { path: 't', audience: 'vault' } }] } },
          { name: 'legacy', secret: { secretName: 'app-token-abcde' } },
          { name: 'cfg', projected: { sources: [{ configMap: { name: 'c' } }] } },
        ],
        initContainers: [{ name: 'init', volumeMounts: [{ name: 'kube-api-access-x7k2p', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' }] }],
        containers: [
          { name: 'c', volumeMounts: [{ name: 'data', mountPath: '/d' }, { name: 'custom-token', mountPath: '/t' }, { name: 'legacy', mountPath: '/l' }, { name: 'cfg', mountPath: '/c' }] },
        ],
      },
    };
    expect(restorePod(pod).spec).toEqual({
      serviceAccountName: 'app',
      volumes: [{ name: 'data', emptyDir: {} }, { name: 'cfg', projected: { sources: [{ configMap: { name: 'c' } }] } }],
      initContainers: [{ name: 'init' }],
      containers: [{ name: 'c', volumeMounts: [{ name: 'data', mountPath: '/d' }, { name: 'cfg', mountPath: '/c' }] }],
    });
  });

  it('leaves a pod without token volumes as it is, apart from nodeName', () => {
    const pod: KubeObject = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { nodeName: 'n', containers: [{ name: 'c' }], volumes: [{ name: 'v', secret: { secretName: 'other-token-abcde' } }] } };
    expect(restorePod(pod).spec).toEqual({ containers: [{ name: 'c' }], volumes: [{ name: 'v', secret: { secretName: 'other-token-abcde' } }] });
  });
});

describe('service action', () => {
  const svc = (): KubeObject => ({
    apiVersion: 'v1', kind: 'Service', metadata: { name: 's' },
    spec: { type: 'NodePort', clusterIP: '10.0.0.7', clusterIPs: ['10.0.0.7'], ports: [{ port: 80, nodePort: 30080 }], healthCheckNodePort: 31000 },
  });

  it('clears cluster IPs and node ports', () => {
    expect(restoreService(svc(), false).spec).toEqual({ type: 'NodePort', ports: [{ port: 80 }] });
  });

  it('keeps node ports with preserveNodePorts, read from the Restore', async () => {
    const restore = newRestore('r', 'stowage', { backupName: 'b', preserveNodePorts: true });
    const out = await serviceAction.execute({ item: svc(), itemFromBackup: svc(), restore });
    expect(out.item.spec).toEqual({ type: 'NodePort', ports: [{ port: 80, nodePort: 30080 }], healthCheckNodePort: 31000 });
  });

  it('keeps clusterIP None of a headless Service', () => {
    const headless: KubeObject = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'h' }, spec: { clusterIP: 'None', clusterIPs: ['None'], ports: [{ port: 80 }] } };
    expect(restoreService(headless, false).spec).toEqual({ clusterIP: 'None', clusterIPs: ['None'], ports: [{ port: 80 }] });
  });
});

describe('job action', () => {
  const job = (manual?: boolean, extra: Record<string, string> = {}): KubeObject => ({
    apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'j' },
    spec: {
      ...(manual !== undefined ? { manualSelector: manual } : {}),
      selector: { matchLabels: { 'controller-uid': 'u1', 'batch.kubernetes.io/controller-uid': 'u1', ...extra } },
      template: { metadata: { labels: { 'controller-uid': 'u1', 'batch.kubernetes.io/controller-uid': 'u1', 'job-name': 'j', ...extra } }, spec: { containers: [] } },
    },
  });

  it('drops the generated selector and the uid labels so the apiserver generates them again', () => {
    expect(restoreJob(job()).spec).toEqual({ template: { metadata: { labels: { 'job-name': 'j' } }, spec: { containers: [] } } });
    expect(restoreJob(job(false)).spec).toEqual({ template: { metadata: { labels: { 'job-name': 'j' } }, spec: { containers: [] } } });
  });

  it('keeps a manual selector without the uid labels', () => {
    expect(restoreJob(job(true, { app: 'x' })).spec).toEqual({
      manualSelector: true,
      selector: { matchLabels: { app: 'x' } },
      template: { metadata: { labels: { 'job-name': 'j', app: 'x' } }, spec: { containers: [] } },
    });
  });

  it('unsets manualSelector when the manual selector held only the uid', () => {
    expect(restoreJob(job(true)).spec).toEqual({ template: { metadata: { labels: { 'job-name': 'j' } }, spec: { containers: [] } } });
  });
});

describe('persistent volume actions', () => {
  it('clears the claimRef uid and resourceVersion of a PV, keeping the claim it binds to', () => {
    const pv: KubeObject = { apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'pv' }, spec: { claimRef: { kind: 'PersistentVolumeClaim', namespace: 'n', name: 'c', uid: 'u', resourceVersion: '3' } } };
    expect(restorePersistentVolume(pv).spec).toEqual({ claimRef: { kind: 'PersistentVolumeClaim', namespace: 'n', name: 'c' } });
  });

  it('removes the selected-node and binding annotations of a PVC', () => {
    const pvc: KubeObject = {
      apiVersion: 'v1', kind: 'PersistentVolumeClaim',
      metadata: { name: 'c', annotations: { 'volume.kubernetes.io/selected-node': 'node-1', 'pv.kubernetes.io/bind-completed': 'yes', 'pv.kubernetes.io/bound-by-controller': 'yes', keep: 'me' } },
      spec: { volumeName: 'pv' },
    };
    expect(restorePersistentVolumeClaim(pvc).metadata).toEqual({ name: 'c', annotations: { keep: 'me' } });
    expect(pvc.spec).toEqual({ volumeName: 'pv' });
  });
});

describe('service-account token actions', () => {
  it('recognises controller-generated token secret names', () => {
    expect(isGeneratedTokenName('default-token-x7k2p', 'default')).toBe(true);
    expect(isGeneratedTokenName('default-token-mine', 'default')).toBe(false);
    expect(isGeneratedTokenName('app-token-x7k2p', 'default')).toBe(false);
  });

  it('drops generated token secrets from a ServiceAccount, keeping the others', () => {
    const sa: KubeObject = { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'app' }, secrets: [{ name: 'app-token-x7k2p' }, { name: 'pull' }], imagePullSecrets: [{ name: 'pull' }] };
    expect(restoreServiceAccount(sa)).toEqual({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'app' }, secrets: [{ name: 'pull' }], imagePullSecrets: [{ name: 'pull' }] });
    const only: KubeObject = { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'app' }, secrets: [{ name: 'app-token-x7k2p' }] };
    expect(restoreServiceAccount(only)).not.toHaveProperty('secrets');
  });

  it('skips generated token secrets and strips the old uid and token from hand-made ones', async () => {
    const gen: KubeObject = { apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/service-account-token', metadata: { name: 'app-token-x7k2p', annotations: { 'kubernetes.io/service-account.name': 'app', 'kubernetes.io/service-account.uid': 'u' } }, data: { token: 'dA==' } };
    expect((await tokenSecretAction.execute({ item: gen, itemFromBackup: gen, restore: newRestore('r', 's', {}) })).skipRestore).toBe(true);
    const mine: KubeObject = { apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/service-account-token', metadata: { name: 'app-long-lived', annotations: { 'kubernetes.io/service-account.name': 'app', 'kubernetes.io/service-account.uid': 'u' } }, data: { token: 'dA==', 'ca.crt': 'Yw==' } };
    expect(restoreTokenSecret(mine)).toEqual({ apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/service-account-token', metadata: { name: 'app-long-lived', annotations: { 'kubernetes.io/service-account.name': 'app' } }, data: { 'ca.crt': 'Yw==' } });
    const opaque: KubeObject = { apiVersion: 'v1', kind: 'Secret', type: 'Opaque', metadata: { name: 'app-token-x7k2p' }, data: { token: 'dA==' } };
    expect(restoreTokenSecret(opaque)).toBe(opaque);
  });
});

describe('action selectors', () => {
  it('each built-in applies to its own resource only', async () => {
    const matchers = (await resolveRestoreItemActions(BUILTIN_RESTORE_ITEM_ACTIONS)).map(actionMatcher);
    const applying = (resource: string, group = ''): string[] =>
      matchers.filter((m) => m.applies({ resource: { resource, group }, namespace: 'n', labels: undefined })).map((m) => m.name);
    expect(applying('pods')).toEqual(['stowage.dev/pod']);
    expect(applying('services')).toEqual(['stowage.dev/service']);
    expect(applying('jobs', 'batch')).toEqual(['stowage.dev/job']);
    expect(applying('persistentvolumeclaims')).toEqual(['stowage.dev/persistent-volume-claim']);
    expect(applying('secrets')).toEqual(['stowage.dev/service-account-token-secret']);
    expect(applying('configmaps')).toEqual([]);
  });

  it('a plugin selector filters by namespace, resource and label selector; cluster-scoped items only without namespace includes', () => {
    const m = actionMatcher({
      name: 'example.com/x',
      action: serviceAction,
      selector: { includedNamespaces: ['app-*'], excludedNamespaces: ['app-skip'], includedResources: ['configmaps', 'widgets.example.com'], excludedResources: [], labelSelector: 'tier in (web),!legacy' },
    });
    const cm = { resource: 'configmaps', group: '' };
    expect(m.applies({ resource: cm, namespace: 'app-1', labels: { tier: 'web' } })).toBe(true);
    expect(m.applies({ resource: cm, namespace: 'app-1', labels: { tier: 'web', legacy: 'y' } })).toBe(false);
    expect(m.applies({ resource: cm, namespace: 'app-skip', labels: { tier: 'web' } })).toBe(false);
    expect(m.applies({ resource: cm, namespace: 'other', labels: { tier: 'web' } })).toBe(false);
    expect(m.applies({ resource: { resource: 'widgets', group: 'example.com' }, namespace: '', labels: { tier: 'web' } })).toBe(false);
    expect(() => actionMatcher({ name: 'example.com/bad', action: serviceAction, selector: { includedNamespaces: [], excludedNamespaces: [], includedResources: [], excludedResources: [], labelSelector: 'a in (' } })).toThrow('example.com/bad');
  });
});

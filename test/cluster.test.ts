// Proves the test harness itself: a real apiserver with RBAC, a controller-manager, an S3 server.
import { describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import * as k8s from '@kubernetes/client-node';
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { K8S_VERSION } from '../scripts/cluster/paths.js';
import { adminConfig, createNamespace, uniqueName, userConfig, waitUntil } from './support/kube.js';

describe('local control plane', () => {
  it(`reports the release it was built from, v${K8S_VERSION}`, async () => {
    const info = await adminConfig().makeApiClient(k8s.VersionApi).getCode();
    expect(info.gitVersion).toBe(`v${K8S_VERSION}`);
    expect(`${info.major}.${info.minor}`).toBe(K8S_VERSION.split('.').slice(0, 2).join('.'));
  });

  it('labels every namespace with kubernetes.io/metadata.name, which webhooks select on', async () => {
    const kc = adminConfig();
    const ns = await createNamespace(kc, 'labelled');
    const got = await kc.makeApiClient(k8s.CoreV1Api).readNamespace({ name: ns });
    expect(got.metadata?.labels?.['kubernetes.io/metadata.name']).toBe(ns);
  });

  it('delivers add, update and delete events of a custom resource to an informer', async () => {
    const kc = adminConfig();
    const group = `${uniqueName('g')}.test.stowage.dev`;
    const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
    await ext.createCustomResourceDefinition({
      body: {
        metadata: { name: `widgets.${group}` },
        spec: {
          group,
          scope: 'Namespaced',
          names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
          versions: [{
            name: 'v1', served: true, storage: true,
            schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', x_kubernetes_preserve_unknown_fields: true } } } },
          }],
        },
      },
    });
    await waitUntil('CRD established', async () => {
      const crd = await ext.readCustomResourceDefinition({ name: `widgets.${group}` });
      return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ? true : undefined;
    });
    const ns = await createNamespace(kc, 'informer');
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    const path = `/apis/${group}/v1/namespaces/${ns}/widgets`;
    // A new CRD's watch cache answers 429 "storage is (re)initializing" for a moment after it is
    // Established (1.3x), and client-node's informer stops at its first error: start once it lists.
    await waitUntil('the custom resource to be listable', async () =>
      custom.listNamespacedCustomObject({ group, version: 'v1', namespace: ns, plural: 'widgets' }).then(() => true, () => undefined));
    const informer = k8s.makeInformer<k8s.KubernetesObject>(kc, path, () =>
      custom.listNamespacedCustomObject({ group, version: 'v1', namespace: ns, plural: 'widgets' }) as Promise<k8s.KubernetesListObject<k8s.KubernetesObject>>);
    const events: string[] = [];
    informer.on('add', (o) => events.push(`add:${o.metadata?.name}`));
    informer.on('error', (e) => events.push(`error:${String(e)}`));
    informer.on('update', (o) => events.push(`update:${o.metadata?.name}`));
    informer.on('delete', (o) => events.push(`delete:${o.metadata?.name}`));
    await informer.start();
    try {
      const base = { group, version: 'v1', namespace: ns, plural: 'widgets' };
      await custom.createNamespacedCustomObject({ ...base, body: { apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name: 'w1' }, spec: { size: 1 } } });
      await waitUntil(`add event (so far: ${events.join(', ')})`, async () => (events.includes('add:w1') ? true : undefined), 20_000);
      await custom.patchNamespacedCustomObject({ ...base, name: 'w1', body: { spec: { size: 2 } } }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));
      await waitUntil('update event', async () => (events.includes('update:w1') ? true : undefined), 20_000);
      await custom.deleteNamespacedCustomObject({ ...base, name: 'w1' });
      await waitUntil('delete event', async () => (events.includes('delete:w1') ? true : undefined), 20_000);
      expect(events).toEqual(['add:w1', 'update:w1', 'delete:w1']);
    } finally {
      await informer.stop();
      await ext.deleteCustomResourceDefinition({ name: `widgets.${group}` });
    }
  });

  it('returns every object across the pages of a paginated LIST', async () => {
    const kc = adminConfig();
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const ns = await createNamespace(kc, 'paging');
    const total = 57;
    await Promise.all(Array.from({ length: total }, (_, i) =>
      core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: `cm-${i}` }, data: { i: String(i) } } })));
    const names: string[] = [];
    let pages = 0;
    let cont: string | undefined;
    do {
      const page = await core.listNamespacedConfigMap({ namespace: ns, limit: 10, _continue: cont });
      pages++;
      names.push(...page.items.map((c) => c.metadata?.name ?? ''));
      cont = page.metadata?._continue || undefined;
    } while (cont);
    expect(pages).toBe(6);
    // The namespace also holds kube-root-ca.crt, published by the controller-manager.
    expect(names.filter((n) => n.startsWith('cm-')).sort()).toEqual(Array.from({ length: total }, (_, i) => `cm-${i}`).sort());
    expect(new Set(names).size).toBe(names.length);
  });

  it('finishes deleting a namespace, because the controller-manager runs', async () => {
    const kc = adminConfig();
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const ns = await createNamespace(kc, 'doomed');
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'c' } } });
    await core.deleteNamespace({ name: ns });
    await waitUntil('namespace gone', async () => {
      try {
        await core.readNamespace({ name: ns });
        return undefined;
      } catch (err) {
        return (err as { code?: number }).code === 404 ? true : undefined;
      }
    }, 90_000, 500);
  });

  it('refuses the unprivileged token where RBAC says so', async () => {
    const core = userConfig().makeApiClient(k8s.CoreV1Api);
    const err = await core.listNamespace().then(() => undefined, (e: unknown) => e as { code?: number; body?: string });
    expect(err?.code).toBe(403);
    const status = JSON.parse(String(err?.body)) as { reason: string; message: string };
    expect(status.reason).toBe('Forbidden');
    expect(status.message).toContain('User "tester" cannot list resource "namespaces"');
    // The same token is authenticated: discovery, open to every authenticated user, still works.
    const version = await userConfig().makeApiClient(k8s.VersionApi).getCode();
    expect(version.major).toBe('1');
  });
});

describe('S3 server', () => {
  it('supports put, get, list and a multipart upload', async () => {
    const cfg = inject('s3');
    const s3 = new S3Client({
      endpoint: cfg.endpoint, region: cfg.region, forcePathStyle: true,
      credentials: { accessKeyId: cfg.accessKeyId, secretAccessKey: cfg.secretAccessKey },
    });
    try {
      const Bucket = uniqueName('bucket');
      await s3.send(new CreateBucketCommand({ Bucket }));
      await s3.send(new PutObjectCommand({ Bucket, Key: 'a/one.txt', Body: 'hello' }));
      const got = await s3.send(new GetObjectCommand({ Bucket, Key: 'a/one.txt' }));
      expect(await got.Body?.transformToString()).toBe('hello');

      const big = Buffer.alloc(12 * 1024 * 1024, 7);
      big.write('start', 0);
      const upload = new Upload({ client: s3, params: { Bucket, Key: 'a/big.bin', Body: big }, partSize: 5 * 1024 * 1024 });
      await upload.done();
      const back = await s3.send(new GetObjectCommand({ Bucket, Key: 'a/big.bin' }));
      const bytes = Buffer.from((await back.Body?.transformToByteArray()) ?? []);
      expect(bytes.length).toBe(big.length);
      expect(bytes.equals(big)).toBe(true);

      const listed = await s3.send(new ListObjectsV2Command({ Bucket, Prefix: 'a/' }));
      expect((listed.Contents ?? []).map((o) => o.Key).sort()).toEqual(['a/big.bin', 'a/one.txt']);
      const dirs = await s3.send(new ListObjectsV2Command({ Bucket, Delimiter: '/' }));
      expect((dirs.CommonPrefixes ?? []).map((p) => p.Prefix)).toEqual(['a/']);
    } finally {
      s3.destroy();
    }
  });
});

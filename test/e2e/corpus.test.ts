// The real-world corpus round trip (issue 17, part 6): apply test/fixtures/corpus (apps, data tier,
// operators, multi-version CRDs, bound volumes) to the real apiserver, back its namespaces up through
// `stowage server` into the real S3 server (a location that signs, as locations do by default), delete
// the namespaces and every cluster-scoped corpus object, restore, and compare every object with the
// snapshot taken before the backup.
//
// The backup names only the corpus namespaces and leaves cluster resources at the default (auto),
// so the ClusterRoles, ClusterRoleBindings, PVs, StorageClass, PriorityClasses, RuntimeClass and
// CRDs can only come back through the backup's dependency closure.
//
// No PV binder runs in the test control plane (scripts/cluster/controlPlane.ts disables
// persistentvolume-binder, and there is no kubelet or scheduler). The test does what the binder
// would for the corpus's pre-bound pairs: after the claims exist it sets each PV's claimRef.uid and
// marks PV and claim Bound through the status subresource, and before deleting a PV whose claim is
// gone it marks it Released (so pv-protection lets it go). Claims of StatefulSet templates stay
// Pending (WaitForFirstConsumer, no pod is ever scheduled), as they would in a real cluster.
import crypto from 'node:crypto';
import zlib from 'node:zlib';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { RESOURCES, newBackup, newRestore, type Backup, type Restore } from '../../src/apis/v1/index.js';
import { isNotFound, type DynamicClient, type KubeObject, type ResourceRef } from '../../src/kube/index.js';
import { loadCorpus } from '../fixtures/corpus/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { diffObjects, normalise, shown, type FieldDiff } from '../support/objectDiff.js';
import { testS3 } from '../support/s3ObjectStore.js';
import { SIGNED, createS3CredentialsSecret, ensureNamespace, s3LocationSpec, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';
import { resourceAt, servedResources, type ServedResource } from '../support/servedResources.js';

const corpus = loadCorpus(crypto.randomBytes(3).toString('hex'));
const NAMESPACES = corpus.objects.filter((o) => o.kind === 'Namespace').map((o) => name(o));
const CLUSTER_SCOPED = corpus.objects.filter((o) => o.kind !== 'Namespace' && o.metadata?.namespace === undefined);
const FIELD_MANAGER = 'corpus-test';
/** Never restored by design (src/restore/kinds.ts): the record of what happened, not state. */
const NOT_STATE = new Set(['events', 'events.events.k8s.io']);

/**
 * Objects left out of the object-by-object comparison, each with its reason: EndpointSlices that
 * the endpointslice controller manages. The restore leaves them to it (src/restore/maintained.ts),
 * and it writes them from the cluster as it is: how many slices a Service gets, and of which
 * address type, follows its own timing (a run saw 2 slices before and 3 after). settled() checks
 * instead that every Service with a selector has its slices after the restore.
 */
function controllerOutput(o: Obj): boolean {
  return o.kind === 'EndpointSlice' && o.metadata.labels?.['endpointslice.kubernetes.io/managed-by'] === 'endpointslice-controller.k8s.io';
}

type Obj = KubeObject & { metadata: NonNullable<KubeObject['metadata']> & { name: string } };
interface Snapped { ref: ResourceRef; obj: Obj }
type Snapshot = Map<string, Snapped>;

function name(o: KubeObject): string {
  return o.metadata?.name ?? '';
}

function groupOf(apiVersion: string | undefined): string {
  const v = apiVersion ?? '';
  return v.includes('/') ? v.slice(0, v.lastIndexOf('/')) : '';
}

function controllerOf(o: Obj): { kind: string; name: string } | undefined {
  const refs = (o.metadata.ownerReferences ?? []) as { kind: string; name: string; controller?: boolean }[];
  return refs.find((r) => r.controller === true);
}

const TOKEN_NAME = /^(.+)-token-[a-z0-9]{5}$/;

/**
 * What identifies an object across the round trip. Names a controller generates (a ReplicaSet's
 * Pods, a Service's EndpointSlices, the token controller's Secrets) differ after a restore by
 * design, so those objects are identified by their owner and name prefix instead.
 */
function identity(group: string, o: Obj): string {
  const ns = o.metadata.namespace ?? '';
  const kind = `${group === '' ? '' : `${group}/`}${o.kind ?? ''}`;
  const gen = o.metadata.generateName as string | undefined;
  const owner = controllerOf(o);
  // A StatefulSet's Pods carry a generateName too, but their names are stable (postgres-0).
  if (gen !== undefined && o.metadata.name.startsWith(gen) && owner !== undefined && owner.kind !== 'StatefulSet') return `${kind} ${ns}/${gen}* of ${owner.kind} ${owner.name}`;
  const sa = o.metadata.annotations?.['kubernetes.io/service-account.name'];
  const m = TOKEN_NAME.exec(o.metadata.name);
  if (o.kind === 'Secret' && o.type === 'kubernetes.io/service-account-token' && m !== null && m[1] === sa) return `${kind} ${ns}/${sa}-token-* of ServiceAccount ${sa}`;
  return `${kind} ${ns === '' ? '' : `${ns}/`}${o.metadata.name}`;
}

/** True when the identity stands for a generated name (so `metadata.name` may differ). */
const isGeneratedIdentity = (key: string): boolean => key.includes('* of ');

// ---------------------------------------------------------------------------------------------
// Allowed differences. Each one is something a restore cannot or must not reproduce; anything
// else that differs, and any object missing after the restore, fails the test.
// ---------------------------------------------------------------------------------------------
interface Allowed {
  /** Kind (or `group/Kind`) the entry applies to; '*' for every kind. */
  kind: string;
  path: RegExp;
  when?: (d: FieldDiff, key: string, before: Obj, after: Obj) => boolean;
  reason: string;
}

const absentBefore = (d: FieldDiff): boolean => d.before === undefined;
const bothTokenNames = (d: FieldDiff): boolean => typeof d.before === 'string' && typeof d.after === 'string' && TOKEN_NAME.test(d.before) && TOKEN_NAME.test(d.after);
const isTokenSecret = (_d: FieldDiff, _k: string, b: Obj): boolean => b.type === 'kubernetes.io/service-account-token';

const ALLOWED_DIFFERENCES: readonly Allowed[] = [
  { kind: '*', path: /^metadata\.labels\["stowage\.dev\/(backup|restore)-name"\]$/, when: absentBefore,
    reason: 'the restore labels what it creates with the backup and restore names (Velero: velero.io/backup-name, restore-name)' },
  { kind: '*', path: /^metadata\.name$/, when: (_d, key) => isGeneratedIdentity(key),
    reason: 'a name its controller generates (Pods of a ReplicaSet or Job, EndpointSlices of a Service, token Secrets of a ServiceAccount): the controller makes the object anew under a new random name' },
  { kind: '*', path: /^metadata\.ownerReferences\[\d+\]\.uid$/,
    reason: 'an owner reference points at the owner\'s uid, and the restored owner is a new object with a new uid' },
  { kind: 'Service', path: /^spec\.clusterIPs?(\[\d+\])?$/, when: (d) => d.before !== 'None',
    reason: 'the cluster IP is assigned by the apiserver; the restore clears it so the new Service gets a free one' },
  { kind: 'Service', path: /^spec\.ports\[\d+\]\.nodePort$/, when: (_d, _k, b) => (b.spec as { type?: string }).type === 'NodePort',
    reason: 'node ports are allocated by the apiserver; without preserveNodePorts the restore lets it allocate new ones (Velero\'s default)' },
  { kind: 'ServiceAccount', path: /^secrets\[\d+\]\.name$/, when: bothTokenNames,
    reason: 'the token controller issues a new token Secret (new random name) for the new ServiceAccount' },
  { kind: 'Secret', path: /^data\.token$/, when: isTokenSecret,
    reason: 'a service-account token is signed for the ServiceAccount\'s uid, which is new after the restore; the token controller issues a new one' },
  { kind: 'Secret', path: /^metadata\.annotations\["kubernetes\.io\/service-account\.uid"\]$/, when: isTokenSecret,
    reason: 'names the ServiceAccount\'s uid, which is new after the restore' },
  // The apiserver writes the label under both names since 1.27.
  { kind: 'batch/Job', path: /^spec\.(selector\.matchLabels|template\.metadata\.labels)\["(batch\.kubernetes\.io\/)?controller-uid"\]$/,
    reason: 'generated by the apiserver from the Job\'s uid, which is new after the restore' },
  { kind: 'Pod', path: /^metadata\.labels\["(batch\.kubernetes\.io\/)?controller-uid"\]$/, when: (_d, _k, b) => controllerOf(b)?.kind === 'Job',
    reason: 'a Job\'s Pods carry the Job\'s generated selector label (its new uid)' },
  { kind: '*', path: /^metadata\.annotations\["endpoints\.kubernetes\.io\/last-change-trigger-time"\]$/,
    reason: 'when the endpoints controller last saw a change of the Service\'s pods: a timestamp of the controller\'s, not state' },
  { kind: 'autoscaling/HorizontalPodAutoscaler', path: /^metadata\.annotations\["autoscaling\.alpha\.kubernetes\.io\/(conditions|current-metrics)"\]$/,
    reason: 'at autoscaling/v1 these annotations carry the HPA controller\'s status (conditions with timestamps, current metrics)' },
  { kind: 'PersistentVolumeClaim', path: /^metadata\.annotations\["pv\.kubernetes\.io\/(bind-completed|bound-by-controller)"\]$/, when: (d) => d.after === undefined,
    reason: 'set by the PV binder; the restore drops them so the binder (not running in this control plane) binds the claim again' },
  { kind: 'PersistentVolume', path: /^spec\.claimRef\.(uid|resourceVersion)$/, when: (d) => d.after === undefined,
    reason: 'point at the claim object, which is new after the restore; the restore clears them so the binder binds the new claim' },
];

function allowedFor(d: FieldDiff, key: string, group: string, before: Obj, after: Obj): Allowed | undefined {
  const kinds = new Set(['*', before.kind ?? '', `${group}/${before.kind ?? ''}`]);
  return ALLOWED_DIFFERENCES.find((a) => kinds.has(a.kind) && a.path.test(d.path) && (a.when === undefined || a.when(d, key, before, after)));
}

// ---------------------------------------------------------------------------------------------

async function settle<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>): Promise<T | string> {
  try {
    return await waitUntil(what, check, timeoutMs, 500);
  } catch (err) {
    return (err as Error).message;
  }
}

async function apply(client: DynamicClient, served: readonly ServedResource[], o: KubeObject): Promise<void> {
  const ref = resourceAt(served, o.apiVersion ?? '', o.kind ?? '');
  if (ref === undefined) throw new Error(`the server does not serve ${o.kind} at ${o.apiVersion} (corpus object ${name(o)})`);
  await client.patch(ref, o.metadata?.namespace, name(o), o, 'apply', { fieldManager: FIELD_MANAGER, force: true });
}

/** Waits until the controllers have made what they make for the corpus; returns what never settled. */
async function waitSettled(client: DynamicClient, timeoutMs: number): Promise<string[]> {
  const unsettled: string[] = [];
  const r = (group: string, version: string, resource: string): ResourceRef => ({ group, version, resource, namespaced: true });
  const checks: { what: string; ok: () => Promise<boolean> }[] = [];
  for (const ns of NAMESPACES) {
    checks.push({ what: `${ns}: Deployments have all their Pods`, ok: async () => {
      const { items } = await client.listAll<Obj & { spec: { replicas: number }; status?: { replicas?: number; observedGeneration?: number } }>(r('apps', 'v1', 'deployments'), { namespace: ns });
      return items.every((d) => d.status?.observedGeneration === d.metadata.generation && d.status?.replicas === d.spec.replicas);
    } });
    checks.push({ what: `${ns}: StatefulSets have all their Pods`, ok: async () => {
      const { items } = await client.listAll<Obj & { spec: { replicas: number }; status?: { replicas?: number; observedGeneration?: number } }>(r('apps', 'v1', 'statefulsets'), { namespace: ns });
      return items.every((s) => s.status?.observedGeneration === s.metadata.generation && s.status?.replicas === s.spec.replicas);
    } });
    // Since 1.24 a ServiceAccount gets no token Secret of its own; a hand-made one is still filled in.
    checks.push({ what: `${ns}: every token Secret has its token`, ok: async () => {
      const secrets = await client.listAll<Obj & { type?: string; data?: Record<string, string> }>(r('', 'v1', 'secrets'), { namespace: ns });
      return secrets.items.filter((s) => s.type === 'kubernetes.io/service-account-token').every((s) => s.data?.token !== undefined);
    } });
    checks.push({ what: `${ns}: every Service with a selector has its Endpoints and EndpointSlices`, ok: async () => {
      const svcs = await client.listAll<Obj & { spec: { selector?: Record<string, string> } }>(r('', 'v1', 'services'), { namespace: ns });
      const eps = await client.listAll<Obj>(r('', 'v1', 'endpoints'), { namespace: ns });
      const slices = await client.listAll<Obj>(r('discovery.k8s.io', 'v1', 'endpointslices'), { namespace: ns });
      return svcs.items.filter((s) => s.spec.selector !== undefined).every((s) =>
        eps.items.some((e) => e.metadata.name === s.metadata.name) && slices.items.some((e) => e.metadata.labels?.['kubernetes.io/service-name'] === s.metadata.name));
    } });
    checks.push({ what: `${ns}: Jobs have their Pods`, ok: async () => {
      const jobs = await client.listAll<Obj & { status?: { active?: number } }>(r('batch', 'v1', 'jobs'), { namespace: ns });
      return jobs.items.every((j) => (j.status?.active ?? 0) > 0);
    } });
    checks.push({ what: `${ns}: kube-root-ca.crt is published`, ok: async () => client.get(r('', 'v1', 'configmaps'), ns, 'kube-root-ca.crt').then(() => true) });
  }
  const deadline = Date.now() + timeoutMs;
  for (const c of checks) {
    const res = await settle(c.what, Math.max(1000, deadline - Date.now()), async () => ((await c.ok()) ? true : undefined));
    if (res !== true) unsettled.push(c.what);
  }
  return unsettled;
}

/** Every object of the corpus namespaces and every cluster-scoped corpus object, read live. */
async function snapshot(client: DynamicClient, served: readonly ServedResource[]): Promise<Snapshot> {
  const found: { group: string; ref: ResourceRef; obj: Obj }[] = [];
  const listable = served.filter((s) => s.verbs.includes('list') && !NOT_STATE.has(s.group === '' ? s.resource : `${s.resource}.${s.group}`));
  // Namespaced resources are listed per corpus namespace: other test files share the cluster and
  // may hold thousands of objects elsewhere.
  const lists = listable.flatMap((s): { s: ServedResource; namespace: string | undefined }[] => (s.namespaced ? NAMESPACES.map((namespace) => ({ s, namespace })) : [{ s, namespace: undefined }]));
  await Promise.all(lists.map(async ({ s, namespace }) => {
    const { items } = await client.listAll<Obj>(s, { namespace });
    for (const obj of items) {
      const inScope = s.namespaced ? NAMESPACES.includes(obj.metadata.namespace ?? '') : obj.metadata.name.startsWith(corpus.prefix) || obj.metadata.name.endsWith(`.${corpus.group}`);
      if (!inScope) continue;
      obj.apiVersion = s.group === '' ? s.version : `${s.group}/${s.version}`;
      obj.kind = s.kind;
      if (controllerOutput(obj)) continue;
      found.push({ group: s.group, ref: s, obj });
    }
  }));
  // A corpus object is compared at the version it was written in (an HPA at autoscaling/v2 keeps
  // metrics that autoscaling/v1 only shows as annotations).
  for (const f of found) {
    const mine = corpus.objects.find((o) => o.kind === f.obj.kind && groupOf(o.apiVersion) === f.group && name(o) === f.obj.metadata.name && (o.metadata?.namespace ?? '') === (f.obj.metadata.namespace ?? ''));
    if (mine === undefined || mine.apiVersion === f.obj.apiVersion) continue;
    const ref = resourceAt(served, mine.apiVersion ?? '', mine.kind ?? '');
    if (ref === undefined) continue;
    f.ref = ref;
    f.obj = await client.get<Obj>(ref, f.obj.metadata.namespace, f.obj.metadata.name);
  }
  const byIdentity = new Map<string, { group: string; ref: ResourceRef; obj: Obj }[]>();
  for (const f of found) {
    const id = identity(f.group, f.obj);
    byIdentity.set(id, [...(byIdentity.get(id) ?? []), f]);
  }
  const out: Snapshot = new Map();
  for (const [id, list] of byIdentity) {
    if (list.length === 1 || !isGeneratedIdentity(id)) {
      for (const f of list) out.set(id, f);
      continue;
    }
    // Siblings of one owner are paired by content, not by their random names (a Service's IPv4 and
    // IPv6 EndpointSlices, say).
    const content = (o: Obj): string => JSON.stringify(normalise({ ...o, metadata: { ...o.metadata, name: '' } }));
    list.sort((a, b) => content(a.obj).localeCompare(content(b.obj))).forEach((f, i) => out.set(`${id} #${i + 1}`, f));
  }
  return out;
}

interface Finding { object: string; path: string; before: string; after: string }

function compare(before: Snapshot, after: Snapshot): { findings: Finding[]; allowed: Map<string, number> } {
  const findings: Finding[] = [];
  const allowed = new Map<string, number>();
  for (const [key, b] of before) {
    const a = after.get(key);
    if (a === undefined) {
      findings.push({ object: key, path: '(object)', before: 'present', after: 'missing' });
      continue;
    }
    const group = groupOf(b.obj.apiVersion);
    const secret = b.obj.kind === 'Secret';
    for (const d of diffObjects(b.obj, a.obj)) {
      const ok = allowedFor(d, key, group, b.obj, a.obj);
      if (ok !== undefined) {
        allowed.set(ok.reason, (allowed.get(ok.reason) ?? 0) + 1);
        continue;
      }
      const hide = secret && /^(data|stringData)[.[]/.test(d.path);
      findings.push({ object: key, path: d.path, before: shown(d.before, hide), after: shown(d.after, hide) });
    }
  }
  for (const key of after.keys()) if (!before.has(key)) findings.push({ object: key, path: '(object)', before: 'absent', after: 'present' });
  return { findings, allowed };
}

function kindsOf(objects: readonly KubeObject[]): string[] {
  return [...new Set(objects.map((o) => `${o.kind} (${o.apiVersion})`))].sort();
}

async function readResults(bucket: string, prefix: string, key: string): Promise<string> {
  const s3 = testS3();
  try {
    const out = await s3.client.send(new GetObjectCommand({ Bucket: bucket, Key: `${prefix}/${key}` }));
    const bytes = Buffer.from(await out.Body!.transformToByteArray());
    return zlib.gunzipSync(bytes).toString();
  } catch (err) {
    return `(could not read ${key}: ${String(err)})`;
  } finally {
    s3.close();
  }
}

describe('real-world corpus: backup, delete, restore', () => {
  const kc = inject('cluster').kubeconfigPath;
  const client = testClient(kc);
  const stowageNs = uniqueName('stowage-corpus');
  const bucket = uniqueName('corpus');
  let server: RunningServer | undefined;

  const deleteCorpus = async (served: readonly ServedResource[]): Promise<void> => {
    const ns: ResourceRef = { group: '', version: 'v1', resource: 'namespaces', namespaced: false };
    await Promise.all(NAMESPACES.map((n) => client.delete(ns, undefined, n).catch((e: unknown) => { if (!isNotFound(e)) throw e; })));
    await waitUntil('corpus namespaces gone', async () => {
      const left = await Promise.all(NAMESPACES.map((n) => client.get(ns, undefined, n).then(() => n, (e: unknown) => (isNotFound(e) ? undefined : n))));
      return left.every((l) => l === undefined) ? true : undefined;
    }, 120_000, 500);
    for (const o of CLUSTER_SCOPED) {
      const ref = resourceAt(served, o.apiVersion ?? '', o.kind ?? '');
      if (ref === undefined) continue;
      // The binder would mark a PV whose claim is gone Released; pv-protection then lets it go.
      if (o.kind === 'PersistentVolume') await client.patchStatus(ref, undefined, name(o), { status: { phase: 'Released' } }).catch(() => undefined);
      await client.delete(ref, undefined, name(o)).catch((e: unknown) => { if (!isNotFound(e)) throw e; });
    }
    await waitUntil('cluster-scoped corpus objects gone', async () => {
      for (const o of CLUSTER_SCOPED) {
        const ref = resourceAt(served, o.apiVersion ?? '', o.kind ?? '');
        if (ref === undefined) continue;
        if (await client.get(ref, undefined, name(o)).then(() => true, (e: unknown) => !isNotFound(e))) return undefined;
      }
      return true;
    }, 120_000, 500);
  };

  let servedForCleanup: ServedResource[] = [];
  afterAll(async () => {
    await server?.stop();
    if (servedForCleanup.length > 0) await deleteCorpus(servedForCleanup).catch(() => undefined);
  });

  it('brings every object back as it was, except for the documented differences', async () => {
    const t0 = Date.now();
    const times: string[] = [];
    const mark = (what: string, since: number): void => { times.push(`${what} ${((Date.now() - since) / 1000).toFixed(1)}s`); };

    // --- the corpus itself: a few hundred KB of schema is part of what it must exercise
    const bigCrd = corpus.objects.find((o) => o.kind === 'CustomResourceDefinition' && name(o).startsWith('databases.'));
    expect(JSON.stringify(bigCrd).length).toBeGreaterThan(300_000);

    // --- apply: namespaces and CRDs first, then (once the CRDs are served) everything else
    let served = await servedResources(client);
    servedForCleanup = served;
    const first = corpus.objects.filter((o) => o.kind === 'Namespace' || o.kind === 'CustomResourceDefinition');
    await Promise.all(first.map((o) => apply(client, served, o)));
    const crds = first.filter((o) => o.kind === 'CustomResourceDefinition');
    const CRD: ResourceRef = { group: 'apiextensions.k8s.io', version: 'v1', resource: 'customresourcedefinitions', namespaced: false };
    await waitUntil('corpus CRDs established', async () => {
      for (const c of crds) {
        const live = await client.get<{ status?: { conditions?: { type: string; status: string }[] } }>(CRD, undefined, name(c));
        if (!(live.status?.conditions ?? []).some((x) => x.type === 'Established' && x.status === 'True')) return undefined;
      }
      return true;
    }, 60_000, 200);
    served = await waitUntil('corpus kinds in discovery', async () => {
      const s = await servedResources(client);
      return corpus.objects.every((o) => resourceAt(s, o.apiVersion ?? '', o.kind ?? '') !== undefined) ? s : undefined;
    }, 30_000, 500);
    servedForCleanup = served;
    const rest = corpus.objects.filter((o) => !first.includes(o));
    for (const kind of [...new Set(rest.map((o) => o.kind))]) {
      await Promise.all(rest.filter((o) => o.kind === kind).map((o) => apply(client, served, o)));
    }
    // What the PV binder would do for the pre-bound pairs (see the header).
    const PV: ResourceRef = { group: '', version: 'v1', resource: 'persistentvolumes', namespaced: false };
    const PVC: ResourceRef = { group: '', version: 'v1', resource: 'persistentvolumeclaims', namespaced: true };
    for (const pv of corpus.objects.filter((o) => o.kind === 'PersistentVolume')) {
      const claimRef = (pv.spec as { claimRef: { namespace: string; name: string } }).claimRef;
      const claim = await client.get<Obj & { spec: { accessModes: string[] }; status?: { phase?: string } }>(PVC, claimRef.namespace, claimRef.name);
      const unbound = await client.get<Obj & { status?: { phase?: string } }>(PV, undefined, name(pv));
      // Without the binder both stay Pending for ever; if this fails, a binder runs and these steps must go.
      expect([unbound.status?.phase, claim.status?.phase], `PV ${name(pv)} and its claim before the test binds them`).toEqual(['Pending', 'Pending']);
      const livePv = await client.patch<Obj & { spec: { capacity: Record<string, string> } }>(PV, undefined, name(pv), { spec: { claimRef: { uid: claim.metadata.uid } } }, 'merge', { fieldManager: 'persistentvolume-binder' });
      await client.patchStatus(PV, undefined, name(pv), { status: { phase: 'Bound' } });
      await client.patchStatus(PVC, claimRef.namespace, claimRef.name, { status: { phase: 'Bound', accessModes: claim.spec.accessModes, capacity: livePv.spec.capacity } });
    }
    const unsettledBefore = await waitSettled(client, 60_000);
    expect(unsettledBefore, 'the corpus never settled after it was applied').toEqual([]);
    mark('apply+settle', t0);

    const before = await snapshot(client, served);
    const beforeObjects = [...before.values()].map((s) => s.obj);
    const missingFromSnapshot = corpus.objects.filter((o) => ![...before.values()].some((s) => s.obj.kind === o.kind && s.obj.metadata.name === name(o)));
    expect(missingFromSnapshot.map((o) => `${o.kind} ${name(o)}`), 'corpus objects the snapshot did not find').toEqual([]);

    // --- back up the corpus namespaces through stowage server and the real S3 server
    const s3 = inject('s3');
    const direct = testS3();
    await direct.createBucket(bucket);
    direct.close();
    await ensureNamespace(client, stowageNs);
    await createS3CredentialsSecret(client, stowageNs, 'cloud-credentials', s3);
    server = await startServer({ kubeconfigPath: kc, namespace: stowageNs, location: { name: 'default', spec: s3LocationSpec(s3, { bucket, prefix: 'corpus', secret: 'cloud-credentials', signing: SIGNED }) } });
    let t = Date.now();
    await client.create(RESOURCES.Backup, stowageNs, newBackup('corpus', stowageNs, { includedNamespaces: NAMESPACES }));
    const backup = await waitFinished<Backup>(client, RESOURCES.Backup, stowageNs, 'corpus', 120_000);
    mark('backup', t);

    // --- delete everything the corpus made, namespaced and cluster-scoped
    t = Date.now();
    await deleteCorpus(served);
    mark('delete', t);

    // --- restore, let the controllers rebuild, read everything again
    t = Date.now();
    await client.create(RESOURCES.Restore, stowageNs, newRestore('corpus', stowageNs, { backupName: 'corpus' }));
    const restore = await waitFinished<Restore>(client, RESOURCES.Restore, stowageNs, 'corpus', 120_000);
    mark('restore', t);
    t = Date.now();
    const unsettledAfter = await waitSettled(client, 30_000);
    const after = await snapshot(client, await servedResources(client));
    mark('settle+snapshot', t);

    const { findings, allowed } = compare(before, after);
    const problems = [
      ...(backup.status?.phase === 'Completed' ? [] : [`backup ended ${backup.status?.phase}: ${backup.status?.failureReason ?? ''} (${backup.status?.errors ?? 0} errors)`]),
      ...(restore.status?.phase === 'Completed' ? [] : [`restore ended ${restore.status?.phase}: ${restore.status?.failureReason ?? ''} (${restore.status?.errors ?? 0} errors)`]),
      ...unsettledAfter.map((u) => `after the restore, never settled: ${u}`),
      ...findings.map((f) => `${f.object}  ${f.path}: ${f.before} -> ${f.after}`),
    ];
    const report = [
      `corpus: ${corpus.files.length} files, ${corpus.objects.length} objects, ${kindsOf(corpus.objects).length} kinds; snapshot: ${before.size} objects (${kindsOf(beforeObjects).length} kinds, controller-made ones included)`,
      `backup ${backup.status?.phase} items ${backup.status?.progress?.itemsBackedUp}/${backup.status?.progress?.totalItems} warnings ${backup.status?.warnings ?? 0} errors ${backup.status?.errors ?? 0}`,
      `restore ${restore.status?.phase} ${JSON.stringify(restore.status?.summary)} warnings ${restore.status?.warnings ?? 0} errors ${restore.status?.errors ?? 0}`,
      `times: ${times.join(', ')}, total ${((Date.now() - t0) / 1000).toFixed(1)}s`,
      'allowed differences seen:', ...[...allowed].map(([reason, n]) => `  ${n} x ${reason}`),
      `differences (${problems.length}):`, ...problems.map((p) => `  ${p}`),
    ].join('\n');
    process.stderr.write(`\n[corpus] ${report}\n`);
    if (problems.length > 0) {
      const results = await readResults(bucket, 'corpus', 'restores/corpus/restore-corpus-results.gz');
      process.stderr.write(`[corpus] restore results: ${results.slice(0, 6000)}\n`);
    }
    expect(problems, report).toEqual([]);
  }, 300_000);
});

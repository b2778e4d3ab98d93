// The floors: the least work any backup or restore tool must do on the same cluster, measured in
// the same run. Backup floor: discover, list the same scope with the same page size, list
// concurrency and client limits, write the same tarball bytes (same writer, both copies of each
// item) and upload them to the same bucket with @aws-sdk/lib-storage. Restore floor: download and
// parse that tarball, then create its objects (in fresh namespaces) with the concurrency and QPS
// limits Stowage uses.
import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import * as tar from 'tar-stream';
import { createTarballWriter, parseItemPath } from '../src/archive/index.js';
import { selectResources } from '../src/backup/resources.js';
import { CORE, CUSTOM_RESOURCE_DEFINITIONS, isNotFound, type ApiResource, type DynamicClient, type KubeObject, type ResourceRef } from '../src/kube/index.js';
import { mapLimit } from '../src/util/concurrency.js';
import { resourceFilter } from '../src/selection/filters.js';
import { BENCH_CRD_NAME, createObject } from './seed.js';

/** The multipart settings of the stowage.dev/aws plugin (src/plugin/builtin/aws.ts). */
const PART_SIZE = 8 * 1024 * 1024;
const QUEUE_SIZE = 4;

export interface BackupFloorResult {
  seconds: number;
  items: number;
  listRequests: number;
  tarballBytes: number;
  /** CPU of the benchmark process while it ran the floor. */
  cpuSeconds: number;
}

export interface BackupFloorOptions {
  client: DynamicClient;
  s3: S3Client;
  bucket: string;
  key: string;
  namespaces: readonly string[];
  pageSize: number;
  /** LISTs in flight at once (Stowage's backup default). */
  listConcurrency: number;
}

function cpuSecondsSince(start: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1e6;
}

export async function backupFloor(o: BackupFloorOptions): Promise<BackupFloorResult> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const discovered = await o.client.discover();
  const byGr = new Map(discovered.map((r) => [r.groupResource, r]));
  const selection = selectResources(discovered, resourceFilter([], []), false);
  const writer = createTarballWriter({ mtime: new Date() });
  const upload = new Upload({
    client: o.s3,
    params: { Bucket: o.bucket, Key: o.key, Body: Readable.from(writer.body, { objectMode: false }) },
    partSize: PART_SIZE,
    queueSize: QUEUE_SIZE,
    leavePartsOnError: false,
  }).done();
  // An upload failure must not leave the writer waiting for a reader forever.
  upload.catch((err: unknown) => writer.abort(err instanceof Error ? err : new Error(String(err))));
  let items = 0;
  let listRequests = 0;
  const add = async (res: ApiResource, obj: KubeObject): Promise<void> => {
    const name = obj.metadata?.name ?? '';
    const namespace = res.namespaced ? (obj.metadata?.namespace ?? '') : '';
    await writer.addItem({ groupResource: res.groupResource, namespace, name }, { ...obj, apiVersion: obj.apiVersion ?? res.apiVersion, kind: obj.kind ?? res.kind }, { preferred: true });
    items++;
  };
  const units = selection.namespaced.flatMap((res) => o.namespaces.map((namespace) => ({ res, namespace })));
  await mapLimit(units, o.listConcurrency, async ({ res, namespace }) => {
    try {
      for await (const page of o.client.listPages(res, { namespace, pageSize: o.pageSize })) {
        listRequests++;
        for (const obj of page.items) await add(res, obj);
      }
    } catch (err) {
      // A resource removed since discovery (another test's CRD, when the smoke run shares the
      // suite's cluster) has nothing left to list, as the product's backup finds too.
      if (!isNotFound(err)) throw err;
    }
  });
  // The Namespace objects and the custom resources' CRD, which a restore needs too.
  const nsRes = byGr.get('namespaces');
  const crdRes = byGr.get('customresourcedefinitions.apiextensions.k8s.io');
  if (nsRes === undefined || crdRes === undefined) throw new Error('discovery found no namespaces or customresourcedefinitions');
  for (const ns of o.namespaces) await add(nsRes, await o.client.get(CORE.namespaces, undefined, ns));
  await add(crdRes, await o.client.get(CUSTOM_RESOURCE_DEFINITIONS, undefined, BENCH_CRD_NAME));
  const digest = await writer.finish();
  await upload;
  return { seconds: (performance.now() - t0) / 1000, items, listRequests, tarballBytes: digest.tarball.bytes, cpuSeconds: cpuSecondsSince(cpu0) };
}

export interface RestoreFloorResult {
  seconds: number;
  /** Of which: downloading and parsing the tarball. */
  readSeconds: number;
  /** Items in the tarball. */
  items: number;
  created: number;
  /** Already there (the namespace's default ServiceAccount, the CRD, ...). */
  existed: number;
  /** Token secrets the token controller generated: a restore must leave them to it. */
  skipped: number;
  cpuSeconds: number;
}

export interface RestoreFloorOptions {
  client: DynamicClient;
  s3: S3Client;
  bucket: string;
  key: string;
  concurrency: number;
  /** Where each backed-up namespace is restored to. */
  mapNamespace: (namespace: string) => string;
}

interface FloorItem {
  ref: ResourceRef;
  namespace: string | undefined;
  object: KubeObject;
}

const STRIPPED = ['uid', 'resourceVersion', 'creationTimestamp', 'generation', 'selfLink', 'managedFields', 'ownerReferences'];
const TOKEN_TYPE = 'kubernetes.io/service-account-token';

/** A token secret `<sa>-token-xxxxx` generated by the token controller for its service account. */
function isGeneratedToken(o: KubeObject): boolean {
  if (o.type !== TOKEN_TYPE) return false;
  const sa = o.metadata?.annotations?.['kubernetes.io/service-account.name'];
  const name = o.metadata?.name ?? '';
  return sa !== undefined && name.startsWith(`${sa}-token-`) && /^[a-z0-9]{5}$/.test(name.slice(sa.length + 7));
}

export interface TarballItem {
  groupResource: string;
  namespace: string | undefined;
  object: KubeObject;
}

/** Calls `fn` with the classic copy of every item of a gzipped tarball (the preferred-version copies hold the same bytes). */
export async function forEachItem(body: AsyncIterable<Uint8Array>, fn: (item: TarballItem) => void): Promise<void> {
  const extract = tar.extract();
  const source = Readable.from(body, { objectMode: false });
  const gunzip = createGunzip();
  source.on('error', (err) => gunzip.destroy(err));
  gunzip.on('error', (err) => extract.destroy(err));
  source.pipe(gunzip).pipe(extract);
  for await (const entry of extract) {
    const parsed = parseItemPath(entry.header.name);
    const chunks: Buffer[] = [];
    for await (const c of entry as AsyncIterable<Buffer>) chunks.push(c);
    if (parsed === null || typeof parsed === 'string' || parsed.versionDir !== undefined) continue;
    fn({ groupResource: parsed.groupResource, namespace: parsed.namespace, object: JSON.parse(Buffer.concat(chunks).toString('utf8')) as KubeObject });
  }
}

function refOf(gr: string, object: KubeObject, namespaced: boolean): ResourceRef {
  const dot = gr.indexOf('.');
  const apiVersion = object.apiVersion ?? 'v1';
  const slash = apiVersion.indexOf('/');
  return {
    group: dot < 0 ? '' : gr.slice(dot + 1),
    version: slash < 0 ? apiVersion : apiVersion.slice(slash + 1),
    resource: dot < 0 ? gr : gr.slice(0, dot),
    namespaced,
  };
}

export async function restoreFloor(o: RestoreFloorOptions): Promise<RestoreFloorResult> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const res = await o.s3.send(new GetObjectCommand({ Bucket: o.bucket, Key: o.key }));
  const body = res.Body;
  if (body === undefined || !(Symbol.asyncIterator in body)) throw new Error(`GetObject ${o.key}: no body`);
  const archived: TarballItem[] = [];
  await forEachItem(body as AsyncIterable<Uint8Array>, (it) => archived.push(it));
  const readSeconds = (performance.now() - t0) / 1000;
  const tiers: FloorItem[][] = [[], [], []];
  let skipped = 0;
  for (const a of archived) {
    if (isGeneratedToken(a.object)) {
      skipped++;
      continue;
    }
    const object: KubeObject = { ...a.object, metadata: { ...a.object.metadata } };
    for (const k of STRIPPED) delete object.metadata?.[k];
    delete object.status;
    if (a.groupResource === 'serviceaccounts') delete object.secrets; // they named the generated tokens
    const namespace = a.namespace === undefined ? undefined : o.mapNamespace(a.namespace);
    if (object.metadata !== undefined) {
      if (namespace !== undefined) object.metadata.namespace = namespace;
      if (a.groupResource === 'namespaces') object.metadata.name = o.mapNamespace(object.metadata.name ?? '');
    }
    const item = { ref: refOf(a.groupResource, object, a.namespace !== undefined), namespace, object };
    // Namespaces first, then the CRD, then everything else at once.
    const tier = a.groupResource === 'namespaces' ? tiers[0] : a.groupResource === 'customresourcedefinitions.apiextensions.k8s.io' ? tiers[1] : tiers[2];
    tier?.push(item);
  }
  let created = 0;
  let existed = 0;
  for (const tier of tiers) {
    await mapLimit(tier, o.concurrency, async (it) => {
      if ((await createObject(o.client, it.ref, it.namespace, it.object)) === 'created') created++;
      else existed++;
    });
  }
  return { seconds: (performance.now() - t0) / 1000, readSeconds, items: archived.length, created, existed, skipped, cpuSeconds: cpuSecondsSince(cpu0) };
}

// Seeding: N objects over M namespaces, a realistic mix of ConfigMaps, Secrets, ServiceAccounts and
// custom resources, 1–4 KiB each, created by a fast parallel client. Contents are generated from a
// fixed seed so every run backs up the same bytes.
import { CORE, CUSTOM_RESOURCE_DEFINITIONS, isAlreadyExists, isNotFound, isTransient, type DynamicClient, type ResourceRef } from '../src/kube/index.js';
import { mapLimit } from '../src/util/concurrency.js';

export const SEED_LABEL = 'bench.stowage.dev/seed';
export const RUN_LABEL = 'bench.stowage.dev/run';

export const BENCH_CRD_GROUP = 'bench.stowage.dev';
export const BENCH_ITEMS: ResourceRef = { group: BENCH_CRD_GROUP, version: 'v1', resource: 'benchitems', namespaced: true };
export const BENCH_CRD_NAME = `benchitems.${BENCH_CRD_GROUP}`;

export type SeedKind = 'configmaps' | 'secrets' | 'serviceaccounts' | 'benchitems';

export const SEED_RESOURCES: Record<SeedKind, ResourceRef> = {
  configmaps: CORE.configMaps,
  secrets: CORE.secrets,
  serviceaccounts: CORE.serviceAccounts,
  benchitems: BENCH_ITEMS,
};

// Out of every 20 objects: 8 ConfigMaps, 6 Secrets, 1 ServiceAccount, 5 custom resources.
const PATTERN: readonly SeedKind[] = [
  'configmaps', 'secrets', 'benchitems', 'configmaps', 'secrets', 'configmaps', 'benchitems', 'secrets', 'configmaps', 'serviceaccounts',
  'configmaps', 'secrets', 'benchitems', 'configmaps', 'secrets', 'configmaps', 'benchitems', 'secrets', 'configmaps', 'benchitems',
];

export interface SeedPlan {
  /** Namespace names, in order. */
  namespaces: string[];
  objects: number;
  byKind: Record<SeedKind, number>;
}

export function seedPlan(prefix: string, objects: number, namespaces: number): SeedPlan {
  const byKind: Record<SeedKind, number> = { configmaps: 0, secrets: 0, serviceaccounts: 0, benchitems: 0 };
  for (let i = 0; i < objects; i++) byKind[kindOf(i)]++;
  return { namespaces: Array.from({ length: namespaces }, (_, j) => `${prefix}-${j}`), objects, byKind };
}

function kindOf(i: number): SeedKind {
  return PATTERN[i % PATTERN.length] ?? 'configmaps';
}

/** mulberry32: a small fast PRNG; seeded per object so any object can be built alone. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = [
  'server', 'port', 'timeout', 'retries', 'enabled', 'cache', 'size', 'region', 'replica', 'endpoint', 'pool', 'max', 'min',
  'threads', 'level', 'debug', 'info', 'path', 'queue', 'batch', 'interval', 'limit', 'feature', 'flag', 'tenant', 'zone',
];

/** Config-file-like text (compresses like real configuration does) of about `bytes` characters. */
function configText(rand: () => number, bytes: number): string {
  const lines: string[] = [];
  let size = 0;
  while (size < bytes) {
    const w = (): string => WORDS[Math.floor(rand() * WORDS.length)] ?? 'x';
    const line = `${w()}.${w()}.${w()}=${Math.floor(rand() * 100000)}-${rand().toString(36).slice(2, 8)}`;
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join('\n');
}

/** Random bytes, as Secret data holds (keys, tokens, certificates), base64-encoded to about `bytes` characters. */
function randomBase64(rand: () => number, bytes: number): string {
  const raw = Buffer.alloc(Math.floor((bytes * 3) / 4));
  for (let i = 0; i < raw.length; i++) raw[i] = Math.floor(rand() * 256);
  return raw.toString('base64');
}

export interface SeedObject {
  kind: SeedKind;
  namespace: string;
  body: Record<string, unknown>;
}

/** Object i of the plan: its kind, namespace and body (1–4 KiB of payload). */
export function seedObject(plan: SeedPlan, runLabel: string, i: number): SeedObject {
  const rand = prng(i + 1);
  const kind = kindOf(i);
  // Contiguous blocks, so every namespace holds the whole mix of kinds.
  const namespace = plan.namespaces[Math.floor((i * plan.namespaces.length) / plan.objects)] ?? '';
  const payload = 1024 + Math.floor(rand() * 3072);
  const metadata = {
    name: `${kind.slice(0, 2)}-${i}`,
    namespace,
    labels: { [SEED_LABEL]: 'true', [RUN_LABEL]: runLabel, app: `app-${i % 50}`, tier: ['web', 'api', 'db', 'cache'][i % 4] ?? 'web' },
  };
  switch (kind) {
    case 'configmaps':
      return { kind, namespace, body: { apiVersion: 'v1', kind: 'ConfigMap', metadata, data: { 'app.properties': configText(rand, payload - 200), version: String(i) } } };
    case 'secrets':
      return { kind, namespace, body: { apiVersion: 'v1', kind: 'Secret', metadata, type: 'Opaque', data: { 'tls.key': randomBase64(rand, payload - 200), user: Buffer.from(`user-${i}`).toString('base64') } } };
    case 'serviceaccounts':
      return {
        kind, namespace,
        body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { ...metadata, annotations: { 'bench.stowage.dev/notes': configText(rand, payload - 200) } } },
      };
    case 'benchitems':
      return {
        kind, namespace,
        body: {
          apiVersion: `${BENCH_CRD_GROUP}/v1`, kind: 'BenchItem', metadata,
          spec: {
            replicas: 1 + (i % 5),
            image: `registry.example.com/app-${i % 50}:1.${i % 20}.0`,
            settings: configText(rand, (payload - 300) / 2).split('\n').slice(0, 200),
            checksum: randomBase64(rand, (payload - 300) / 2),
          },
        },
      };
  }
}

export const BENCH_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: BENCH_CRD_NAME },
  spec: {
    group: BENCH_CRD_GROUP,
    scope: 'Namespaced',
    names: { plural: 'benchitems', singular: 'benchitem', kind: 'BenchItem', listKind: 'BenchItemList' },
    versions: [{
      name: 'v1', served: true, storage: true,
      schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } } },
    }],
  },
};

/** Creates the benchmark's CRD unless it exists, and waits until it is served. */
export async function ensureBenchCrd(client: DynamicClient): Promise<void> {
  try {
    await client.create(CUSTOM_RESOURCE_DEFINITIONS, undefined, BENCH_CRD);
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const list = await client.request<{ resources?: { name?: string }[] }>({ method: 'GET', path: `/apis/${BENCH_CRD_GROUP}/v1` });
      if ((list.resources ?? []).some((r) => r.name === 'benchitems')) return;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    if (Date.now() > deadline) throw new Error(`${BENCH_CRD_NAME} is not served 60 s after it was created`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Creates with a few retries on transient failures; an object that already exists counts as created. */
export async function createObject(client: DynamicClient, res: ResourceRef, namespace: string | undefined, body: object): Promise<'created' | 'existed'> {
  for (let attempt = 0; ; attempt++) {
    try {
      await client.create(res, namespace, body);
      return 'created';
    } catch (err) {
      if (isAlreadyExists(err)) return 'existed';
      if (!isTransient(err) || attempt >= 4) throw err;
      await new Promise((r) => setTimeout(r, 200 * 2 ** attempt));
    }
  }
}

export interface SeedResult {
  seconds: number;
  objectsPerSecond: number;
}

/** Creates the namespaces and every object of the plan, `concurrency` at a time. */
export async function seed(
  client: DynamicClient,
  plan: SeedPlan,
  runLabel: string,
  opts: { concurrency: number; progress: (line: string) => void },
): Promise<SeedResult> {
  const t0 = performance.now();
  await ensureBenchCrd(client);
  for (const ns of plan.namespaces) {
    await createObject(client, CORE.namespaces, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, labels: { [RUN_LABEL]: runLabel } } });
  }
  let done = 0;
  let lastReport = performance.now();
  await mapLimit(Array.from({ length: plan.objects }, (_, i) => i), opts.concurrency, async (i) => {
    const o = seedObject(plan, runLabel, i);
    await createObject(client, SEED_RESOURCES[o.kind], o.namespace, o.body);
    done++;
    const now = performance.now();
    if (now - lastReport > 5000) {
      lastReport = now;
      opts.progress(`seeded ${done}/${plan.objects} objects (${Math.round(done / ((now - t0) / 1000))}/s)`);
    }
  });
  const seconds = (performance.now() - t0) / 1000;
  return { seconds, objectsPerSecond: plan.objects / seconds };
}

/**
 * Waits until kube-controller-manager has finished its part: the `default` ServiceAccount and the
 * root CA ConfigMap in every namespace (since Kubernetes 1.24 it makes no token Secrets). Both
 * backups then see the same items.
 */
export async function waitSettled(client: DynamicClient, namespaces: readonly string[], timeoutMs: number, progress: (line: string) => void): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastReport = Date.now();
  for (;;) {
    let missing = 0;
    for (const ns of namespaces) {
      for (const [resource, name] of [[CORE.serviceAccounts, 'default'], [CORE.configMaps, 'kube-root-ca.crt']] as const) {
        try {
          await client.get(resource, ns, name);
        } catch (err) {
          if (!isNotFound(err)) throw err;
          missing++;
        }
      }
    }
    if (missing === 0) return;
    if (Date.now() > deadline) throw new Error(`kube-controller-manager has not settled after ${timeoutMs / 1000} s: ${missing} default ServiceAccounts or root CA ConfigMaps missing`);
    if (Date.now() - lastReport > 5000) {
      lastReport = Date.now();
      progress(`waiting for kube-controller-manager: ${missing} default ServiceAccounts / root CA ConfigMaps to go`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Seeded objects present in the namespaces (by the seed label), per kind. */
export async function countSeeded(client: DynamicClient, namespaces: readonly string[]): Promise<Record<SeedKind, number>> {
  const out: Record<SeedKind, number> = { configmaps: 0, secrets: 0, serviceaccounts: 0, benchitems: 0 };
  for (const kind of Object.keys(SEED_RESOURCES) as SeedKind[]) {
    for (const ns of namespaces) {
      for await (const page of client.listPages(SEED_RESOURCES[kind], { namespace: ns, labelSelector: `${SEED_LABEL}=true`, pageSize: 500 })) {
        out[kind] += page.items.length;
      }
    }
  }
  return out;
}

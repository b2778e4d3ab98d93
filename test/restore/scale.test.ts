// Throughput of the restore engine on the local control plane: a 5,000-object backup restored into
// a new namespace, creates running 16 at a time per tier; one at a time for comparison (both
// figures are printed, not compared: the shared machine makes timings noisy); and the client's QPS
// limit bounds the rate.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Backup } from '../../src/apis/v1/index.js';
import { CORE } from '../../src/kube/index.js';
import type { RestoreResult } from '../../src/restore/index.js';
import { mapLimit } from '../../src/util/concurrency.js';
import { uniqueName } from '../support/kube.js';
import { backupNow, createNs, restoreNow, setupEnv, type Env } from './support.js';

const CONFIGMAPS = 4000;
const SECRETS = 1000;

describe('restore throughput', () => {
  let seedEnv: Env;
  let ns = '';
  let backup: Backup;
  const targets: string[] = [];

  beforeAll(async () => {
    seedEnv = await setupEnv('rscale', { qps: 1000, burst: 1000 });
    ns = uniqueName('rscale');
    await createNs(seedEnv.client, ns);
    const body = 'x'.repeat(512);
    const batch = (i: number): Record<string, string> => (i % 10 === 0 ? { batch: 'a' } : {});
    await mapLimit(Array.from({ length: CONFIGMAPS + SECRETS }, (_, i) => i), 32, (i) =>
      i < CONFIGMAPS
        ? seedEnv.client.create(CORE.configMaps, ns, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}`, labels: batch(i) }, data: { i: String(i), body } })
        : seedEnv.client.create(CORE.secrets, ns, { apiVersion: 'v1', kind: 'Secret', metadata: { name: `s-${i}`, labels: batch(i) }, stringData: { i: String(i), body } }));
    backup = await backupNow(seedEnv, uniqueName('scale'), { includedNamespaces: [ns] });
  }, 600_000);

  afterAll(async () => {
    for (const n of [ns, ...targets]) await seedEnv?.client.delete(CORE.namespaces, undefined, n).catch(() => undefined);
    seedEnv?.close();
  });

  const restoreInto = async (clientOpts: { qps: number; burst: number }, concurrency: number, extra: { labelSelector?: { matchLabels: Record<string, string> } } = {}) => {
    const env = await setupEnv('rscale-run', clientOpts);
    const target = uniqueName('rscale-to');
    targets.push(target);
    try {
      // The backup lives in the seeding bucket; only the client (and its limiter) differs.
      const run = await restoreNow({ ...env, store: seedEnv.store }, backup, { includedNamespaces: [ns], namespaceMapping: { [ns]: target }, ...extra }, { concurrency });
      return { result: run.result, target };
    } finally {
      env.close();
    }
  };
  const created = (r: RestoreResult, prefix: string): number => r.outcomes.filter((o) => o.action === 'created' && o.name.startsWith(prefix)).length;
  const report = (what: string, r: RestoreResult): void => {
    process.stderr.write(
      `[restore-scale] ${what}: ${r.progress.itemsRestored} items (${r.summary.created} created) in ${(r.stats.durationMs / 1000).toFixed(2)} s = ` +
        `${r.stats.itemsPerSecond} items/s; concurrency ${r.stats.concurrency}, peak in flight ${r.stats.maxInFlight}, ${r.stats.tiers} tiers\n`,
    );
  };

  it(`restores ${CONFIGMAPS + SECRETS} objects 16 at a time, and one at a time when asked`, async () => {
    const { result } = await restoreInto({ qps: 1000, burst: 2000 }, 16);
    report('parallel, qps 1000', result);
    expect(result.phase).toBe('Completed');
    expect(result.summary.failed).toBe(0);
    expect(created(result, 'cm-')).toBe(CONFIGMAPS);
    expect(created(result, 's-')).toBe(SECRETS);
    expect(result.stats.maxInFlight).toBe(16);

    const serial = (await restoreInto({ qps: 1000, burst: 2000 }, 1, { labelSelector: { matchLabels: { batch: 'a' } } })).result;
    report('serial, qps 1000, the batch=a tenth', serial);
    expect(serial.summary.created).toBe((CONFIGMAPS + SECRETS) / 10 + 1); // + the namespace
    expect(serial.stats.maxInFlight).toBeLessThanOrEqual(2); // an item and its namespace
  }, 600_000);

  it('honours the client QPS limit', async () => {
    const qps = 50;
    const burst = 10;
    const { result } = await restoreInto({ qps, burst }, 16, { labelSelector: { matchLabels: { batch: 'a' } } });
    report(`parallel, qps ${qps} burst ${burst}, the batch=a tenth`, result);
    expect(result.summary.created).toBe((CONFIGMAPS + SECRETS) / 10 + 1);
    // Every create is one request; the creates alone need (n - burst) / qps seconds at least.
    const minSeconds = (result.summary.created - burst) / qps;
    expect(result.stats.durationMs / 1000).toBeGreaterThanOrEqual(minSeconds * 0.95);
  }, 120_000);
});

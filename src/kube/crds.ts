// Installs or updates Stowage's CRDs (server startup, tests, demo) and waits until they serve.
import { KINDS, buildCrd, type KindDef } from '../apis/v1/index.js';
import { sleep } from '../util/backoff.js';
import type { DynamicClient } from './client.js';
import { isAlreadyExists, isConflict } from './errors.js';
import { CUSTOM_RESOURCE_DEFINITIONS } from './wellKnown.js';

type CrdState = { metadata?: { resourceVersion?: string }; status?: { conditions?: { type: string; status: string; message?: string }[] } };

/**
 * Creates each CRD, or replaces it when it exists (safe when several processes do this at once),
 * then waits until every one is Established.
 */
export async function ensureCrds(client: DynamicClient, defs: readonly KindDef[] = KINDS, opts: { timeoutMs?: number } = {}): Promise<void> {
  const crds = defs.map(buildCrd);
  await Promise.all(
    crds.map(async (crd) => {
      for (let attempt = 0; ; attempt++) {
        try {
          await client.create(CUSTOM_RESOURCE_DEFINITIONS, undefined, crd);
          return;
        } catch (err) {
          if (!isAlreadyExists(err)) throw err;
        }
        const cur = await client.get<CrdState>(CUSTOM_RESOURCE_DEFINITIONS, undefined, crd.metadata.name);
        try {
          await client.replace(CUSTOM_RESOURCE_DEFINITIONS, undefined, crd.metadata.name, {
            ...crd,
            metadata: { ...crd.metadata, resourceVersion: cur.metadata?.resourceVersion },
          });
          return;
        } catch (err) {
          if (!isConflict(err) || attempt >= 5) throw err;
        }
      }
    }),
  );
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
  for (const crd of crds) {
    for (;;) {
      const cur = await client.get<CrdState>(CUSTOM_RESOURCE_DEFINITIONS, undefined, crd.metadata.name);
      const conds = cur.status?.conditions ?? [];
      if (conds.some((c) => c.type === 'Established' && c.status === 'True')) break;
      const bad = conds.find((c) => c.type === 'NamesAccepted' && c.status === 'False');
      if (bad !== undefined) throw new Error(`CRD ${crd.metadata.name} was not accepted: ${bad.message ?? 'names conflict'}`);
      if (Date.now() > deadline) throw new Error(`CRD ${crd.metadata.name} is not Established after ${opts.timeoutMs ?? 30_000} ms`);
      await sleep(100);
    }
  }
}

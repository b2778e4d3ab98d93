// Restore hardening against the real apiserver and S3 server: a ConfigMap data key named
// `__proto__` is backed up, restored, compared and patched like any other key, and the node-bound
// kinds (csinodes, volumeattachments) are never restored, reported with the reason.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CORE, isNotFound, type KubeObject } from '../../src/kube/index.js';
import { NEVER_RESTORED } from '../../src/restore/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { backupNow, createNs, getOrUndefined, res, restoreNow, setupEnv, type Env } from './support.js';

const CSI_NODES = res('storage.k8s.io', 'v1', 'csinodes', false);
const VOLUME_ATTACHMENTS = res('storage.k8s.io', 'v1', 'volumeattachments', false);

/** Parsed from text, as the API and the archive give it: `__proto__` is an own key. */
const json = <T>(text: string): T => JSON.parse(text) as T;
type ConfigMap = KubeObject & { data?: Record<string, string> };
const dataText = (cm: ConfigMap | undefined): string => JSON.stringify(cm?.data);

describe('restore hardening', () => {
  let env: Env;
  const namespaces: string[] = [];
  const cluster: { ref: typeof CSI_NODES; name: string }[] = [];

  beforeAll(async () => {
    env = await setupEnv('restore-hard');
  });
  afterAll(async () => {
    for (const n of namespaces) await env?.client.delete(CORE.namespaces, undefined, n).catch(() => undefined);
    for (const c of cluster) await env?.client.delete(c.ref, undefined, c.name).catch(() => undefined);
    env?.close();
  });

  it('a data key named __proto__ is restored, compared and patched back like any other key', async () => {
    const { client } = env;
    const ns = uniqueName('proto');
    const target = uniqueName('proto-to');
    namespaces.push(ns, target);
    await createNs(client, ns);
    const backedUp = '{"__proto__":"backed up value","plain":"p"}';
    await client.create(CORE.configMaps, ns, json(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"odd"},"data":${backedUp}}`));
    expect(dataText(await client.get<ConfigMap>(CORE.configMaps, ns, 'odd'))).toBe(backedUp);
    const backup = await backupNow(env, uniqueName('proto-b'), { includedNamespaces: [ns] });
    const mapping = { includedNamespaces: [ns], namespaceMapping: { [ns]: target } };

    const first = (await restoreNow(env, backup, mapping)).result;
    expect(first.phase).toBe('Completed');
    expect(first.outcomes.find((o) => o.name === 'odd')).toMatchObject({ action: 'created' });
    expect(dataText(await client.get<ConfigMap>(CORE.configMaps, target, 'odd'))).toBe(backedUp);

    // Unchanged: the comparison sees it as equal.
    const again = (await restoreNow(env, backup, { ...mapping, existingResourcePolicy: 'update' })).result;
    expect(again.outcomes.find((o) => o.name === 'odd')).toMatchObject({ action: 'skipped', reason: 'already exists and matches the backup' });

    // Changed after the backup: `none` notices the difference, `update` patches exactly that key back.
    await client.patch(CORE.configMaps, target, 'odd', json('{"data":{"__proto__":"changed later"}}'), 'merge');
    expect(dataText(await client.get<ConfigMap>(CORE.configMaps, target, 'odd'))).toBe('{"__proto__":"changed later","plain":"p"}');
    const none = (await restoreNow(env, backup, mapping)).result;
    expect(none.outcomes.find((o) => o.name === 'odd')).toMatchObject({
      action: 'skipped', reason: 'already exists and differs from the backup; left unchanged (existingResourcePolicy is none)',
    });
    const update = (await restoreNow(env, backup, { ...mapping, existingResourcePolicy: 'update' })).result;
    expect(update.phase).toBe('Completed');
    expect(update.outcomes.find((o) => o.name === 'odd')).toMatchObject({ action: 'updated' });
    expect(dataText(await client.get<ConfigMap>(CORE.configMaps, target, 'odd'))).toBe(backedUp);

    // Removed after the backup: put back too.
    await client.patch(CORE.configMaps, target, 'odd', json('{"data":{"__proto__":null}}'), 'merge');
    expect(dataText(await client.get<ConfigMap>(CORE.configMaps, target, 'odd'))).toBe('{"plain":"p"}');
    expect((await restoreNow(env, backup, { ...mapping, existingResourcePolicy: 'update' })).result.outcomes.find((o) => o.name === 'odd')).toMatchObject({ action: 'updated' });
    expect(dataText(await client.get<ConfigMap>(CORE.configMaps, target, 'odd'))).toBe(backedUp);
    expect(({} as Record<string, unknown>)['backed up value']).toBeUndefined();
  });

  it('never restores csinodes or volumeattachments, and says why', async () => {
    const { client } = env;
    const node = uniqueName('node');
    const va = uniqueName('va');
    const label = { 'stowage-test/node-bound': node };
    await client.create(CSI_NODES, undefined, { apiVersion: 'storage.k8s.io/v1', kind: 'CSINode', metadata: { name: node, labels: label }, spec: { drivers: [{ name: 'csi.example.com', nodeID: node, topologyKeys: null }] } });
    cluster.push({ ref: CSI_NODES, name: node });
    await client.create(VOLUME_ATTACHMENTS, undefined, {
      apiVersion: 'storage.k8s.io/v1', kind: 'VolumeAttachment', metadata: { name: va, labels: label },
      spec: { attacher: 'csi.example.com', nodeName: node, source: { persistentVolumeName: `${va}-pv` } },
    });
    cluster.push({ ref: VOLUME_ATTACHMENTS, name: va });
    const backup = await backupNow(env, uniqueName('nodebound'), {
      includedResources: ['csinodes.storage.k8s.io', 'volumeattachments.storage.k8s.io'], includeClusterResources: true, labelSelector: { matchLabels: label },
    });
    for (const c of cluster) await client.delete(c.ref, undefined, c.name);
    await waitUntil('both deleted', async () =>
      (await getOrUndefined(client, CSI_NODES, undefined, node)) === undefined && (await getOrUndefined(client, VOLUME_ATTACHMENTS, undefined, va)) === undefined ? true : undefined);

    const { result, lines } = await restoreNow(env, backup, { includeClusterResources: true });
    expect(result.phase).toBe('Completed');
    expect(result.outcomes).toEqual([]);
    const messages = lines.map((l) => (JSON.parse(l) as { message: string }).message);
    expect(messages).toContain(`1 csinodes.storage.k8s.io left out: never restored (${NEVER_RESTORED['csinodes.storage.k8s.io']})`);
    expect(messages).toContain(`1 volumeattachments.storage.k8s.io left out: never restored (${NEVER_RESTORED['volumeattachments.storage.k8s.io']})`);
    for (const [ref, name] of [[CSI_NODES, node], [VOLUME_ATTACHMENTS, va]] as const) {
      await expect(client.get(ref, undefined, name).then(() => 'exists', (e: unknown) => (isNotFound(e) ? 'absent' : e))).resolves.toBe('absent');
    }
  });
});

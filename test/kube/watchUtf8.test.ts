// Multi-byte text through a real watch: an informer that has synced on an empty namespace learns
// of ConfigMaps holding large multi-byte text only through watch events, whose bytes arrive in
// chunks that split characters. Every character arrives intact.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { CORE, createDynamicClient, loadKubeConfig, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import { createInformer, type Informer } from '../../src/runtime/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';

type ConfigMap = KubeObject & { data?: Record<string, string> };

describe('watch decoding', () => {
  let client: DynamicClient;
  let informer: Informer<ConfigMap>;
  const ns = uniqueName('utf8');

  beforeAll(async () => {
    client = createDynamicClient(loadKubeConfig(inject('cluster').kubeconfigPath), { qps: 200, burst: 400 });
    await client.create(CORE.namespaces, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    informer = createInformer<ConfigMap>(client, CORE.configMaps, { namespace: ns });
    informer.start();
    await informer.waitForSync();
  });
  afterAll(async () => {
    await informer?.stop();
    await client?.delete(CORE.namespaces, undefined, ns).catch(() => undefined);
    client?.close();
  });

  it('keeps multi-byte characters that chunk boundaries split', async () => {
    // 2-, 3- and 4-byte characters, ~600 KiB per object: many chunk boundaries, nearly all inside a character.
    const texts = ['é', '€', '😀', 'ß日😀'].map((c, i) => `${i}:` + c.repeat(Math.floor(600_000 / Buffer.byteLength(c))));
    for (const [i, text] of texts.entries()) await client.create(CORE.configMaps, ns, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}` }, data: { text } });
    for (const [i, text] of texts.entries()) {
      const got = await waitUntil(`cm-${i} in the informer`, async () => informer.get(`${ns}/cm-${i}`), 60_000, 50);
      expect(got.data?.text?.length).toBe(text.length);
      expect(got.data?.text === text).toBe(true);
      expect(got.data?.text).not.toContain('\uFFFD');
    }
    expect(informer.stats().relists).toBe(0);
  });
});

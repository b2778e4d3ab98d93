// discover() against a stand-in apiserver that answers the discovery paths only: a group version
// that 404s (gone between /apis and its GET, or not served yet) serves nothing and is no failure; one
// that answers 503 (an aggregated API that is down) is reported through onGroupError.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDynamicClient } from './client.js';

const answers: Record<string, [number, unknown]> = {
  '/api': [200, { versions: ['v1'] }],
  '/api/v1': [200, { resources: [{ name: 'configmaps', kind: 'ConfigMap', namespaced: true, verbs: ['list', 'get', 'create'] }] }],
  '/apis': [200, {
    groups: [
      { name: 'gone.example.com', versions: [{ version: 'v1' }], preferredVersion: { version: 'v1' } },
      { name: 'down.example.com', versions: [{ version: 'v1' }], preferredVersion: { version: 'v1' } },
    ],
  }],
  '/apis/gone.example.com/v1': [404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: 'the server could not find the requested resource' }],
  '/apis/down.example.com/v1': [503, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'ServiceUnavailable', code: 503, message: 'service unavailable' }],
};

describe('discover() when group versions come and go', () => {
  let server: http.Server;
  let url = '';
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const [status, body] = answers[req.url ?? ''] ?? [404, {}];
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('skips a group version that answers 404 and reports one that answers 503', async () => {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: url, skipTLSVerify: true }], users: [{ name: 'u', token: 't' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x',
    });
    // A 503 without Retry-After is not retried, so the answer above is what discover() sees.
    const client = createDynamicClient(kc);
    try {
      const failed: string[] = [];
      const found = await client.discover({ onGroupError: (gv, err) => failed.push(`${gv}: ${err.status}`) });
      expect(found.map((r) => r.groupResource)).toEqual(['configmaps']);
      expect(failed).toEqual(['down.example.com/v1: 503']);
    } finally {
      client.close();
    }
  });
});

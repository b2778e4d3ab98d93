// The client's outage retries and byte-sized pages, against a local HTTP server that plays an
// apiserver going away, answering 503, resetting a create it applied, and sending large pages.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { createDynamicClient, type ClientOptions } from './client.js';
import { KubeError } from './errors.js';
import { classifyFailure } from './outage.js';
import { CORE } from './wellKnown.js';

type Handler = (req: http.IncomingMessage, body: string, res: http.ServerResponse) => void;
const servers: http.Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

async function fakeApiserver(handler: Handler): Promise<number> {
  const srv = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => handler(req, body, res));
  });
  servers.push(srv);
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return (srv.address() as AddressInfo).port;
}

function clientFor(port: number, opts: ClientOptions = {}): ReturnType<typeof createDynamicClient> {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return createDynamicClient(kc, { qps: 0, ...opts });
}

const json = (res: http.ServerResponse, status: number, body: unknown): void => {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
};

describe('outage retries', () => {
  it('classifies refused connections as unsent, resets as unknown, 5xx for a /version probe, 4xx as no outage', () => {
    const t = { verb: 'get', resource: 'x' };
    expect(classifyFailure(new KubeError(t, 0, 'ECONNREFUSED', 'x'))).toBe('unsent');
    expect(classifyFailure(new KubeError(t, 0, 'ECONNRESET', 'x'))).toBe('unknown');
    expect(classifyFailure(new KubeError(t, 429, 'TooManyRequests', 'x'))).toBe('unsent');
    expect(classifyFailure(new KubeError(t, 503, 'ServiceUnavailable', 'x'))).toBe('status');
    expect(classifyFailure(new KubeError(t, 404, 'NotFound', 'x'))).toBeUndefined();
    expect(classifyFailure(new Error('x'))).toBeUndefined();
  });

  it('fails at once without an outage timeout, and names the outage after it', async () => {
    const port = await fakeApiserver(() => undefined);
    await new Promise((r) => servers.pop()?.close(r)); // nothing listens there now
    await expect(clientFor(port).get(CORE.configMaps, 'ns', 'a')).rejects.toThrow(/ECONNREFUSED/);
    const t0 = Date.now();
    const err = await clientFor(port, { outageTimeoutMs: 1500 }).get(CORE.configMaps, 'ns', 'a').catch((e: unknown) => e);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1500);
    expect(Date.now() - t0).toBeLessThan(1500 + 4500); // gave up near the timeout, not at some later default
    expect(String(err)).toMatch(/get configmaps "a" in namespace "ns": the Kubernetes API was unreachable for 1\.5s: cannot reach the apiserver .*ECONNREFUSED/);
  });

  it('waits for an apiserver that comes back within the timeout', async () => {
    const port = await fakeApiserver(() => undefined);
    await new Promise((r) => servers.pop()?.close(r));
    const got = clientFor(port, { outageTimeoutMs: 10_000 }).get<{ metadata: { name: string } }>(CORE.configMaps, 'ns', 'a');
    await new Promise((r) => setTimeout(r, 700));
    const srv = http.createServer((_req, res) => json(res, 200, { metadata: { name: 'a' } }));
    servers.push(srv);
    await new Promise<void>((r) => srv.listen(port, '127.0.0.1', r));
    expect((await got).metadata.name).toBe('a');
  });

  it('lets status writes of its own records wait out an outage past the timeout; other writes fail at it', async () => {
    const port = await fakeApiserver(() => undefined);
    await new Promise((r) => servers.pop()?.close(r));
    const c = clientFor(port, { outageTimeoutMs: 300, recordGroups: ['stowage.dev'] });
    const backups = { group: 'stowage.dev', version: 'v1', resource: 'backups', namespaced: true };
    const record = c.patchStatus<{ status: { phase: string } }>(backups, 'ns', 'b', { status: { phase: 'Failed' } });
    await expect(c.patchStatus(CORE.pods, 'ns', 'p', { status: {} })).rejects.toThrow(/unreachable for 300ms/);
    await new Promise((r) => setTimeout(r, 1200));
    const srv = http.createServer((_req, res) => json(res, 200, { status: { phase: 'Failed' } }));
    servers.push(srv);
    await new Promise<void>((r) => srv.listen(port, '127.0.0.1', r));
    expect((await record).status.phase).toBe('Failed');
    // Without an outage timeout it fails at once like everything else.
    await new Promise((r) => srv.close(r));
    servers.pop();
    await expect(clientFor(port, { recordGroups: ['stowage.dev'] }).patchStatus(backups, 'ns', 'b', {})).rejects.toThrow(/ECONNREFUSED/);
  });

  it('retries a 5xx only while /version fails too: a broken aggregated API is not an outage', async () => {
    let versionUp = true;
    let calls = 0;
    const port = await fakeApiserver((req, _body, res) => {
      if (req.url === '/version') return versionUp ? json(res, 200, { major: '1' }) : json(res, 503, {});
      calls++;
      if (!versionUp && calls >= 3) return json(res, 200, { items: [] });
      json(res, 503, { kind: 'Status', reason: 'ServiceUnavailable', message: 'the server is currently unable to handle the request', code: 503 });
    });
    const c = clientFor(port, { outageTimeoutMs: 10_000 });
    await expect(c.list({ group: 'metrics.k8s.io', version: 'v1beta1', resource: 'pods', namespaced: true })).rejects.toThrow(/unable to handle the request/);
    versionUp = false;
    calls = 0;
    await expect(c.list(CORE.configMaps)).resolves.toMatchObject({ items: [] });
  });

  it('waits out the 403s of an API server that just came back (its authorizer still filling), but not a 403 out of the blue', async () => {
    // Phase 1: the API is down (503 everywhere, /version too); phase 2: it answers, but refuses
    // for a few requests; phase 3: it serves. A client that saw phase 1 rides out phase 2.
    let phase = 1;
    let refusals = 0;
    let down = 0;
    const port = await fakeApiserver((req, _body, res) => {
      // The LIST and the /version probe behind it both find the API down.
      if (phase === 1) {
        if (++down >= 2) phase = 2;
        return json(res, 503, { kind: 'Status', reason: 'ServiceUnavailable', message: 'down', code: 503 });
      }
      if (req.url === '/version') return json(res, 200, { major: '1' });
      if (phase === 2 && ++refusals >= 3) phase = 3;
      if (phase === 2) return json(res, 403, { kind: 'Status', reason: 'Forbidden', message: 'configmaps is forbidden: User "u" cannot list resource "configmaps"', code: 403 });
      json(res, 200, { items: [] });
    });
    const c = clientFor(port, { outageTimeoutMs: 10_000 });
    await expect(c.list(CORE.configMaps)).resolves.toMatchObject({ items: [] });
    expect(refusals).toBe(3);
    // A fresh client that never saw the API unreachable takes a 403 as the answer at once.
    const asked: string[] = [];
    const fresh = clientFor(
      await fakeApiserver((req, _body, res) => {
        asked.push(`${req.method} ${req.url}`);
        json(res, 403, { kind: 'Status', reason: 'Forbidden', message: 'nope', code: 403 });
      }),
      { outageTimeoutMs: 10_000 },
    );
    await expect(fresh.list(CORE.configMaps)).rejects.toThrow(/nope/);
    expect(asked).toEqual([expect.stringMatching(/^GET \/api\/v1\/configmaps/)]); // asked once: no retry, no probe
  });

  it('keeps waiting out those 403s past the settle time while /readyz says not ready, and takes a 403 once it says ready', async () => {
    // Down, then 403 for everything (/readyz too) for a while, then /readyz ready with the 403 still there.
    let phase = 1;
    let down = 0;
    let refusals = 0;
    const port = await fakeApiserver((req, _body, res) => {
      if (phase === 1) {
        if (++down >= 2) phase = 2;
        return json(res, 503, { kind: 'Status', reason: 'ServiceUnavailable', message: 'down', code: 503 });
      }
      if (req.url === '/version') return json(res, 200, { major: '1' });
      if (req.url === '/readyz') return phase === 3 ? res.end('ok') : json(res, 500, { kind: 'Status', code: 500, message: 'not ready' });
      if (++refusals >= 8) phase = 3;
      json(res, 403, { kind: 'Status', reason: 'Forbidden', message: 'configmaps is forbidden: still refused', code: 403 });
    });
    const c = clientFor(port, { outageTimeoutMs: 10_000, authSettleMs: 100 });
    await expect(c.list(CORE.configMaps)).rejects.toThrow(/still refused/);
    // Eight refusals take well over the 100 ms settle time: the unready /readyz kept it waiting.
    expect(refusals).toBe(8);
  });

  it('repeats a named create the connection lost after applying, and takes the object it made', async () => {
    const made = new Map<string, unknown>();
    let posts = 0;
    const port = await fakeApiserver((req, body, res) => {
      if (req.method === 'POST') {
        posts++;
        const obj = JSON.parse(body) as { metadata: { name?: string; generateName?: string } };
        const name = obj.metadata.name ?? `${obj.metadata.generateName ?? ''}${posts}`;
        if (made.has(name)) return json(res, 409, { kind: 'Status', reason: 'AlreadyExists', code: 409, message: `"${name}" already exists` });
        made.set(name, { ...obj, metadata: { ...obj.metadata, name, creationTimestamp: new Date().toISOString(), managedFields: [{ manager: 'stowage', operation: 'Create' }] } });
        // Applied, but the answer is lost.
        return req.socket.destroy();
      }
      const name = decodeURIComponent(req.url?.split('?')[0]?.split('/').pop() ?? '');
      return made.has(name) ? json(res, 200, made.get(name)) : json(res, 404, { kind: 'Status', reason: 'NotFound', code: 404 });
    });
    const c = clientFor(port, { outageTimeoutMs: 5000, userAgent: 'stowage/0.1.0' });
    const obj = await c.create<{ metadata: { name: string } }>(CORE.configMaps, 'ns', { metadata: { name: 'mine' } });
    expect(obj.metadata.name).toBe('mine');
    expect(posts).toBe(2);

    // Someone else's object of that name, made before this create: AlreadyExists stands.
    made.set('theirs', { metadata: { name: 'theirs', creationTimestamp: '2020-01-01T00:00:00Z', managedFields: [{ manager: 'kubectl', operation: 'Create' }] } });
    posts = 0;
    const theirs = await c.create(CORE.configMaps, 'ns', { metadata: { name: 'theirs' } }).catch((e: unknown) => e);
    expect(String(theirs)).toMatch(/already exists/);

    // generateName: a second POST would make a second object, so the lost answer is an error. (A
    // fresh client: on a reused keep-alive socket a reset counts as the server having closed it idle.)
    posts = 0;
    const gen = await clientFor(port, { outageTimeoutMs: 5000 }).create(CORE.configMaps, 'ns', { metadata: { generateName: 'g-' } }).catch((e: unknown) => e);
    expect(gen).toBeInstanceOf(KubeError);
    expect(posts).toBe(1);
  });
});

describe('byte-sized pages', () => {
  it('starts at typical objects, fits the limit to the budget, and cuts off a page that runs far past it', async () => {
    const limits: number[] = [];
    const item = (i: number, size: number): unknown => ({ metadata: { name: `o${i}` }, data: { v: 'x'.repeat(size) } });
    // 100 items of ~10 KiB, then 20 of ~200 KiB.
    const sizes = [...Array.from({ length: 100 }, () => 10_000), ...Array.from({ length: 20 }, () => 200_000)];
    const port = await fakeApiserver((req, _body, res) => {
      const q = new URL(req.url ?? '', 'http://x').searchParams;
      const limit = Number(q.get('limit'));
      const from = Number(q.get('continue') ?? 0);
      limits.push(limit);
      const to = Math.min(sizes.length, from + limit);
      json(res, 200, { kind: 'ConfigMapList', apiVersion: 'v1', metadata: { continue: to < sizes.length ? String(to) : '' }, items: sizes.slice(from, to).map((s, i) => item(from + i, s)) });
    });
    const c = clientFor(port, { pageBytes: 400_000 });
    const names: string[] = [];
    for await (const page of c.listPages<{ metadata: { name: string } }>(CORE.configMaps, { pageSize: 500 })) names.push(...page.items.map((o) => o.metadata.name));
    expect(names).toEqual(sizes.map((_, i) => `o${i}`));
    // Unknown size: 19 items (400 kB over 16 KiB each, with headroom). Then ~31 items of 10 kB fit.
    expect(limits[0]).toBe(19);
    expect(limits[1]).toBeGreaterThanOrEqual(30);
    // A page reaching into the 200 kB items ran past 800 kB and was asked again smaller.
    expect(limits.some((l, i) => i > 0 && l < (limits[i - 1] ?? 0))).toBe(true);
    expect(Math.max(...limits.slice(-3))).toBeLessThanOrEqual(2);
  });

  it('asks the first page again, smaller, when it runs past the cutoff, and loses no item', async () => {
    const limits: number[] = [];
    // 30 items of ~100 kB: the first page (typical objects: 19 of them under 400 kB) runs far past 800 kB.
    const count = 30;
    const port = await fakeApiserver((req, _body, res) => {
      const q = new URL(req.url ?? '', 'http://x').searchParams;
      const limit = Number(q.get('limit'));
      const from = Number(q.get('continue') ?? 0);
      limits.push(limit);
      const to = Math.min(count, from + limit);
      const items = Array.from({ length: to - from }, (_, i) => ({ metadata: { name: `o${from + i}` }, data: { v: 'x'.repeat(100_000) } }));
      json(res, 200, { kind: 'ConfigMapList', apiVersion: 'v1', metadata: { continue: to < count ? String(to) : '' }, items });
    });
    const c = clientFor(port, { pageBytes: 400_000 });
    const names: string[] = [];
    for await (const page of c.listPages<{ metadata: { name: string } }>(CORE.configMaps, { pageSize: 500 })) names.push(...page.items.map((o) => o.metadata.name));
    expect(names).toEqual(Array.from({ length: count }, (_, i) => `o${i}`));
    expect(limits[0]).toBe(19);
    expect(limits[1]).toBeLessThan(19);
  });
});

import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createMetrics } from './metrics.js';
import { startMetricsServer, type MetricsServer, type Readiness } from './server.js';

let servers: MetricsServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

function request(port: number, path: string, method = 'GET'): Promise<{ status: number; body: string; type: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, type: String(res.headers['content-type']) }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function start(ready?: () => Readiness | Promise<Readiness>) {
  const m = createMetrics({ defaultMetrics: false });
  const s = await startMetricsServer({ address: '127.0.0.1:0', registry: m.registry, ...(ready ? { ready } : {}) });
  servers.push(s);
  return { m, s };
}

describe('startMetricsServer', () => {
  it('serves /metrics in the Prometheus text format', async () => {
    const { m, s } = await start();
    expect(s.port).toBeGreaterThan(0);
    m.backupAttemptTotal.inc({ schedule: 'daily' }, 2);
    const r = await request(s.port, '/metrics');
    expect(r.status).toBe(200);
    expect(r.type).toContain('text/plain');
    expect(r.body).toContain('stowage_backup_attempt_total{schedule="daily"} 2');
  });

  it('answers /healthz, and 404/405 for anything else', async () => {
    const { s } = await start();
    expect(await request(s.port, '/healthz')).toMatchObject({ status: 200, body: 'ok\n' });
    expect(await request(s.port, '/nope')).toMatchObject({ status: 404 });
    expect(await request(s.port, '/metrics', 'POST')).toMatchObject({ status: 405 });
    expect(await request(s.port, '/healthz', 'HEAD')).toMatchObject({ status: 200, body: '' });
  });

  it('reports readiness from the callback, with a sanitised reason', async () => {
    let state: Readiness = false;
    const { s } = await start(() => state);
    expect(await request(s.port, '/readyz')).toMatchObject({ status: 503, body: 'not ready\n' });
    state = { ready: false, reason: 'informers not synced' };
    expect(await request(s.port, '/readyz')).toMatchObject({ status: 503, body: 'not ready: informers not synced\n' });
    state = true;
    expect(await request(s.port, '/readyz')).toMatchObject({ status: 200, body: 'ok\n' });
  });

  it('treats a throwing readiness check as not ready', async () => {
    const { s } = await start(async () => {
      throw new Error('cannot reach https://u:p@apiserver');
    });
    expect(await request(s.port, '/readyz')).toMatchObject({ status: 503, body: 'not ready: cannot reach https://[REDACTED]@apiserver\n' });
  });

  it('is ready by default and refuses a bad address', async () => {
    const { s } = await start();
    expect(await request(s.port, '/readyz')).toMatchObject({ status: 200 });
    await expect(startMetricsServer({ address: 'nope', registry: createMetrics({ defaultMetrics: false }).registry })).rejects.toThrow(
      'metrics address "nope" is not an address like ":8085" or "127.0.0.1:8085"',
    );
  });

  it('fails to start on a port in use', async () => {
    const { s } = await start();
    await expect(
      startMetricsServer({ address: `127.0.0.1:${s.port}`, registry: createMetrics({ defaultMetrics: false }).registry }),
    ).rejects.toThrow(/EADDRINUSE/);
  });
});

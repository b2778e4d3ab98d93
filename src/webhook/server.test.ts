import https from 'node:https';
import { Writable } from 'node:stream';
import winston from 'winston';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REQUESTER_ANNOTATION, SEAL_ANNOTATION, formatRequester } from '../auth/index.js';
import { createTlsIdentity } from './certs.js';
import { APISERVER_MAX_REQUEST_BYTES, MAX_BODY_BYTES, startWebhookServer, type WebhookServer } from './server.js';

const id = createTlsIdentity(['127.0.0.1', 'localhost']);
const lines: Array<{ level: string; message: string }> = [];
const logger = winston.createLogger({
  level: 'debug', format: winston.format.json(),
  transports: [new winston.transports.Stream({ stream: new Writable({ write(c: Buffer, _e, cb) { lines.push(JSON.parse(c.toString()) as { level: string; message: string }); cb(); } }) })],
});
let server: WebhookServer;

beforeAll(async () => {
  // Nobody may impersonate anyone here: a stamp naming someone else is always refused.
  server = await startWebhookServer({ address: '127.0.0.1:0', identity: id, mayImpersonate: () => Promise.resolve(false), sealer: { key: Buffer.alloc(32, 1), now: () => new Date() }, logger });
});
afterAll(async () => {
  await server.close();
});

function call(o: { method?: string; path?: string; body?: string | Buffer }): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port: server.port, method: o.method ?? 'POST', path: o.path ?? '/mutate', ca: id.caBundle, headers: { 'content-type': 'application/json' } }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end(o.body);
  });
}

const review = (annotations?: Record<string, string>): string => JSON.stringify({
  apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview',
  request: {
    uid: 'u-1', operation: 'CREATE', namespace: 'stowage', name: 'b1',
    resource: { group: 'stowage.dev', version: 'v1', resource: 'backups' },
    userInfo: { username: 'alice', uid: 'alice-uid', groups: ['team-a'] },
    object: { metadata: { name: 'b1', namespace: 'stowage', ...(annotations !== undefined ? { annotations } : {}) }, spec: { includedNamespaces: ['secret-stuff'] } },
  },
});

/** A review whose object carries `bytes` of annotation, and the same again as its old version on an update. */
const bigReview = (bytes: number, operation: 'CREATE' | 'UPDATE'): string => {
  const object = { metadata: { name: 'b1', namespace: 'stowage', annotations: { big: 'x'.repeat(bytes) } }, spec: {} };
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview',
    request: {
      uid: 'u-big', operation, namespace: 'stowage', name: 'b1',
      resource: { group: 'stowage.dev', version: 'v1', resource: 'backups' },
      userInfo: { username: 'alice', uid: 'alice-uid', groups: ['team-a'] },
      object, ...(operation === 'UPDATE' ? { oldObject: object } : {}),
    },
  });
};

describe('webhook server', () => {
  it('answers an AdmissionReview with a stamp', async () => {
    const r = await call({ body: review() });
    expect(r.status).toBe(200);
    const out = JSON.parse(r.body) as { response: { uid: string; allowed: boolean; patch: string } };
    expect(out.response).toMatchObject({ uid: 'u-1', allowed: true });
    const [op] = JSON.parse(Buffer.from(out.response.patch, 'base64').toString()) as Array<{ path: string; value: Record<string, string> }>;
    expect(op?.path).toBe('/metadata/annotations');
    expect(op?.value[REQUESTER_ANNOTATION]).toBe(formatRequester({ username: 'alice', uid: 'alice-uid', groups: ['team-a'] }));
    // Sealed with the key the server was given (the seal's own checks are admission.test.ts's).
    expect(op?.value[SEAL_ANNOTATION]).toMatch(/^v1 \S+ \S+$/);
  });

  it('logs one info line per refusal, with who, what and why but no object contents', async () => {
    lines.length = 0;
    const r = await call({ body: review({ [REQUESTER_ANNOTATION]: formatRequester({ username: 'admin', uid: '', groups: [] }) }) });
    expect(JSON.parse(r.body)).toMatchObject({ response: { uid: 'u-1', allowed: false, status: { code: 403 } } });
    const refusals = lines.filter((l) => l.message.includes('refused'));
    expect(refusals).toEqual([{
      level: 'info',
      message: 'admission webhook refused CREATE of Backup stowage/b1 by user "alice": the stowage.dev/requester annotation records who created this Backup and is set only by the Stowage admission webhook: user "alice" may not set it (it names "admin")',
    }]);
    expect(JSON.stringify(lines)).not.toContain('secret-stuff');
  });

  it('refuses bad input without falling over', async () => {
    expect(await call({ body: '{not json' })).toEqual({ status: 400, body: 'the request body is not JSON\n' });
    // Too large to answer as a review (no request uid in it): a 413 that still names the size and the limit.
    expect(await call({ body: Buffer.alloc(MAX_BODY_BYTES + 1, 0x20) })).toEqual({
      status: 413, body: `the admission request is ${MAX_BODY_BYTES + 1} bytes, over the Stowage admission webhook's limit of ${MAX_BODY_BYTES} bytes\n`,
    });
    expect((await call({ method: 'GET' })).status).toBe(405);
    expect((await call({ path: '/other' })).status).toBe(404);
    const empty = JSON.parse((await call({ body: '{}' })).body) as { response: { allowed: boolean; status: { message: string } } };
    expect(empty.response).toMatchObject({ allowed: false, status: { message: 'the admission request is unreadable: it is not an AdmissionReview with a request uid' } });
    // Still serving.
    expect((await call({ body: review() })).status).toBe(200);
  });

  it('takes an update whose object and old version are each as large as the API server accepts', async () => {
    const body = bigReview(APISERVER_MAX_REQUEST_BYTES - 1024, 'UPDATE');
    expect(Buffer.byteLength(body)).toBeGreaterThan(2 * APISERVER_MAX_REQUEST_BYTES - 4096);
    const r = await call({ body });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toMatchObject({ response: { uid: 'u-big', allowed: true } });
  });

  it('refuses a larger review with an AdmissionReview naming its size and the limit', async () => {
    lines.length = 0;
    const body = bigReview(MAX_BODY_BYTES, 'CREATE');
    const size = Buffer.byteLength(body);
    const r = await call({ body });
    expect(r.status).toBe(200);
    const message = `the admission request is ${size} bytes, over the Stowage admission webhook's limit of ${MAX_BODY_BYTES} bytes`;
    expect(JSON.parse(r.body)).toEqual({
      apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview',
      response: { uid: 'u-big', allowed: false, status: { code: 413, reason: 'RequestEntityTooLarge', message } },
    });
    expect(lines).toEqual([{ level: 'info', message: `admission webhook refused a request: ${message}` }]);
  });
});

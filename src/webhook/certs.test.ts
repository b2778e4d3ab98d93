import crypto from 'node:crypto';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createTlsIdentity, liveCertificates, servingNames, unusableBecause } from './certs.js';

const DAY = 86_400_000;

describe('servingNames', () => {
  it('names loopback, the Service and the URL host', () => {
    expect(servingNames({})).toEqual(['127.0.0.1', 'localhost']);
    expect(servingNames({ service: { name: 'stowage-webhook', namespace: 'stowage' } })).toEqual([
      '127.0.0.1', 'localhost', 'stowage-webhook.stowage.svc', 'stowage-webhook.stowage.svc.cluster.local',
    ]);
    expect(servingNames({ url: 'https://127.0.0.1:9443/mutate' })).toEqual(['127.0.0.1', 'localhost']);
    expect(servingNames({ url: 'https://hooks.example.com/mutate' })).toEqual(['127.0.0.1', 'localhost', 'hooks.example.com']);
    expect(servingNames({ url: 'https://[::1]:9443/mutate' })).toEqual(['127.0.0.1', 'localhost', '::1']);
  });
});

describe('createTlsIdentity', () => {
  const names = servingNames({ service: { name: 'stowage-webhook', namespace: 'stowage' } });
  const id = createTlsIdentity(names);

  it('is a CA certificate for exactly the names, valid for a year', () => {
    const x = new crypto.X509Certificate(id.cert);
    expect(x.ca).toBe(true);
    expect(x.subjectAltName).toBe('IP Address:127.0.0.1, DNS:localhost, DNS:stowage-webhook.stowage.svc, DNS:stowage-webhook.stowage.svc.cluster.local');
    expect(x.checkPrivateKey(crypto.createPrivateKey(id.key))).toBe(true);
    expect(x.verify(x.publicKey)).toBe(true);
    const days = (Date.parse(x.validTo) - Date.now()) / DAY;
    expect(days).toBeGreaterThan(364);
    expect(days).toBeLessThanOrEqual(365);
    expect(id.caBundle).toBe(id.cert);
  });

  it('serves TLS that a client trusting only the caBundle accepts, by IP and by name', async () => {
    const server = https.createServer({ key: id.key, cert: id.cert }, (_req, res) => res.end('ok'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const get = (servername: string): Promise<string> => new Promise((resolve, reject) => {
      https.get({ host: '127.0.0.1', port, path: '/', ca: id.caBundle, servername, headers: { host: servername } }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve(body));
      }).on('error', reject);
    });
    try {
      expect(await get('localhost')).toBe('ok');
      expect(await get('stowage-webhook.stowage.svc')).toBe('ok');
      await expect(get('elsewhere.example.com')).rejects.toThrow(/Hostname\/IP does not match|altnames/);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it('is refused by a client trusting another certificate', async () => {
    const other = createTlsIdentity(['127.0.0.1']);
    const server = https.createServer({ key: id.key, cert: id.cert }, (_req, res) => res.end('ok'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      await expect(new Promise((resolve, reject) => {
        https.get({ host: '127.0.0.1', port, ca: other.caBundle }, resolve).on('error', reject);
      })).rejects.toThrow(/self[- ]signed|unable to verify/);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});

describe('unusableBecause', () => {
  const names = ['127.0.0.1', 'localhost'];
  const now = new Date();
  const id = createTlsIdentity(names, now);

  it('reuses a certificate with more than a third of its lifetime left that names everything', () => {
    expect(unusableBecause(id, names, now)).toBeUndefined();
    expect(unusableBecause(id, ['localhost'], new Date(now.getTime() + 243 * DAY))).toBeUndefined();
  });

  it('replaces one with a third of its lifetime or less left', () => {
    expect(unusableBecause(id, names, new Date(now.getTime() + 244 * DAY))).toMatch(/^it expires .*, within 121d 16h \(a third of the certificate lifetime\)$/);
    // A short lifetime (--webhook-certificate-lifetime) moves the renewal with it.
    const short = createTlsIdentity(names, now, 45_000);
    expect(unusableBecause(short, names, new Date(now.getTime() + 29_000), 45_000)).toBeUndefined();
    expect(unusableBecause(short, names, new Date(now.getTime() + 31_000), 45_000)).toMatch(/^it expires .*, within 15s \(a third of the certificate lifetime\)$/);
  });

  it('fills an empty Secret (as the install creates it)', () => {
    expect(unusableBecause({ cert: '', key: '' }, names, now)).toBe('it holds no certificate yet');
  });

  it('replaces one missing a needed name', () => {
    expect(unusableBecause(id, [...names, 'stowage-webhook.stowage.svc'], now)).toBe('it does not name stowage-webhook.stowage.svc');
  });

  it('replaces one whose key does not match, or that does not parse', () => {
    const other = createTlsIdentity(names, now);
    expect(unusableBecause({ cert: id.cert, key: other.key }, names, now)).toBe('the key does not match the certificate');
    expect(unusableBecause({ cert: id.cert, key: 'garbage' }, names, now)).toBe('the key does not parse');
    expect(unusableBecause({ cert: '', key: id.key }, names, now)).toBe('the certificate does not parse');
  });
});

describe('liveCertificates', () => {
  it('keeps the certificates of a bundle that have not expired, in order', () => {
    const now = new Date();
    const a = createTlsIdentity(['127.0.0.1'], now);
    const b = createTlsIdentity(['127.0.0.1'], new Date(now.getTime() - 360 * DAY));
    expect(liveCertificates(`${a.cert}${b.cert}`, now)).toEqual([a.cert, b.cert]);
    expect(liveCertificates(`${a.cert}${b.cert}`, new Date(now.getTime() + 10 * DAY))).toEqual([a.cert]);
    expect(liveCertificates('garbage')).toEqual([]);
  });
});

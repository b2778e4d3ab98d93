// Unit tests of the key handling and wrapping: plain functions, no server needed.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { KeyUnavailableError } from 'stowage/plugin-sdk';
import { parseConfig } from '../src/keys.js';
import { unwrap, wrap } from '../src/kms.js';

const k1 = crypto.randomBytes(32);
const k2 = crypto.randomBytes(32);
const config = { currentKeyId: 'k2', 'key.k1': k1.toString('base64'), 'key.k2': k2.toString('hex') };

test('parses inline keys in base64 and hex, and the current key id', () => {
  const { currentKeyId, keys, latencyMs } = parseConfig(config);
  assert.equal(currentKeyId, 'k2');
  assert.deepEqual([...keys.keys()], ['k1', 'k2']);
  assert.deepEqual(keys.get('k1'), k1);
  assert.deepEqual(keys.get('k2'), k2);
  assert.equal(latencyMs, 0);
});

test('reads keys from a key file too', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'file-kms-'));
  try {
    const file = path.join(dir, 'keys.json');
    fs.writeFileSync(file, JSON.stringify({ k3: crypto.randomBytes(32).toString('base64') }));
    const { keys } = parseConfig({ ...config, currentKeyId: 'k3', keyFile: file });
    assert.deepEqual([...keys.keys()].sort(), ['k1', 'k2', 'k3']);
    fs.writeFileSync(file, '{');
    assert.throws(() => parseConfig({ ...config, keyFile: file }), /keyFile .* is not JSON/);
    assert.throws(() => parseConfig({ ...config, keyFile: path.join(dir, 'missing.json') }), /cannot read keyFile .*missing\.json: ENOENT/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('refuses bad configs with every problem named, and never shows a key', () => {
  const bad = { 'key.k1': 'c2hvcnQ=', 'key.bad id': k1.toString('base64'), colour: 'blue', latencyMs: '-1' };
  assert.throws(() => parseConfig(bad), (err) => {
    assert.equal(
      err.message,
      'file-kms: unknown setting "colour" (known: currentKeyId, keyFile, latencyMs, key.<id>); ' +
        'config "key.k1": key "k1" is not 32 bytes in base64 or hex (e.g. openssl rand -base64 32); ' +
        'config "key.bad id": key id "bad id" must be 1-63 letters, digits, \'.\', \'_\' or \'-\'; ' +
        'currentKeyId is not set: name the key new data keys are wrapped with; ' +
        'latencyMs "-1" is not a whole number of milliseconds from 0 to 60000',
    );
    assert.ok(!err.message.includes(k1.toString('base64')));
    return true;
  });
  assert.throws(() => parseConfig({ currentKeyId: 'k9', 'key.k1': k1.toString('base64') }), /currentKeyId "k9" is not among the keys \(k1\)/);
});

test('wraps and unwraps under each listed key; rotation keeps old wrappings readable', () => {
  const { keys } = parseConfig(config);
  const dataKey = crypto.randomBytes(32);
  const old = wrap(keys, 'k1', dataKey, 'backup/a/data-key');
  const cur = wrap(keys, 'k2', dataKey, 'backup/b/data-key');
  assert.equal(cur.length, 1 + 12 + 32 + 16);
  assert.deepEqual(unwrap(keys, 'k1', old, 'backup/a/data-key'), dataKey);
  assert.deepEqual(unwrap(keys, 'k2', cur, 'backup/b/data-key'), dataKey);
});

test('refuses an unknown key id, another context, another key id and altered bytes precisely', () => {
  const { keys } = parseConfig(config);
  const ct = wrap(keys, 'k1', crypto.randomBytes(32), 'backup/a/data-key');
  const refused = (fn, reason, re) =>
    assert.throws(fn, (err) => err instanceof KeyUnavailableError && err.reason === reason && re.test(err.message));
  refused(() => unwrap(keys, 'k0', ct, 'backup/a/data-key'), 'unknown-key', /^file-kms holds no key "k0" \(it holds k1, k2\)/);
  refused(() => unwrap(keys, 'k1', ct, 'backup/other/data-key'), 'wrong-key', /does not open under key "k1"/);
  refused(() => unwrap(keys, 'k2', ct, 'backup/a/data-key'), 'wrong-key', /does not open under key "k2"/);
  const flipped = Buffer.from(ct);
  flipped[20] ^= 1;
  refused(() => unwrap(keys, 'k1', flipped, 'backup/a/data-key'), 'wrong-key', /does not open under key "k1"/);
  refused(() => unwrap(keys, 'k1', ct.subarray(0, 20), 'backup/a/data-key'), 'wrong-key', /is not a file-kms v1 wrapping \(20 bytes\)/);
});

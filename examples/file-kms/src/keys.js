// The key-encryption keys of a file-kms instance, read from its Init config: inline `key.<id>`
// entries and/or a `keyFile` (JSON: {"<id>": "<key>"}), each key 32 bytes as base64 or hex.
// Messages name keys by id and never show key material.
import fs from 'node:fs';

export const KEY_BYTES = 32;
const KEY_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
const KNOWN = new Set(['currentKeyId', 'keyFile', 'latencyMs']);

/** 32 bytes from base64 or hex text, or undefined. */
export function decodeKey(text) {
  const t = String(text).trim();
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Buffer.from(t, 'hex');
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(t)) {
    const b = Buffer.from(t.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    if (b.length === KEY_BYTES) return b;
  }
  return undefined;
}

function readKeyFile(file) {
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`file-kms: cannot read keyFile ${file}: ${err.code ?? err.message}`);
  }
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`file-kms: keyFile ${file} is not JSON (expected {"<key id>": "<base64 or hex of 32 bytes>", ...})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error(`file-kms: keyFile ${file} is not a JSON object of key id to key`);
  }
  return parsed;
}

/**
 * Parses an Init config into { currentKeyId, keys: Map<id, Buffer>, latencyMs }. Throws one error
 * listing every problem: unknown settings are refused, not ignored.
 */
export function parseConfig(config) {
  const problems = [];
  const entries = [];
  for (const [name, value] of Object.entries(config)) {
    if (name.startsWith('key.')) entries.push([name.slice(4), value, `config "${name}"`]);
    else if (!KNOWN.has(name)) problems.push(`unknown setting "${name}" (known: currentKeyId, keyFile, latencyMs, key.<id>)`);
  }
  if (config.keyFile !== undefined && config.keyFile !== '') {
    try {
      for (const [id, value] of Object.entries(readKeyFile(config.keyFile))) entries.push([id, value, `keyFile entry "${id}"`]);
    } catch (err) {
      problems.push(err.message.replace(/^file-kms: /, ''));
    }
  }
  const keys = new Map();
  for (const [id, value, where] of entries) {
    if (!KEY_ID.test(id)) problems.push(`${where}: key id "${id}" must be 1-63 letters, digits, '.', '_' or '-'`);
    else if (keys.has(id)) problems.push(`${where}: key id "${id}" is given twice`);
    else {
      const key = typeof value === 'string' ? decodeKey(value) : undefined;
      if (key === undefined) problems.push(`${where}: key "${id}" is not 32 bytes in base64 or hex (e.g. openssl rand -base64 32)`);
      else keys.set(id, key);
    }
  }
  const currentKeyId = config.currentKeyId ?? '';
  if (currentKeyId === '') problems.push('currentKeyId is not set: name the key new data keys are wrapped with');
  else if (!keys.has(currentKeyId) && !problems.some((p) => p.includes(`"${currentKeyId}"`))) {
    problems.push(`currentKeyId "${currentKeyId}" is not among the keys (${keys.size > 0 ? [...keys.keys()].sort().join(', ') : 'none given'})`);
  }
  let latencyMs = 0;
  if (config.latencyMs !== undefined) {
    latencyMs = Number(config.latencyMs);
    if (!Number.isInteger(latencyMs) || latencyMs < 0 || latencyMs > 60_000) problems.push(`latencyMs "${config.latencyMs}" is not a whole number of milliseconds from 0 to 60000`);
  }
  if (problems.length > 0) throw new Error(`file-kms: ${problems.join('; ')}`);
  return { currentKeyId, keys, latencyMs };
}

// Scrubbing for `stowage debug`: a bundle made to be attached to a bug report must not carry
// Secret data or credentials, whatever the server, a plugin or a user put into the texts and
// objects it gathers. Three layers, each catching what the others may miss:
//   - by value: the values of the Secrets the CLI can read (and the kubeconfig's own credentials),
//     in every form they take in text (util/errors.ts secretForms: plain, base64, JSON-escaped...);
//   - by key: in objects, Secret `data`/`stringData`, and any value under a key that names a
//     credential (token, password, secret, credential, access key...), except references to
//     Secrets (`name`/`key`/`namespace` fields, and keys ending in Name/Ref);
//   - by shape: bearer tokens, AWS access key ids, JWTs, PEM private keys, URL passwords and
//     presigned-URL signatures (util/errors.ts sanitizeMessage), and `key=value` / `key: value`
//     on one line for the same credential key names.
import { REDACTED, sanitizeMessage, secretForms } from '../../util/errors.js';

/** Values shorter than this are not scrubbed by value: a short value would mangle ordinary words. */
export const MIN_SCRUBBED_VALUE = 8;

const SENSITIVE_KEY = /token|passw(?:or)?d|secret|credential|api[_-]?key|private[_-]?key|access[_-]?key|wrapped[_-]?key|authorization|bearer/i;
/** Keys that name a Secret (or a key in it) rather than hold its content. */
const REFERENCE_KEY = /(?:name|ref)$/i;
const REFERENCE_FIELDS = new Set(['name', 'key', 'namespace']);

/** Whether a value under this key is a credential (by its name). */
export function isSensitiveKey(key: string): boolean {
  return SENSITIVE_KEY.test(key) && !REFERENCE_KEY.test(key);
}

// The key names of SENSITIVE_KEY inside a `key=value` or `key: value` on one line (quotes allowed).
const KEY_VALUE_TEXT =
  /\b([\w.-]*(?:token|passw(?:or)?d|secret|credentials?|api[_-]?key|private[_-]?key|access[_-]?key(?:[_-]?id)?)[\w.-]*)(["']?[ \t]*[:=][ \t]*["']?)([^\s"'&,;}\]]+)/gi;

function scrubKeyValues(text: string): string {
  return text.replace(KEY_VALUE_TEXT, (whole, key: string, sep: string) => (REFERENCE_KEY.test(key) ? whole : `${key}${sep}${REDACTED}`));
}

/**
 * Replaces every occurrence of the given values in text. Literal matching indexed by each
 * value's first characters: linear in the text, however many Secrets a cluster holds (one regular
 * expression alternating thousands of values would backtrack through all of them at every position).
 */
export function createValueRedactor(values: Iterable<string>): (text: string) => string {
  const prefix = MIN_SCRUBBED_VALUE;
  // Per first characters: the values, and their distinct lengths longest first (so a value that
  // contains another is replaced whole). Values sharing a prefix cost one lookup per length.
  const byPrefix = new Map<string, { values: Set<string>; lengths: number[] }>();
  for (const v of values) {
    if (v.length < prefix) continue;
    const k = v.slice(0, prefix);
    let b = byPrefix.get(k);
    if (b === undefined) byPrefix.set(k, (b = { values: new Set(), lengths: [] }));
    b.values.add(v);
    if (!b.lengths.includes(v.length)) b.lengths.push(v.length);
  }
  for (const b of byPrefix.values()) b.lengths.sort((a, c) => c - a);
  if (byPrefix.size === 0) return (t) => t;
  return (text) => {
    let out = '';
    let from = 0;
    for (let i = 0; i + prefix <= text.length; ) {
      const b = byPrefix.get(text.slice(i, i + prefix));
      const len = b?.lengths.find((l) => b.values.has(text.slice(i, i + l)));
      if (len === undefined) {
        i++;
        continue;
      }
      out += text.slice(from, i) + REDACTED;
      i += len;
      from = i;
    }
    return from === 0 ? text : out + text.slice(from);
  };
}

/**
 * The strings to scrub for one Secret value: the whole value and, for credential files
 * (`[default]\naws_secret_access_key = ...`, `.env` files, YAML), each line and each value after
 * `=` or `:`, so a key quoted alone is caught too.
 */
export function secretValueParts(value: string): string[] {
  const parts = new Set<string>([value]);
  for (const raw of value.split(/\r?\n/)) {
    const line = raw.trim();
    parts.add(line);
    const m = /^[^=:]*[=:]\s*["']?(.*?)["']?$/.exec(line);
    if (m?.[1] !== undefined) parts.add(m[1].trim());
  }
  return [...parts].filter((p) => p.length >= MIN_SCRUBBED_VALUE);
}

/**
 * Entries of a Secret that are public by design (a service account's CA and namespace, a TLS
 * certificate): scrubbing them by value would blank every mention of a namespace or certificate.
 */
const PUBLIC_SECRET_KEYS = new Set(['ca.crt', 'tls.crt', 'namespace']);

export interface Scrubber {
  /** Scrubs this value (and its encodings) from everything scrubbed afterwards. */
  addSecretValue(value: string): void;
  /** The values of a Secret's `data` (base64) and `stringData`. */
  addSecretData(secret: { data?: Record<string, string>; stringData?: Record<string, string> }): void;
  /** How many distinct values are scrubbed by value. */
  size(): number;
  text(s: string): string;
  /** A scrubbed deep copy of an object (Secret data, credential-named keys, then every string as text). */
  value<T>(v: T): T;
}

export function createScrubber(): Scrubber {
  const values = new Set<string>();
  let byValue: ((t: string) => string) | undefined;
  const forms = (): string[] => [...values].flatMap((v) => secretForms(v));
  const text = (s: string): string => {
    byValue ??= createValueRedactor(forms());
    // By value first: a value that also has a credential's shape is then replaced whole.
    return scrubKeyValues(sanitizeMessage(byValue(s)));
  };
  const walk = (v: unknown, sensitive: boolean, key: string): unknown => {
    if (typeof v === 'string') return sensitive && !REFERENCE_FIELDS.has(key) ? REDACTED : text(v);
    if (Array.isArray(v)) return v.map((x) => walk(x, sensitive, key));
    if (typeof v !== 'object' || v === null) return v;
    const obj = v as Record<string, unknown>;
    const isSecret = obj.kind === 'Secret';
    const out: Record<string, unknown> = {};
    for (const [k, child] of Object.entries(obj)) {
      if (isSecret && (k === 'data' || k === 'stringData') && typeof child === 'object' && child !== null) {
        out[k] = Object.fromEntries(Object.keys(child).map((dk) => [dk, REDACTED]));
        continue;
      }
      out[k] = walk(child, sensitive || isSensitiveKey(k), k);
    }
    return out;
  };
  const add = (value: string): void => {
    for (const p of secretValueParts(value)) {
      if (!values.has(p)) byValue = undefined;
      values.add(p);
    }
  };
  return {
    addSecretValue: add,
    addSecretData(secret) {
      for (const [k, b64] of Object.entries(secret.data ?? {})) {
        if (typeof b64 !== 'string' || PUBLIC_SECRET_KEYS.has(k)) continue;
        add(Buffer.from(b64, 'base64').toString('utf8'));
        // The stored form too: a dump of the Secret as the API returns it shows base64.
        add(b64);
      }
      for (const [k, v] of Object.entries(secret.stringData ?? {})) if (typeof v === 'string' && !PUBLIC_SECRET_KEYS.has(k)) add(v);
    },
    size: () => values.size,
    text,
    value: <T>(v: T): T => walk(v, false, '') as T,
  };
}

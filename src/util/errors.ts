// Error text helpers, and scrubbing of credentials out of text bound for logs and status.

export const REDACTED = '[REDACTED]';

/** A readable one-line message for anything thrown; follows `cause` chains and AggregateErrors. */
export function errorMessage(err: unknown): string {
  return describe(err, new Set());
}

function describe(err: unknown, seen: Set<unknown>): string {
  if (err === null || err === undefined) return 'unknown error';
  if (typeof err === 'string') return err || 'unknown error';
  if (typeof err !== 'object') return String(err);
  if (seen.has(err)) return '';
  seen.add(err);
  if (err instanceof Error) {
    let msg = err.message || err.name || 'unknown error';
    if (err instanceof AggregateError && err.errors.length > 0) {
      const parts = err.errors.map((e) => describe(e, seen)).filter((p) => p !== '');
      if (parts.length > 0) msg = `${msg}: ${parts.join('; ')}`;
    }
    if (err.cause !== undefined) {
      const cause = describe(err.cause, seen);
      // Many wrappers already embed the cause's text; repeating it only adds noise.
      if (cause !== '' && !msg.includes(cause)) msg = `${msg}: ${cause}`;
    }
    return msg;
  }
  const m = (err as { message?: unknown }).message;
  if (typeof m === 'string' && m !== '') return m;
  try {
    return JSON.stringify(err) ?? String(err);
  } catch {
    return String(err);
  }
}

/**
 * Forms under which a secret value may show up in text: as is, base64 (how Secret.data holds it),
 * base64url, JSON-escaped (inside serialised objects) and URL-encoded.
 */
export function secretForms(secret: string): string[] {
  if (secret === '') return [];
  const buf = Buffer.from(secret, 'utf8');
  const forms = new Set<string>([
    secret,
    buf.toString('base64'),
    buf.toString('base64').replace(/=+$/, ''),
    buf.toString('base64url'),
    JSON.stringify(secret).slice(1, -1),
    encodeURIComponent(secret),
  ]);
  forms.delete('');
  return [...forms];
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Compiles a scrubber for a fixed set of secrets; reuse it when scrubbing many strings. */
export function createRedactor(secrets: Iterable<string>): (text: string) => string {
  const forms = new Set<string>();
  for (const s of secrets) for (const f of secretForms(s)) forms.add(f);
  if (forms.size === 0) return (text) => text;
  // Longest first, so a secret that contains another is replaced whole.
  const sorted = [...forms].sort((a, b) => b.length - a.length).map(escapeRegExp);
  const re = new RegExp(sorted.join('|'), 'g');
  return (text) => text.replace(re, REDACTED);
}

/** Replaces every secret (and its encoded forms, see secretForms) in text with [REDACTED]. */
export function redact(text: string, secrets: readonly string[]): string {
  return createRedactor(secrets)(text);
}

const CREDENTIAL_PATTERNS: ReadonlyArray<[RegExp, string]> = [
  // scheme://user:password@host -> scheme://[REDACTED]@host
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@?#]+@/gi, `$1${REDACTED}@`],
  // Presigned-URL and SAS credentials in query strings.
  [
    /([?&](?:x-amz-signature|x-amz-credential|x-amz-security-token|signature|awsaccesskeyid|x-goog-signature|x-goog-credential|sig|access_token|token)=)[^&\s"'#]*/gi,
    `$1${REDACTED}`,
  ],
  // Authorization header values, whatever the scheme.
  [/\b(authorization\s*[:=]\s*)(?:[A-Za-z]+\s+)?[^\s,;"']+/gi, `$1${REDACTED}`],
  [/\b(bearer\s+)[A-Za-z0-9._~+/-]{8,}=*/gi, `$1${REDACTED}`],
  // key=value / key: value / "key":"value" for credential-named keys.
  [
    /\b(password|passwd|aws_secret_access_key|secret_?access_?key|secret_?key|session_?token|client_?secret|api_?key|private_?key)(["']?\s*[:=]\s*["']?)[^\s"'&,;}]+/gi,
    `$1$2${REDACTED}`,
  ],
  // AWS access key ids.
  [/\b(?:AKIA|ASIA)[A-Z0-9]{16}\b/g, REDACTED],
  // JWTs (service-account tokens).
  [/\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]+/g, REDACTED],
  // PEM private keys.
  [/-----BEGIN ([A-Z ]*)PRIVATE KEY-----[\s\S]*?-----END \1PRIVATE KEY-----/g, REDACTED],
];

const MIGHT_HOLD_CREDENTIALS = /[:=@]|AKIA|ASIA|eyJ|bearer|PRIVATE KEY/i;

/**
 * Strips well-known credential shapes from a message before it reaches status, events or logs:
 * URL userinfo, presigned-URL signatures, Authorization/Bearer values, password-like key=value
 * pairs, AWS access key ids, JWTs and PEM private keys.
 */
export function sanitizeMessage(text: string): string {
  // Every pattern needs one of these; most log text has none, so skip the full pass cheaply.
  if (!MIGHT_HOLD_CREDENTIALS.test(text)) return text;
  let out = text;
  for (const [re, replacement] of CREDENTIAL_PATTERNS) out = out.replace(re, replacement);
  return out;
}

/** errorMessage + sanitizeMessage + redact: the text to put into a status field or event. */
export function safeErrorMessage(err: unknown, secrets: readonly string[] = []): string {
  return redact(sanitizeMessage(errorMessage(err)), secrets);
}

/**
 * What is wrong with text JSON.parse refused, without quoting it: V8's messages can carry a
 * snippet of the input, and the input may be a Secret.
 */
export function jsonSyntaxProblem(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const position = /at position (\d+)/.exec(message)?.[1];
  if (message.startsWith('Unexpected end of JSON input')) return 'the text ends too early';
  return position !== undefined ? `syntax error at character ${position}` : 'syntax error';
}

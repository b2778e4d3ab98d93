// Reading a manifest as a stream. A restore checks the tarball against the manifest while it reads
// the tarball; the writer puts the manifest's entries in the tarball's order, so each tarball entry
// is matched by the next manifest entry and neither side is ever held whole. At 50,000 objects the
// parsed manifest was ~22 MB of heap (plus its 13 MB of text while parsing), at the moment the
// restore's own index was largest. Entries out of order still work: those read ahead wait in a table.
import { StringDecoder } from 'node:string_decoder';
import { manifestFindings, parseManifest, type ManifestFindings } from './manifest.js';

type Punct = '{' | '}' | '[' | ']' | ':' | ',';
type Token = { t: Punct } | { t: 's'; v: string } | { t: 'v'; v: unknown; raw: string };

const PUNCT: Record<string, Token> = Object.fromEntries(['{', '}', '[', ']', ':', ','].map((p) => [p, { t: p as Punct }]));
const SCALAR_CHAR = /[0-9A-Za-z+\-.]/;
/** A member other than `entries` (formatVersion, tarball) is small; bigger is not a manifest. */
const MAX_MEMBER_CHARS = 64 * 1024;
const MAX_DEPTH = 32;

class MalformedManifest extends Error {
  constructor(why: string) {
    super(`the backup manifest is malformed: ${why}`);
  }
}

/** Splits JSON text, fed in pieces, into tokens. Strings and scalars may span pieces. */
class Lexer {
  private mode: 'none' | 'string' | 'scalar' = 'none';
  private buf = '';
  private escaped = false;
  private hasEscape = false;

  feed(s: string, out: Token[]): void {
    let i = 0;
    while (i < s.length) {
      if (this.mode === 'string') {
        let j = i;
        for (; j < s.length; j++) {
          const c = s.charCodeAt(j);
          if (this.escaped) this.escaped = false;
          else if (c === 0x5c) this.escaped = this.hasEscape = true;
          else if (c === 0x22) break;
          else if (c < 0x20) throw new MalformedManifest('a control character in a string');
        }
        this.buf += s.slice(i, j);
        if (j === s.length) return;
        out.push({ t: 's', v: this.hasEscape ? this.unescape(this.buf) : this.buf });
        this.buf = '';
        this.mode = 'none';
        i = j + 1;
        continue;
      }
      if (this.mode === 'scalar') {
        let j = i;
        while (j < s.length && SCALAR_CHAR.test(s[j] as string)) j++;
        this.buf += s.slice(i, j);
        if (j === s.length) return;
        this.scalar(out);
        i = j;
        continue;
      }
      const ch = s[i] as string;
      if (ch === ' ' || ch === '\n' || ch === '\r' || ch === '\t') i++;
      else if (ch === '"') {
        this.mode = 'string';
        this.escaped = this.hasEscape = false;
        i++;
      } else if (PUNCT[ch] !== undefined) {
        out.push(PUNCT[ch]);
        i++;
      } else if (SCALAR_CHAR.test(ch)) this.mode = 'scalar';
      else throw new MalformedManifest(`unexpected character ${JSON.stringify(ch)}`);
    }
  }

  end(out: Token[]): void {
    if (this.mode === 'string') throw new MalformedManifest('it ends inside a string');
    if (this.mode === 'scalar') this.scalar(out);
  }

  private unescape(raw: string): string {
    try {
      return JSON.parse(`"${raw}"`) as string;
    } catch {
      throw new MalformedManifest('a string with an invalid escape');
    }
  }

  private scalar(out: Token[]): void {
    const raw = this.buf;
    this.buf = '';
    this.mode = 'none';
    let v: unknown;
    try {
      v = JSON.parse(raw);
    } catch {
      throw new MalformedManifest(`${JSON.stringify(raw.slice(0, 20))} is not a JSON value`);
    }
    out.push({ t: 'v', v, raw });
  }
}

/** The manifest's members besides `entries`, once the whole stream was read. */
export interface ManifestHead {
  formatVersion: string;
  tarball: { sha256: string; bytes: number };
}

/**
 * A manifest read from its (inflated) JSON bytes: `next()` gives its entries in order, `head()` the
 * rest once every entry was taken. Any syntax error or wrong shape fails with "the backup manifest is
 * malformed: ..." as the whole-manifest parser does.
 */
export class ManifestStream {
  private readonly it: AsyncIterator<Uint8Array>;
  private readonly decoder = new StringDecoder('utf8');
  private readonly lexer = new Lexer();
  private tokens: Token[] = [];
  private ti = 0;
  private done = false;
  // Parser state: where in the top-level object, the member being read, and the entries' state.
  private state: 'start' | 'key' | 'colon' | 'value' | 'next' | 'end' = 'start';
  private member = '';
  private captured = '';
  private depth = 0;
  private readonly members = new Map<string, unknown>();
  private entries: 'none' | 'key' | 'colon' | 'value' | 'next' | 'done' = 'none';
  private entryKey = '';

  constructor(source: AsyncIterable<Uint8Array>) {
    this.it = source[Symbol.asyncIterator]();
  }

  /** The next entry as [path, sha256], or undefined after the last. */
  async next(): Promise<readonly [string, string] | undefined> {
    for (;;) {
      while (this.ti < this.tokens.length) {
        const e = this.step(this.tokens[this.ti++] as Token);
        if (e !== undefined) return e;
      }
      if (this.done) {
        if (this.state !== 'end') throw new MalformedManifest('it ends before its closing brace');
        return undefined;
      }
      this.tokens = [];
      this.ti = 0;
      const r = await this.it.next();
      if (r.done === true) {
        this.lexer.feed(this.decoder.end(), this.tokens);
        this.lexer.end(this.tokens);
        this.done = true;
      } else {
        this.lexer.feed(this.decoder.write(r.value), this.tokens);
      }
    }
  }

  /** formatVersion and tarball, checked as parseManifest checks a whole manifest; call after next() gave undefined. */
  head(): ManifestHead {
    const entries = this.entries === 'none' ? undefined : {};
    const { formatVersion, tarball } = parseManifest({ ...Object.fromEntries(this.members), entries });
    return { formatVersion, tarball: { sha256: tarball.sha256, bytes: tarball.bytes } };
  }

  /** Stops reading (the source's stream is closed). */
  async close(): Promise<void> {
    this.tokens = [];
    this.ti = 0;
    this.done = true;
    this.state = 'end';
    await this.it.return?.();
  }

  private step(tok: Token): readonly [string, string] | undefined {
    if (this.entries !== 'none' && this.entries !== 'done') return this.entryStep(tok);
    switch (this.state) {
      case 'start':
        if (tok.t !== '{') throw new MalformedManifest('not an object');
        this.state = 'key';
        return undefined;
      case 'key':
        if (tok.t === '}' && this.members.size === 0 && this.entries === 'none') return this.ended();
        if (tok.t !== 's') throw new MalformedManifest('expected a member name');
        this.member = tok.v;
        this.state = 'colon';
        return undefined;
      case 'colon':
        if (tok.t !== ':') throw new MalformedManifest(`expected ":" after "${this.member}"`);
        this.state = 'value';
        return undefined;
      case 'value':
        if (this.member === 'entries' && this.depth === 0) {
          if (this.entries !== 'none') throw new MalformedManifest('entries appears twice');
          if (tok.t !== '{') throw new MalformedManifest('entries is missing');
          this.entries = 'key';
          return undefined;
        }
        this.capture(tok);
        return undefined;
      case 'next':
        if (tok.t === '}') return this.ended();
        if (tok.t !== ',') throw new MalformedManifest('expected "," or "}" between members');
        this.state = 'key';
        return undefined;
      case 'end':
        throw new MalformedManifest('more after its closing brace');
    }
  }

  private ended(): undefined {
    this.state = 'end';
    return undefined;
  }

  /** Collects a member other than entries as JSON text, parsed when complete. */
  private capture(tok: Token): void {
    const text = tok.t === 's' ? JSON.stringify(tok.v) : tok.t === 'v' ? tok.raw : tok.t;
    this.captured += text;
    if (this.captured.length > MAX_MEMBER_CHARS) throw new MalformedManifest(`member "${this.member}" is over ${MAX_MEMBER_CHARS} characters`);
    if (tok.t === '{' || tok.t === '[') {
      if (++this.depth > MAX_DEPTH) throw new MalformedManifest(`member "${this.member}" nests deeper than ${MAX_DEPTH}`);
    } else if (tok.t === '}' || tok.t === ']') this.depth--;
    if (this.depth > 0) return;
    try {
      this.members.set(this.member, JSON.parse(this.captured));
    } catch {
      throw new MalformedManifest(`member "${this.member}" is not valid JSON`);
    }
    this.captured = '';
    this.state = 'next';
  }

  private entryStep(tok: Token): readonly [string, string] | undefined {
    switch (this.entries) {
      case 'key':
        if (tok.t === '}') return this.entriesDone();
        if (tok.t !== 's') throw new MalformedManifest('expected a path in entries');
        this.entryKey = tok.v;
        this.entries = 'colon';
        return undefined;
      case 'colon':
        if (tok.t !== ':') throw new MalformedManifest(`expected ":" after entry ${this.entryKey}`);
        this.entries = 'value';
        return undefined;
      case 'value':
        if (tok.t !== 's') throw new MalformedManifest(`entry ${this.entryKey} has no checksum`);
        this.entries = 'next';
        return [this.entryKey, tok.v];
      default:
        if (tok.t === '}') return this.entriesDone();
        if (tok.t !== ',') throw new MalformedManifest('expected "," or "}" between entries');
        this.entries = 'key';
        return undefined;
    }
  }

  private entriesDone(): undefined {
    this.entries = 'done';
    this.state = 'next';
    return undefined;
  }
}

/** A check of tarball entries against a manifest that may need to read more of it first. */
export interface AsyncManifestCheck {
  entry(path: string, sha256: string): void | Promise<void>;
  finish(tarball: { sha256: string }): string[] | Promise<string[]>;
  /** Stops reading the manifest, when the check reads one. */
  close?(): Promise<void>;
}

/**
 * manifestCheck's findings, in the same words, from a ManifestStream. `what` names the manifest in
 * errors reading it ("the manifest of backup b1").
 */
export function streamingManifestCheck(stream: ManifestStream, what: string, max = 10): Required<AsyncManifestCheck> {
  // Manifest entries read ahead of the tarball: empty while both are in the writer's order.
  const ahead = new Map<string, string>();
  const found: ManifestFindings = manifestFindings(max);
  const fail = (err: unknown): never => {
    throw new Error(`cannot read ${what}: ${(err as Error).message}`, { cause: err });
  };
  const next = (): Promise<readonly [string, string] | undefined> => stream.next().catch(fail);
  return {
    async entry(path, sha256) {
      let want = ahead.get(path);
      if (want !== undefined) ahead.delete(path);
      else {
        for (let e = await next(); e !== undefined; e = await next()) {
          if (e[0] === path) {
            want = e[1];
            break;
          }
          ahead.set(e[0], e[1]);
        }
      }
      found.entry(path, sha256, want);
    },
    async finish(tarball) {
      for (let e = await next(); e !== undefined; e = await next()) ahead.set(e[0], e[1]);
      let head: ManifestHead;
      try {
        head = stream.head();
      } catch (err) {
        return fail(err);
      }
      for (const path of ahead.keys()) found.missing(path);
      ahead.clear();
      return found.list(tarball.sha256, head.tarball.sha256);
    },
    close: () => stream.close(),
  };
}

import { describe, expect, it } from 'vitest';
import { manifestCheck, type BackupManifest } from './manifest.js';
import { ManifestStream, streamingManifestCheck } from './manifestStream.js';

const sha = (c: string): string => c.repeat(64);
const MANIFEST: BackupManifest = {
  formatVersion: '1.1.0',
  tarball: { sha256: sha('f'), bytes: 1234 },
  entries: {
    'metadata/version': sha('0'),
    'resources/configmaps/namespaces/app/cfg.json': sha('1'),
    'resources/configmaps/v1-preferredversion/namespaces/app/cfg.json': sha('1'),
    // Escapes and characters beyond ASCII, split across chunks below.
    'resources/widgets.example.com/namespaces/app/\u00e9t\u00e9-\u2603-"q"\\.json': sha('2'),
  },
};

/** The text in pieces of `size` bytes: every boundary, including inside multi-byte characters and escapes. */
async function* pieces(text: string, size: number): AsyncGenerator<Uint8Array> {
  const bytes = Buffer.from(text, 'utf8');
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function all(stream: ManifestStream): Promise<[string, string][]> {
  const out: [string, string][] = [];
  for (let e = await stream.next(); e !== undefined; e = await stream.next()) out.push([e[0], e[1]]);
  return out;
}

async function streamed(manifest: BackupManifest, tarball: [string, string][], tarballSha: string, size = 7): Promise<string[]> {
  const check = streamingManifestCheck(new ManifestStream(pieces(JSON.stringify(manifest, null, size % 2 === 0 ? 1 : 0), size)), 'the manifest of backup b');
  for (const [p, s] of tarball) await check.entry(p, s);
  return check.finish({ sha256: tarballSha });
}

function whole(manifest: BackupManifest, tarball: [string, string][], tarballSha: string): string[] {
  const check = manifestCheck(manifest);
  for (const [p, s] of tarball) check.entry(p, s);
  return check.finish({ sha256: tarballSha });
}

const failure = async (text: string): Promise<string> => {
  const check = streamingManifestCheck(new ManifestStream(pieces(text, 3)), 'the manifest of backup b');
  const err = await (async () => {
    await check.entry('metadata/version', sha('0'));
    await check.finish({ sha256: sha('f') });
  })().then(() => undefined, (e: unknown) => e);
  return err instanceof Error ? err.message : 'no error';
};

describe('ManifestStream', () => {
  it('gives the entries in order and the head, whatever the chunk boundaries and whitespace', async () => {
    for (const size of [1, 2, 3, 5, 64, 100_000]) {
      const s = new ManifestStream(pieces(JSON.stringify(MANIFEST, null, size % 2), size));
      expect(await all(s)).toEqual(Object.entries(MANIFEST.entries));
      expect(s.head()).toEqual({ formatVersion: '1.1.0', tarball: MANIFEST.tarball });
    }
  });

  it('reads members in any order and ignores members it does not know', async () => {
    const text = `{"entries":{"a":"${sha('1')}"},"extra":[1,{"x":null}],"tarball":{"bytes":1,"sha256":"s"},"formatVersion":"1.0.0"}`;
    const s = new ManifestStream(pieces(text, 4));
    expect(await all(s)).toEqual([['a', sha('1')]]);
    expect(s.head()).toEqual({ formatVersion: '1.0.0', tarball: { sha256: 's', bytes: 1 } });
  });

  it('reads no further into the manifest than the tarball has come, while both are in order', async () => {
    const entries = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`resources/c/namespaces/n/o${i}.json`, sha('a')]));
    const text = JSON.stringify({ ...MANIFEST, entries });
    let pulled = 0;
    const counted = async function* (): AsyncGenerator<Uint8Array> {
      for await (const c of pieces(text, 16)) {
        pulled += c.byteLength;
        yield c;
      }
    };
    const check = streamingManifestCheck(new ManifestStream(counted()), 'm');
    for (const [i, p] of Object.keys(entries).entries()) {
      await check.entry(p, sha('a'));
      // The entry just checked ends within the bytes pulled, and at most one chunk lies beyond it.
      const end = text.indexOf(p) + p.length + 70;
      expect(pulled).toBeLessThanOrEqual(end + 16);
      if (i === 10) expect(pulled).toBeLessThan(text.length / 2);
    }
    expect(await check.finish({ sha256: sha('f') })).toEqual([]);
  });
});

describe('streamingManifestCheck', () => {
  const inOrder = Object.entries(MANIFEST.entries);
  const cases: [string, [string, string][], string][] = [
    ['intact', inOrder, sha('f')],
    ['out of order', [...inOrder].reverse(), sha('f')],
    ['a changed entry', inOrder.map(([p, s], i) => [p, i === 1 ? sha('9') : s]), sha('f')],
    ['an extra entry in the middle', [...inOrder.slice(0, 2), ['resources/x/cluster/added.json', sha('3')], ...inOrder.slice(2)], sha('f')],
    ['a missing entry', inOrder.filter((_, i) => i !== 2), sha('f')],
    ['another tarball', inOrder, sha('e')],
    ['more differences than the cap', Array.from({ length: 14 }, (_, i) => [`resources/x/cluster/n${i}.json`, sha('3')]), sha('e')],
  ];
  for (const [what, tarball, tarballSha] of cases) {
    it(`says what manifestCheck says: ${what}`, async () => {
      const want = whole(MANIFEST, tarball, tarballSha);
      expect(await streamed(MANIFEST, tarball, tarballSha)).toEqual(want);
      expect(await streamed(MANIFEST, tarball, tarballSha, 2)).toEqual(want);
      if (what === 'intact' || what === 'out of order') expect(want).toEqual([]);
      else expect(want.length).toBeGreaterThan(0);
    });
  }

  it('fails on a malformed manifest with what is wrong and which manifest it is', async () => {
    const ok = JSON.stringify(MANIFEST);
    const cases: [string, string][] = [
      ['[]', 'not an object'],
      ['{"formatVersion":"1.1.0","tarball":{"sha256":"s","bytes":1}}', 'entries is missing'],
      ['{"entries":[]}', 'entries is missing'],
      [`{"entries":{"metadata/version":"${sha('0')}","b":1}}`, 'entry b has no checksum'],
      [`{"entries":{"metadata/version":"${sha('0')}"}}`, 'formatVersion is missing'],
      [`{"formatVersion":"1","entries":{"metadata/version":"${sha('0')}"},"tarball":{"sha256":"s"}}`, 'tarball is missing'],
      [ok.slice(0, -30), 'it ends inside a string'],
      [ok.slice(0, -1), 'it ends before its closing brace'],
      [`${ok} {}`, 'more after its closing brace'],
      [ok.replace('"tarball"', '"tar\\qball"'), 'a string with an invalid escape'],
      [ok.replace('metadata/version', 'metadata/\u0001version'), 'a control character in a string'],
      [ok.replace('1234', '12x34'), '"12x34" is not a JSON value'],
      [ok.replace('{', '{{'), 'expected a member name'],
      [`{"entries":{"a":"b"},"entries":{}}`, 'entries appears twice'],
      [`{"big":"${'x'.repeat(70_000)}"}`, 'member "big" is over 65536 characters'],
      [`{"deep":${'['.repeat(40)}`, 'member "deep" nests deeper than 32'],
      ['{"x" 1}', 'expected ":" after "x"'],
      ['{"x":1 "y":2}', 'expected "," or "}" between members'],
      ['{"entries":{"a" "b"}}', 'expected ":" after entry a'],
      ['{"entries":{"a":"b" "c":"d"}}', 'expected "," or "}" between entries'],
      ['{"entries":{1:"b"}}', 'expected a path in entries'],
      ['{"x": @}', 'unexpected character "@"'],
    ];
    for (const [text, why] of cases) {
      expect(await failure(text), text.slice(0, 60)).toBe(`cannot read the manifest of backup b: the backup manifest is malformed: ${why}`);
    }
  });

  it('closes the source when the restore stops early', async () => {
    let closed = false;
    const source = async function* (): AsyncGenerator<Uint8Array> {
      try {
        yield* pieces(JSON.stringify(MANIFEST), 8);
      } finally {
        closed = true;
      }
    };
    const check = streamingManifestCheck(new ManifestStream(source()), 'm');
    await check.entry('metadata/version', sha('0'));
    expect(closed).toBe(false);
    await check.close();
    expect(closed).toBe(true);
  });
});

// Velero's glob for a condition's groupResource (gobwas/glob with "." as the separator): `*` is any
// run of characters without a dot, `**` any run at all, `?` one character other than a dot,
// `[abc]`, `[a-z]`, `[!abc]` a character class, `{a,b}` alternatives, `\` escapes. The whole name
// must match. So `*` is every core resource, `*.apps` every resource of apps, and `*.*` every
// resource of a one-word group (apps, batch, policy) but not of `networking.k8s.io`: use `**`.

const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');

/** The glob as an anchored RegExp; throws on an unclosed `[` or `{`. */
export function compileGroupResourceGlob(pattern: string): RegExp {
  let i = 0;
  const parse = (inBraces: boolean): string => {
    let out = '';
    while (i < pattern.length) {
      const c = pattern[i] as string;
      if (inBraces && (c === ',' || c === '}')) return out;
      i++;
      if (c === '\\') {
        if (i >= pattern.length) throw new Error(`"${pattern}": a "\\" at the end escapes nothing`);
        out += escapeRe(pattern[i++] as string);
      } else if (c === '*') {
        if (pattern[i] === '*') {
          i++;
          out += '.*';
        } else out += '[^.]*';
      } else if (c === '?') out += '[^.]';
      else if (c === '[') {
        const end = pattern.indexOf(']', i);
        if (end < 0) throw new Error(`"${pattern}": "[" is never closed`);
        let body = pattern.slice(i, end);
        i = end + 1;
        const negate = body.startsWith('!');
        if (negate) body = body.slice(1);
        if (body === '') throw new Error(`"${pattern}": an empty character class`);
        const cls = body.replace(/[\\\]^[]/g, '\\$&');
        out += negate ? `[^${cls}]` : `[${cls}]`;
      } else if (c === '{') {
        const alts: string[] = [];
        for (;;) {
          alts.push(parse(true));
          if (i >= pattern.length) throw new Error(`"${pattern}": "{" is never closed`);
          const sep = pattern[i++];
          if (sep === '}') break;
        }
        out += `(?:${alts.join('|')})`;
      } else out += escapeRe(c);
    }
    if (inBraces) throw new Error(`"${pattern}": "{" is never closed`);
    return out;
  };
  return new RegExp(`^${parse(false)}$`);
}

import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ESLint } from 'eslint';
import { ALLOWED, layerOf } from './layers.js';

const root = path.resolve(import.meta.dirname, '../..');
const src = path.join(root, 'src');

describe('layerOf', () => {
  it('maps files to their layer', () => {
    expect(layerOf(path.join(src, 'main.ts'), src)).toBe('main');
    expect(layerOf(path.join(src, 'backup', 'request.ts'), src)).toBe('backup');
    expect(layerOf(path.join(src, 'plugin', 'host', 'pool.ts'), src)).toBe('plugin/host');
    expect(layerOf(path.join(root, 'test', 'x.ts'), src)).toBeNull();
  });
});

describe('stowage/layers rule', () => {
  const lint = async (file: string, code: string): Promise<string[]> => {
    const eslint = new ESLint({ cwd: root });
    const [result] = await eslint.lintText(code, { filePath: path.join(src, file) });
    return (result?.messages ?? []).filter((m) => m.ruleId === 'stowage/layers').map((m) => m.message);
  };

  it('rejects an upward import', async () => {
    const msgs = await lint('backup/x.ts', "import { a } from '../controller/y.js';\nexport const b = a;\n");
    expect(msgs).toEqual([expect.stringContaining("layer 'backup' must not import layer 'controller'")]);
  });

  it('rejects importing generated code outside plugin/grpc', async () => {
    const msgs = await lint('plugin/host/x.ts', "import { a } from '../../gen/y.js';\nexport const b = a;\n");
    expect(msgs).toEqual([expect.stringContaining("must not import layer 'gen'")]);
  });

  it('allows a downward import', async () => {
    expect(await lint('controller/x.ts', "import { a } from '../backup/y.js';\nexport const b = a;\n")).toEqual([]);
  });
});

describe('the layer table', () => {
  const lint = async (file: string, spec: string): Promise<string[]> => {
    const eslint = new ESLint({ cwd: root });
    const [result] = await eslint.lintText(`import { a } from '${spec}';\nexport const b = a;\n`, { filePath: path.join(src, file) });
    return (result?.messages ?? []).filter((m) => m.ruleId === 'stowage/layers').map((m) => m.message);
  };

  it('keeps the engines to the store they are handed, and the CLI off controller files', async () => {
    for (const engine of ['backup', 'restore']) {
      for (const spec of ['../plugin/host/y.js', '../encryption/y.js', '../signing/y.js', '../runtime/y.js', '../controller/y.js']) {
        expect(await lint(`${engine}/x.ts`, spec)).toEqual([expect.stringContaining(`layer '${engine}' must not import`)]);
      }
    }
    expect(await lint('cli/commands/x.ts', '../../controller/y.js')).toEqual([expect.stringContaining("layer 'cli' must not import layer 'controller'")]);
  });

  it('grants only the edges the code uses', () => {
    const used = new Set<string>();
    const scan = (dir: string): void => {
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) scan(p);
        else if (p.endsWith('.ts')) {
          const from = layerOf(p, src);
          for (const m of fs.readFileSync(p, 'utf8').matchAll(/(?:from|import)\s*\(?\s*['"](\.\.?\/[^'"]+)['"]/g)) {
            const to = layerOf(path.resolve(path.dirname(p), m[1] ?? ''), src);
            if (to !== null && to !== from) used.add(`${from} -> ${to}`);
          }
        }
      }
    };
    scan(src);
    const unused = Object.entries(ALLOWED).flatMap(([from, tos]) => tos.map((to) => `${from} -> ${to}`)).filter((edge) => !used.has(edge));
    expect(unused).toEqual([]);
  });
});

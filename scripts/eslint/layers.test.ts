import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ESLint } from 'eslint';
import { layerOf } from './layers.js';

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

// Builds the benchmark plugin into a plugin directory for `stowage server --plugin-dir`: the
// TypeScript sources are compiled to ESM next to each other, the SDK import is pointed at the built
// SDK (dist/plugin/sdk), and the entry point becomes an executable script, which is what the
// server's plugin registry discovers.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';

const SDK_SOURCE = '../../src/plugin/sdk/index.js';
const SOURCES = ['plugin.ts', 'names.ts'];

/**
 * Writes the plugin into `dir`, against the SDK of the build in `dist`, and returns the path of its
 * executable. With `nodeArgs` (e.g. --cpu-prof) the executable is a shell launcher passing them to
 * node: the server starts plugins with a minimal environment, so NODE_OPTIONS cannot reach them.
 */
export function buildBenchPlugin(dir: string, dist: string, nodeArgs: readonly string[] = []): string {
  const sdkBuilt = path.join(dist, 'plugin/sdk/index.js');
  if (!fs.existsSync(sdkBuilt)) throw new Error(`${sdkBuilt} is missing: run npm run build first`);
  const lib = path.join(dir, 'bench-plugin');
  fs.mkdirSync(lib, { recursive: true });
  fs.writeFileSync(path.join(lib, 'package.json'), JSON.stringify({ type: 'module' }));
  for (const file of SOURCES) {
    const source = fs.readFileSync(path.join(import.meta.dirname, file), 'utf8');
    const out = ts.transpileModule(source, {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true },
      fileName: file,
    }).outputText;
    if (file === 'plugin.ts' && !out.includes(`'${SDK_SOURCE}'`)) throw new Error(`bench/plugin/plugin.ts no longer imports ${SDK_SOURCE}`);
    const js = out.replaceAll(`'${SDK_SOURCE}'`, `'${pathToFileURL(sdkBuilt).href}'`);
    const target = path.join(lib, file.replace(/\.ts$/, '.js'));
    if (file === 'plugin.ts') {
      fs.writeFileSync(target, `#!${process.execPath}\n${js}`);
      fs.chmodSync(target, 0o755);
    } else {
      fs.writeFileSync(target, js);
    }
  }
  const entry = path.join(lib, 'plugin.js');
  if (nodeArgs.length === 0) return entry;
  fs.chmodSync(entry, 0o644); // only the launcher may be discovered
  const launcher = path.join(dir, 'bench-plugin-launcher');
  const quote = (a: string): string => `'${a.replaceAll("'", "'\\''")}'`;
  fs.writeFileSync(launcher, `#!/bin/sh\nexec ${[process.execPath, ...nodeArgs, entry].map(quote).join(' ')}\n`);
  fs.chmodSync(launcher, 0o755);
  return launcher;
}

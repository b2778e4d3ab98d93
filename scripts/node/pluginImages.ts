// Plugin images for the real node, made the way a third-party plugin would ship for the chart's
// `initContainers` (Velero's pattern): a small image holding the plugin executable under /plugins,
// whose entrypoint copies it into /target, the pod's shared plugins volume. A Node plugin ships as
// one file: esbuild bundles the entry point with the SDK and its dependencies, so the server's own
// node runs it with no node_modules beside it.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import { addBusybox, addEtc, cachedImage } from './images.js';

const REPO = path.resolve(import.meta.dirname, '../..');

export interface PluginImageSpec {
  /** Image name in the node's runtime (local.invalid/..., never pulled). */
  image: string;
  /** The plugin's entry point (an executable module importing `stowage/plugin-sdk`). */
  entry: string;
  /** The executable's file name in /plugins and, once copied, in the server's /plugins. */
  file: string;
}

/** examples/plugin-example: a BackupItemAction and a RestoreItemAction for ConfigMaps. */
export const EXAMPLE_PLUGIN: PluginImageSpec = {
  image: 'local.invalid/stowage-plugin-example:0.1.0',
  entry: path.join(REPO, 'examples/plugin-example/bin/stowage-plugin-example.js'),
  file: 'stowage-plugin-example.mjs',
};

/** test/incluster/fixtures/hold-plugin.mjs: holds a backup InProgress (the failover test). */
export const HOLD_PLUGIN: PluginImageSpec = {
  image: 'local.invalid/stowage-plugin-hold:test',
  entry: path.join(REPO, 'test/incluster/fixtures/hold-plugin.mjs'),
  file: 'stowage-plugin-hold.mjs',
};

/** Bundles a plugin into one executable ESM file (with `#!/usr/bin/env node`, kept from the entry or added). */
export async function bundlePlugin(entry: string, out: string): Promise<void> {
  await build({
    entryPoints: [entry],
    outfile: out,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // The SDK from this checkout's source: the same code the image's server speaks to.
    alias: { 'stowage/plugin-sdk': path.join(REPO, 'src/plugin/sdk/index.ts') },
    // Bundled CommonJS dependencies (grpc-js) call require(); an ES module has none of its own.
    banner: { js: "import { createRequire as stowageCreateRequire } from 'node:module'; const require = stowageCreateRequire(import.meta.url);" },
    logLevel: 'error',
  });
  const text = fs.readFileSync(out, 'utf8');
  if (!text.startsWith('#!')) fs.writeFileSync(out, `#!/usr/bin/env node\n${text}`);
  fs.chmodSync(out, 0o755);
}

/**
 * The plugin's image as a docker-archive (cached, keyed by the bundle): busybox for `cp`, the bundle
 * at /plugins/<file>, and an entrypoint that copies /plugins/* into /target.
 */
export async function pluginImage(spec: PluginImageSpec, log: (l: string) => void): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-plugin-bundle-'));
  try {
    const bundle = path.join(dir, spec.file);
    await bundlePlugin(spec.entry, bundle);
    const key = crypto.createHash('sha256').update(spec.image).update('\0').update(fs.readFileSync(bundle)).digest('hex').slice(0, 12);
    return cachedImage(`plugin-${spec.file.replace(/\.\w+$/, '')}-${key}.tar`, `plugin ${spec.image}`, log, (rootfs) => {
      addBusybox(rootfs);
      addEtc(rootfs);
      fs.mkdirSync(path.join(rootfs, 'plugins'), { recursive: true });
      fs.copyFileSync(bundle, path.join(rootfs, 'plugins', spec.file));
      fs.chmodSync(path.join(rootfs, 'plugins', spec.file), 0o755);
      return {
        tags: [spec.image],
        config: { Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'], Entrypoint: ['/bin/sh', '-c', 'cp /plugins/* /target/'] },
      };
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

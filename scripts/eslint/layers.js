// ESLint rule enforcing DESIGN.md's import directions inside src/: each layer may import only the
// layers listed for it, so a wrong-way import fails `npm run lint` instead of waiting for review.
import path from 'node:path';

/** layer -> layers it may import (its own layer is always allowed). */
export const ALLOWED = {
  apis: [],
  'plugin/api': [],
  gen: [],
  util: [],
  // What a run takes: filters, label selectors, names, globs, scoped resources, overlap, validation.
  selection: ['apis', 'util'],
  config: ['util'],
  logging: ['util', 'config'],
  // The server's own RBAC rules per trust mode (rendered into deploy/ and the chart).
  rbac: ['config'],
  metrics: ['util'],
  kube: ['apis', 'util'],
  runtime: ['util', 'kube'],
  // Whose rights a run uses (requester stamps, SubjectAccessReviews, impersonating clients).
  auth: ['apis', 'util', 'config', 'kube'],
  // The admission webhook that stamps requesters, its certificate and its configuration.
  webhook: ['apis', 'util', 'kube', 'auth'],
  // plugin/api for KubeObject, the one shape of an object read from a tarball and handed to plugins.
  archive: ['util', 'plugin/api'],
  // Running a command in a pod's container over pods/exec, as a run's client (backup and restore hooks);
  // which restore hooks apply to a pod (selection's filters), and the init containers they add.
  hooks: ['apis', 'util', 'selection', 'kube'],
  // Client-side encryption: the chunked object format, data keys, the Secret-backed key manager.
  encryption: ['util', 'plugin/api'],
  // Signed manifests: HMAC and Ed25519 signing keys, the signed statement and its check.
  signing: ['util'],
  'plugin/grpc': ['gen', 'plugin/api', 'util'],
  'plugin/sdk': ['plugin/grpc', 'plugin/api'],
  // Its unit test checks the remote key manager's errors are encryption's (the only use of that edge).
  'plugin/host': ['plugin/grpc', 'plugin/api', 'encryption'],
  'plugin/builtin': ['plugin/sdk', 'plugin/api', 'util'],
  persistence: ['apis', 'util', 'plugin/api', 'archive', 'encryption', 'signing'],
  // How a backup is opened and trusted: a location's store through the plugin pool, its keys, its signatures.
  storage: ['apis', 'kube', 'plugin/api', 'plugin/host', 'persistence', 'encryption', 'signing'],
  // CSI volume snapshots: the class choice, taking one, restoring a claim from one, deleting them.
  volumes: ['util', 'kube', 'persistence'],
  // When and how long: cron, retention, schedule plans, GC plans (pure; the reconcilers act on them).
  schedule: ['apis', 'util', 'selection', 'auth', 'persistence'],
  // The engines see only the store they are handed: no plugin processes, keys, signing, runtime or reconcilers.
  backup: ['apis', 'util', 'selection', 'kube', 'auth', 'archive', 'plugin/api', 'persistence', 'hooks', 'volumes'],
  restore: ['apis', 'util', 'selection', 'config', 'kube', 'auth', 'archive', 'plugin/api', 'persistence', 'volumes'],
  controller: ['apis', 'util', 'selection', 'schedule', 'config', 'logging', 'metrics', 'kube', 'auth', 'runtime', 'archive', 'plugin/api', 'plugin/host', 'persistence', 'storage', 'backup', 'restore', 'encryption', 'signing', 'hooks', 'volumes'],
  // The CLI imports engines and stores, never controller files.
  cli: ['apis', 'util', 'selection', 'schedule', 'config', 'logging', 'kube', 'auth', 'archive', 'persistence', 'plugin/sdk', 'plugin/builtin', 'main'],
  main: ['apis', 'util', 'config', 'logging', 'metrics', 'kube', 'runtime', 'auth', 'webhook', 'plugin/host', 'plugin/builtin', 'controller'],
};

const TWO_LEVEL = new Set(['plugin']);

/** Returns the layer of a file under srcDir, or null when it is outside src/. */
export function layerOf(file, srcDir) {
  const rel = path.relative(srcDir, file);
  if (rel.startsWith('..') || path.isAbsolute(rel)) return null;
  const parts = rel.split(path.sep);
  if (parts.length === 1) return parts[0].replace(/\.[cm]?[jt]s$/, '');
  if (TWO_LEVEL.has(parts[0]) && parts.length > 2) return `${parts[0]}/${parts[1]}`;
  return parts[0];
}

export const layersRule = {
  meta: {
    type: 'problem',
    docs: { description: 'Imports inside src/ point downward only (DESIGN.md "Layout")' },
    schema: [],
  },
  create(context) {
    const file = context.filename;
    const srcDir = path.resolve(context.cwd, 'src');
    const from = layerOf(file, srcDir);
    if (from === null) return {};
    const check = (node, spec) => {
      if (typeof spec !== 'string' || !spec.startsWith('.')) return;
      const target = path.resolve(path.dirname(file), spec);
      const to = layerOf(target, srcDir);
      if (to === null) {
        context.report({ node, message: `src/ must not import from outside src/ ('${spec}')` });
        return;
      }
      if (to === from) return;
      const allowed = ALLOWED[from];
      if (allowed === undefined) {
        context.report({ node, message: `'${from}' is not a layer known to scripts/eslint/layers.js; add it there` });
        return;
      }
      if (allowed.includes('*') || allowed.includes(to)) return;
      context.report({ node, message: `layer '${from}' must not import layer '${to}' ('${spec}'); see DESIGN.md "Layout"` });
    };
    return {
      ImportDeclaration: (n) => check(n, n.source.value),
      ExportNamedDeclaration: (n) => n.source && check(n, n.source.value),
      ExportAllDeclaration: (n) => check(n, n.source.value),
      ImportExpression: (n) => n.source.type === 'Literal' && check(n, n.source.value),
    };
  },
};

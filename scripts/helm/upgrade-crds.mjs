// The chart's pre-upgrade hook (charts/stowage/templates/upgrade-crds.yaml, upgradeCRDs: true):
// server-side applies the CRDs shipped in the image, so `helm upgrade` brings the CRDs of the new
// version before the new server starts (Helm itself installs crds/ only once).
//
// Runs inside the image as /app/bin/upgrade-crds.mjs (see Dockerfile): the imports below are
// relative to that location, not to this file's place in the repository.
import fs from 'node:fs';
import YAML from 'yaml';
import { CUSTOM_RESOURCE_DEFINITIONS, createDynamicClient, loadKubeConfig } from '../dist/kube/index.js';

const dir = new URL('../deploy/crds/', import.meta.url);
const files = fs.readdirSync(dir).filter((f) => f.endsWith('.yaml')).sort();
if (files.length === 0) {
  console.error(`upgrade-crds: no CRDs in ${dir.pathname}`);
  process.exit(1);
}
// In the pod: the ServiceAccount token; KUBECONFIG when run by hand.
const client = createDynamicClient(loadKubeConfig(), { qps: 0 });
try {
  for (const f of files) {
    const crd = YAML.parse(fs.readFileSync(new URL(f, dir), 'utf8'));
    await client.patch(CUSTOM_RESOURCE_DEFINITIONS, undefined, crd.metadata.name, crd, 'apply', { force: true, fieldManager: 'stowage-upgrade-crds' });
    console.log(`upgrade-crds: applied ${crd.metadata.name}`);
  }
} catch (err) {
  console.error(`upgrade-crds: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
} finally {
  client.close();
}

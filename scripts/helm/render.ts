// `helm template` for the chart tests, run by the real helm binary (helm.ts builds it from its Go
// module). NOTES.txt comes from a client-side dry-run install, which is where helm renders it.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ensureHelm } from './helm.js';

const run = promisify(execFile);

export interface TemplateOptions {
  chartDir: string;
  releaseName: string;
  namespace: string;
  /** -f files, in order (later ones win). */
  valuesFiles?: readonly string[];
  /** --set expressions (`a.b=1,c={x,y}`). */
  set?: readonly string[];
  /** --set-string expressions. */
  setString?: readonly string[];
  includeCrds?: boolean;
  isUpgrade?: boolean;
  /** Extra .Capabilities.APIVersions entries (`monitoring.coreos.com/v1`). */
  apiVersions?: readonly string[];
  kubeVersion?: string;
  showOnly?: readonly string[];
  noHooks?: boolean;
  /** Return the rendered NOTES.txt instead of the manifests. */
  notes?: boolean;
  /** For notes: helm's dry-run install asks this cluster for its version (it renders nothing there). */
  kubeconfig?: string;
}

/** The command line of `helm template` for these options (`helm install --dry-run=client -o json` for notes). */
export function templateArgs(o: TemplateOptions): string[] {
  const args = o.notes === true
    ? ['install', o.releaseName, o.chartDir, '--namespace', o.namespace, '--dry-run=client', '--output', 'json']
    : ['template', o.releaseName, o.chartDir, '--namespace', o.namespace];
  if (o.kubeconfig !== undefined) args.push('--kubeconfig', o.kubeconfig);
  for (const f of o.valuesFiles ?? []) args.push('--values', f);
  for (const s of o.set ?? []) args.push('--set', s);
  for (const s of o.setString ?? []) args.push('--set-string', s);
  for (const a of o.apiVersions ?? []) args.push('--api-versions', a);
  for (const s of o.showOnly ?? []) args.push('--show-only', s);
  if (o.kubeVersion !== undefined) args.push('--kube-version', o.kubeVersion);
  if (o.includeCrds === true) args.push('--include-crds');
  if (o.isUpgrade === true) args.push('--is-upgrade');
  if (o.noHooks === true) args.push('--no-hooks');
  return args;
}

/** Renders a chart like `helm template`; rejects with helm's error message. */
export async function helmTemplate(o: TemplateOptions): Promise<string> {
  const bin = await ensureHelm();
  try {
    const { stdout } = await run(bin, templateArgs(o), { maxBuffer: 64 << 20, env: { ...process.env, HELM_CACHE_HOME: '/tmp/stowage-helm/cache', HELM_CONFIG_HOME: '/tmp/stowage-helm/config', HELM_DATA_HOME: '/tmp/stowage-helm/data' } });
    return o.notes === true ? ((JSON.parse(stdout) as { info?: { notes?: string } }).info?.notes ?? '') : stdout;
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr?.trim();
    throw new Error(stderr !== undefined && stderr !== '' ? stderr : (err as Error).message, { cause: err });
  }
}

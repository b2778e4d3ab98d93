// TypeScript entry to stowage-helm, the `helm template` work-alike in scripts/helm/render (see
// README.md there). The binary is built and cached on first use by render.sh.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const SCRIPT = path.join(import.meta.dirname, 'render.sh');

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
  strict?: boolean;
  /** Return the rendered NOTES.txt instead of the manifests. */
  notes?: boolean;
}

/** The command line of `helm template` for these options. */
export function templateArgs(o: TemplateOptions): string[] {
  const args = ['template', o.releaseName, o.chartDir, '--namespace', o.namespace];
  for (const f of o.valuesFiles ?? []) args.push('--values', f);
  for (const s of o.set ?? []) args.push('--set', s);
  for (const s of o.setString ?? []) args.push('--set-string', s);
  for (const a of o.apiVersions ?? []) args.push('--api-versions', a);
  for (const s of o.showOnly ?? []) args.push('--show-only', s);
  if (o.kubeVersion !== undefined) args.push('--kube-version', o.kubeVersion);
  if (o.includeCrds === true) args.push('--include-crds');
  if (o.isUpgrade === true) args.push('--is-upgrade');
  if (o.noHooks === true) args.push('--no-hooks');
  if (o.strict === true) args.push('--strict');
  if (o.notes === true) args.push('--notes');
  return args;
}

/** Builds stowage-helm if needed; resolves to the binary's path. */
export async function buildRenderer(): Promise<string> {
  const { stdout } = await run('bash', [SCRIPT, '--build-only'], { maxBuffer: 1 << 20 });
  return stdout.trim();
}

/** Renders a chart like `helm template`; rejects with the renderer's error message. */
export async function helmTemplate(o: TemplateOptions): Promise<string> {
  const bin = await buildRenderer();
  try {
    const { stdout } = await run(bin, templateArgs(o), { maxBuffer: 64 << 20 });
    return stdout;
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr?.trim();
    throw new Error(stderr !== undefined && stderr !== '' ? stderr : (err as Error).message, { cause: err });
  }
}

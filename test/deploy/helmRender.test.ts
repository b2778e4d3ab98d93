// stowage-helm against Helm's documented behaviour, on a fixture chart that uses each supported
// feature once: values typing and merging, include/tpl/required, .Files, .Capabilities, .Release,
// .Chart, .Template, lookup, manifest ordering, hooks, crds/, NOTES.txt and the error messages.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { helmTemplate, type TemplateOptions } from '../../scripts/helm/render.js';

const FIXTURES = path.join(import.meta.dirname, 'fixtures');
const CHART = path.join(FIXTURES, 'render-chart');

const render = (o: Partial<TemplateOptions> = {}): Promise<string> => helmTemplate({ chartDir: CHART, releaseName: 'rel', namespace: 'ns1', ...o });

async function configMapData(o: Partial<TemplateOptions> = {}): Promise<Record<string, string>> {
  const out = await render({ showOnly: ['templates/a-configmap.yaml'], ...o });
  return (YAML.parse(out) as { data: Record<string, string> }).data;
}

/** `# Source:` paths in output order. */
const sources = (out: string): string[] => [...out.matchAll(/^# Source: (.+)$/gm)].map((m) => m[1] ?? '');

describe('stowage-helm template', () => {
  it('orders manifests like Helm: crds/ first with --include-crds, then by kind, hooks last; partials and empty output dropped', async () => {
    expect(sources(await render())).toEqual(['fixture/templates/z-serviceaccount.yaml', 'fixture/templates/a-configmap.yaml', 'fixture/templates/hook.yaml']);
    expect(sources(await render({ includeCrds: true }))[0]).toBe('fixture/crds/widgets.example.com.yaml');
    expect(sources(await render({ noHooks: true }))).not.toContain('fixture/templates/hook.yaml');
  });

  it('gives templates .Release, .Chart, .Template, .Capabilities, .Files and an empty lookup', async () => {
    const d = await configMapData({ isUpgrade: true, apiVersions: ['monitoring.coreos.com/v1'], kubeVersion: 'v1.21.3' });
    expect(d).toMatchObject({
      include: 'fixture-rel',
      tpl: 'rel-tpl',
      missing: '',
      lookup: '{}',
      file: 'hello\nworld',
      glob: '2',
      lines: '["hello","world"]',
      crdVisible: 'true',
      hasMonitoring: 'true',
      kubeMinor: '21',
      template: 'fixture/templates/a-configmap.yaml',
      basePath: 'fixture/templates',
      chart: 'fixture-1.2.3-4.5.6',
      release: 'rel/ns1/false/true/1/Helm',
      fromYaml: 'x',
      fromJsonError: 'true',
      toYaml: 'a: 1\nb: 2',
      sprig: 'HIHI',
    });
    expect((await configMapData()).hasMonitoring).toBe('false');
  });

  it('types values as Helm does: file numbers are float64, --set integers int64, --set-string strings', async () => {
    const d = await configMapData();
    expect(d.kindOfReplicas).toBe('float64');
    // Helm's well-known large-number formatting of float64 values.
    expect(d.big).toBe('1e+06');
    expect((await configMapData({ set: ['replicas=5'] })).kindOfReplicas).toBe('int64');
    expect((await configMapData({ setString: ['replicas=5'] })).kindOfReplicas).toBe('string');
  });

  it('merges -f files and --set over the chart values, and null deletes a key', async () => {
    const d = await configMapData({ valuesFiles: [path.join(FIXTURES, 'render-override.yaml')], set: ['nested.drop=null,list={x,y}'] });
    expect(d).toMatchObject({ name: 'from-file', nestedKeep: 'file', nestedDrop: 'false', list: '["x","y"]' });
    expect((await configMapData({ valuesFiles: [path.join(FIXTURES, 'render-override.yaml')], set: ['name=from-set'] })).name).toBe('from-set');
  });

  it('renders NOTES.txt on request only', async () => {
    expect(await render({ notes: true })).toBe('notes for rel in ns1\n');
    expect(await render()).not.toContain('notes for');
  });

  it('reports errors the way Helm does', async () => {
    await expect(render({ set: ['needRequired=true'] })).rejects.toThrow(/^Error: execution error at \(fixture\/templates\/required.yaml:7:\d+\): need a value!$/);
    await expect(render({ set: ['breakYaml=true'] })).rejects.toThrow(/YAML parse error on fixture\/templates\/required.yaml/);
    await expect(render({ strict: true })).rejects.toThrow(/map has no entry for key "nope"/);
    // Helm removes env and expandenv from sprig.
    await expect(render({ valuesFiles: [path.join(FIXTURES, 'render-env.yaml')] })).rejects.toThrow(/function "env" not defined/);
    await expect(render({ kubeVersion: '1.18.0' })).rejects.toThrow(/chart requires kubeVersion: >=1.19.0-0 which is incompatible with Kubernetes v1.18.0/);
    await expect(render({ showOnly: ['templates/nope.yaml'] })).rejects.toThrow(/could not find template templates\/nope.yaml in chart/);
    await expect(render({ releaseName: 'Bad_Name' })).rejects.toThrow(/invalid release name/);
  });
});

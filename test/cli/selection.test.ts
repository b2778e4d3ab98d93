// The item-selection flags of `stowage backup create` and `stowage restore create` against the
// real apiserver (no Stowage server running): what reaches the spec, what `describe` shows, and
// the usage errors (exit 2).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { RESOURCES, newBackup, type Backup, type Restore } from '../../src/apis/v1/index.js';
import { ensureCrds, isNotFound, type DynamicClient } from '../../src/kube/index.js';
import { labelKeyProblem } from '../../src/selection/labels.js';
import { backupSpecErrors, restoreSpecErrors } from '../../src/selection/specErrors.js';
import { uniqueName } from '../support/kube.js';
import { ensureNamespace, testClient } from '../support/server.js';
import { ensureBuilt, runCli, show, type RunOptions } from './helpers.js';

describe('stowage CLI: item selection flags', () => {
  const ns = uniqueName('cli-sel');
  let client: DynamicClient;
  let opts: RunOptions;
  const cli = (...args: string[]) => runCli(args, opts);

  beforeAll(async () => {
    const kubeconfig = inject('cluster').kubeconfigPath;
    client = testClient(kubeconfig);
    await Promise.all([ensureBuilt(), ensureCrds(client)]);
    await ensureNamespace(client, ns);
    opts = { kubeconfig, namespace: ns };
  });

  afterAll(() => {
    client?.close();
  });

  it('backup create: --include-names/--exclude-names, namespace globs and the scope-specific resource flags reach the spec, and describe shows them', async () => {
    const r = await cli(
      'backup', 'create', 'sel',
      '--include-namespaces', 'team-{a,b},db-?', '--exclude-namespaces', 'team-[c]',
      '--include-names', 'configmaps/regex:^app-[0-9]{1,2}$,web', '--include-names', 'deployments.apps/api-*',
      '--exclude-names', 'regex:-(old|tmp)$',
      '--include-cluster-scoped-resources', 'storageclasses,clusterroles', '--exclude-cluster-scoped-resources', 'nodes',
      '--include-namespace-scoped-resources', 'configmaps,deployments.apps', '--exclude-namespace-scoped-resources', 'secrets',
    );
    expect(r.code, show(r)).toBe(0);
    const b = await client.get<Backup>(RESOURCES.Backup, ns, 'sel');
    expect(b.spec).toMatchObject({
      includedNamespaces: ['team-{a,b}', 'db-?'],
      excludedNamespaces: ['team-[c]'],
      includedNames: ['configmaps/regex:^app-[0-9]{1,2}$', 'web', 'deployments.apps/api-*'],
      excludedNames: ['regex:-(old|tmp)$'],
      includedClusterScopedResources: ['storageclasses', 'clusterroles'],
      excludedClusterScopedResources: ['nodes'],
      includedNamespaceScopedResources: ['configmaps', 'deployments.apps'],
      excludedNamespaceScopedResources: ['secrets'],
    });
    expect(b.spec.includedResources).toBeUndefined();

    const d = await cli('backup', 'describe', 'sel');
    expect(d.code, show(d)).toBe(0);
    expect(d.stdout).toMatch(/^ {2}Included:\s+team-\{a,b\}, db-\?$/m);
    expect(d.stdout).toMatch(/^ {2}Namespace-scoped included:\s+configmaps, deployments\.apps$/m);
    expect(d.stdout).toMatch(/^ {2}Namespace-scoped excluded:\s+secrets$/m);
    expect(d.stdout).toMatch(/^ {2}Cluster-scoped included:\s+storageclasses, clusterroles$/m);
    expect(d.stdout).toMatch(/^ {2}Cluster-scoped excluded:\s+nodes$/m);
    expect(d.stdout).toMatch(/^Names:\n {2}Included:\s+configmaps\/regex:\^app-\[0-9\]\{1,2\}\$, web, deployments\.apps\/api-\*\n {2}Excluded:\s+regex:-\(old\|tmp\)\$$/m);
  });

  it('restore create takes the same flags, and describe shows them', async () => {
    await client.create(RESOURCES.Backup, ns, newBackup('src', ns, {}));
    await client.patchStatus(RESOURCES.Backup, ns, 'src', { status: { phase: 'Completed', progress: { totalItems: 1, itemsBackedUp: 1 } } });
    const r = await cli(
      'restore', 'create', 'sel', '--from-backup', 'src',
      '--include-names', 'configmaps/app-*', '--exclude-names', 'secrets/creds',
      '--include-namespace-scoped-resources', 'configmaps', '--include-cluster-scoped-resources', '*',
    );
    expect(r.code, show(r)).toBe(0);
    const restore = await client.get<Restore>(RESOURCES.Restore, ns, 'sel');
    expect(restore.spec).toEqual({
      backupName: 'src',
      includedNames: ['configmaps/app-*'],
      excludedNames: ['secrets/creds'],
      includedNamespaceScopedResources: ['configmaps'],
      includedClusterScopedResources: ['*'],
    });
    const d = await cli('restore', 'describe', 'sel');
    expect(d.code, show(d)).toBe(0);
    expect(d.stdout).toMatch(/^ {2}Namespace-scoped included:\s+configmaps$/m);
    expect(d.stdout).toMatch(/^ {2}Cluster-scoped included:\s+\*$/m);
    expect(d.stdout).toMatch(/^Names:\n {2}Included:\s+configmaps\/app-\*\n {2}Excluded:\s+secrets\/creds$/m);
  });

  it('describe shows the older resource fields and "*" names when the spec uses neither new style', async () => {
    await client.create(RESOURCES.Backup, ns, newBackup('plain', ns, { includedResources: ['configmaps'] }));
    const d = await cli('backup', 'describe', 'plain');
    expect(d.stdout).toMatch(/^Resources:\n {2}Included:\s+configmaps\n {2}Excluded:\s+<none>\n {2}Cluster-scoped:\s+auto$/m);
    expect(d.stdout).toMatch(/^Names:\n {2}Included:\s+\*\n {2}Excluded:\s+<none>$/m);
  });

  it('refuses mixing the scope-specific flags with the older resource flags (exit 2)', async () => {
    const r = await cli('backup', 'create', 'mixed', '--include-cluster-scoped-resources', 'storageclasses', '--include-resources', 'configmaps', '--include-cluster-resources');
    expect(r.code, show(r)).toBe(2);
    expect(r.stderr).toContain('--include-cluster-scoped-resources cannot be used with --include-resources, --include-cluster-resources');
    const restore = await cli('restore', 'create', '--from-backup', 'src', '--exclude-namespace-scoped-resources', 'secrets', '--exclude-resources', 'pods');
    expect(restore.code, show(restore)).toBe(2);
    expect(restore.stderr).toContain('--exclude-namespace-scoped-resources cannot be used with --exclude-resources');
  });

  it('refuses what the server would refuse, with the server\'s own messages, before creating anything (exit 2)', async () => {
    const nsProblem = 'includedNamespaces[0] "UPPER_case" is not a valid namespace name or pattern (lowercase letters, digits and "-", with the wildcards "*", "?", "[abc]", "[a-z]" and "{a,b}")';
    // The server's validation says exactly this for such a spec (validateBackup and validateRestore call these).
    expect(backupSpecErrors({ includedNamespaces: ['UPPER_case'] })).toEqual([nsProblem]);
    expect(restoreSpecErrors({ backupName: 'src', includedNamespaces: ['UPPER_case'] })).toEqual([nsProblem]);

    const b = await cli('backup', 'create', 'upper', '--include-namespaces', 'UPPER_case');
    expect(b.code, show(b)).toBe(2);
    expect(b.stderr.trim()).toBe(`error: ${nsProblem}`);
    await expect(client.get(RESOURCES.Backup, ns, 'upper')).rejects.toSatisfy(isNotFound);

    const r = await cli('restore', 'create', 'upper', '--from-backup', 'src', '--include-namespaces', 'UPPER_case');
    expect(r.code, show(r)).toBe(2);
    expect(r.stderr.trim()).toBe(`error: ${nsProblem}`);
    await expect(client.get(RESOURCES.Restore, ns, 'upper')).rejects.toSatisfy(isNotFound);

    const m = await cli('restore', 'create', 'mapped', '--from-backup', 'src', '--namespace-mappings', 'Old:new');
    expect(m.code, show(m)).toBe(2);
    expect(m.stderr.trim()).toBe('error: namespaceMapping key "Old" is not a valid namespace name');
    await expect(client.get(RESOURCES.Restore, ns, 'mapped')).rejects.toSatisfy(isNotFound);

    // A space in a key is a bad key, not an unknown operator.
    const keyProblem = labelKeyProblem('bad key');
    expect(keyProblem).toBe('label key "bad key" must consist of alphanumerics, "-", "_" or ".", and start and end with an alphanumeric');
    const sel = await cli('backup', 'create', 'bad-selector', '--selector', 'bad key!=v');
    expect(sel.code, show(sel)).toBe(2);
    expect(sel.stderr.trim()).toBe(`error: --selector: label selector "bad key!=v": ${keyProblem} at position 1`);
    await expect(client.get(RESOURCES.Backup, ns, 'bad-selector')).rejects.toSatisfy(isNotFound);
    const list = await client.list(RESOURCES.Backup, { namespace: ns });
    expect(list.items.map((x) => x.metadata?.name)).not.toContain('upper');
  });
});

// What settling a requester-mode backup's scope costs (issue 35): planBackupScope (discovery, the
// namespaces, SubjectAccessReviews and SelfSubjectRulesReviews) for a backup of M namespaces, as
//   admin: system:masters (RBAC allows everything),
//   team:  alice, bound with RoleBindings to the built-in `admin` ClusterRole in each namespace
//          (ordinary team RBAC: namespace-scoped, no cluster-wide rights),
//   view:  bob, bound cluster-wide to `view` (a ClusterRoleBinding: many resources everywhere, not Secrets),
// through the server's client limits (QPS 100, burst 200, a fresh client each time, as a backup
// after an idle spell has its whole burst). With --base DIR, the same with the code of another
// checkout (DIR/src), in alternating rounds in this one process: an A/B in the same sitting.
//
//   npx tsx bench/scope-reviews.ts [--namespaces 10] [--rounds 5] [--base /tmp/stowage-base]
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startControlPlane } from '../scripts/cluster/controlPlane.js';
import { newBackup } from '../src/apis/v1/index.js';
import { DEFAULT_CONFIG } from '../src/config/index.js';
import { CORE, createDynamicClient, ensureCrds, loadKubeConfig } from '../src/kube/index.js';
import type * as Auth from '../src/auth/index.js';
import type { Requester } from '../src/auth/index.js';
import type * as Scope from '../src/backup/scope.js';
import { compileSelection } from '../src/selection/compile.js';

const RBAC = 'rbac.authorization.k8s.io';
const ROLE_BINDINGS = { group: RBAC, version: 'v1', resource: 'rolebindings', namespaced: true } as const;
const CLUSTER_ROLE_BINDINGS = { group: RBAC, version: 'v1', resource: 'clusterrolebindings', namespaced: false } as const;

const { values } = parseArgs({ options: { namespaces: { type: 'string', default: '10' }, rounds: { type: 'string', default: '5' }, base: { type: 'string' } } });
const nsCount = Number(values.namespaces);
const rounds = Number(values.rounds);

/** The two modules the probe calls, from one checkout. */
interface Code {
  label: string;
  planBackupScope: typeof Scope.planBackupScope;
  createAccessReviewer: typeof Auth.createAccessReviewer;
}

async function load(label: string, root: string): Promise<Code> {
  const scope = await import(path.join(root, 'src/backup/scope.ts')) as typeof Scope;
  const auth = await import(path.join(root, 'src/auth/index.ts')) as typeof Auth;
  return { label, planBackupScope: scope.planBackupScope, createAccessReviewer: auth.createAccessReviewer };
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[m] ?? 0) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
};
const cpuMs = (): number => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };

async function main(): Promise<void> {
  const codes = [await load('this', path.resolve(import.meta.dirname, '..'))];
  if (values.base !== undefined) codes.unshift(await load('base', path.resolve(values.base)));
  const cp = await startControlPlane();
  const kc = loadKubeConfig(cp.kubeconfigPath);
  const setup = createDynamicClient(kc, { qps: 0, burst: 0 });
  try {
    await ensureCrds(setup);
    const alice = cp.teamUsers.find((u) => u.name === 'alice');
    const bob = cp.teamUsers.find((u) => u.name === 'bob');
    if (alice === undefined || bob === undefined) throw new Error('the control plane has no alice or bob');
    const namespaces = Array.from({ length: nsCount }, (_, i) => `team-${i}`);
    for (const ns of namespaces) {
      await setup.create(CORE.namespaces, undefined, { metadata: { name: ns } });
      await setup.create(ROLE_BINDINGS, ns, {
        metadata: { name: 'alice-admin' }, roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'admin' },
        subjects: [{ apiGroup: RBAC, kind: 'User', name: alice.name }],
      });
    }
    await setup.create(CLUSTER_ROLE_BINDINGS, undefined, {
      metadata: { name: 'bob-view' }, roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'view' },
      subjects: [{ apiGroup: RBAC, kind: 'User', name: bob.name }],
    });
    const users: Record<string, Requester> = {
      admin: { username: 'admin', uid: '', groups: ['system:masters', 'system:authenticated'] },
      team: { username: alice.name, uid: alice.uid, groups: [...alice.groups, 'system:authenticated'] },
      view: { username: bob.name, uid: bob.uid, groups: [...bob.groups, 'system:authenticated'] },
    };
    const backup = newBackup('b', 'stowage', { includedNamespaces: namespaces });
    // A checkout from before the one compiled selection (issue 34) takes two arguments and ignores the third.
    const selection = compileSelection(backup.spec);
    type Row = { ms: number; cpu: number; summary: string };
    const rows = new Map<string, Row[]>();
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? codes : [...codes].reverse();
      for (const code of order) {
        for (const [who, requester] of Object.entries(users)) {
          const client = createDynamicClient(kc, { qps: DEFAULT_CONFIG.clientQps, burst: DEFAULT_CONFIG.clientBurst });
          const reviewer = code.createAccessReviewer(client, requester);
          const c0 = cpuMs();
          const t0 = performance.now();
          const out = await code.planBackupScope({ client: client.impersonating({ username: requester.username, groups: requester.groups, uid: requester.uid }), serverClient: client, reviewer }, backup, selection);
          const ms = performance.now() - t0;
          const cpu = cpuMs() - c0;
          client.close();
          if (!('scope' in out)) throw new Error(`${code.label} ${who}: ${JSON.stringify(out)}`);
          const key = `${code.label} ${who}`;
          rows.set(key, [...(rows.get(key) ?? []), { ms, cpu, summary: out.scope.summary }]);
          console.log(`round ${round + 1} ${key}: ${ms.toFixed(0)} ms wall, ${cpu.toFixed(0)} ms CPU; ${out.scope.summary}`);
        }
      }
    }
    console.log(`\n${nsCount} namespaces, ${rounds} rounds; medians (every round):`);
    for (const [key, rs] of rows) {
      console.log(`${key}: ${median(rs.map((r) => r.ms)).toFixed(0)} ms wall (${rs.map((r) => r.ms.toFixed(0)).join(' / ')}), ` +
        `${median(rs.map((r) => r.cpu)).toFixed(0)} ms CPU; ${/: ([^]*) in \d+ ms$/.exec(rs[0]?.summary ?? '')?.[1] ?? ''}`);
    }
  } finally {
    setup.close();
    await cp.stop();
  }
}

await main();

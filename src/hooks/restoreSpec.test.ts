import { describe, expect, it } from 'vitest';
import type { RestoreHooks } from '../apis/v1/index.js';
import {
  DEFAULT_EXEC_TIMEOUT_MS, DEFAULT_INIT_CONTAINER_NAME, DEFAULT_WAIT_TIMEOUT_MS, compileRestoreHooks, execContainer, hooksForPod, restoreHookErrors, withInitContainers,
  type PodView,
} from './restoreSpec.js';

/** Velero's documented example, as a Velero user would apply it. */
const VELERO_EXAMPLE: RestoreHooks = {
  resources: [{
    name: 'restore-hook-1',
    includedNamespaces: ['app'],
    labelSelector: { matchLabels: { tier: 'db' } },
    postHooks: [
      { init: { initContainers: [{ name: 'restore-hook-init1', image: 'alpine:latest', command: ['/bin/ash', '-c', 'echo -n "FOOBARBAZ" >> /restores/foobarbaz'] }], timeout: '2m' } },
      { exec: { container: 'postgres', command: ['/bin/bash', '-c', 'while ! pg_isready; do sleep 1; done'], onError: 'Fail', execTimeout: '1m', waitTimeout: '5m', waitForReady: true } },
      { exec: { command: ['/bin/bash', '-c', 'date > /start'] } },
    ],
  }],
};

const pod = (namespace: string, labels: Record<string, string> = {}, annotations: Record<string, string> = {}): PodView & Record<string, unknown> => ({
  apiVersion: 'v1', kind: 'Pod',
  metadata: { namespace, name: 'db-0', labels, annotations },
  spec: { containers: [{ name: 'postgres' }, { name: 'sidecar' }], initContainers: [{ name: 'own-init' }] },
});

describe('restoreHookErrors', () => {
  it('accepts Velero\'s documented example unchanged', () => {
    expect(restoreHookErrors(VELERO_EXAMPLE)).toEqual([]);
    expect(restoreHookErrors(undefined)).toEqual([]);
    expect(restoreHookErrors({})).toEqual([]);
  });

  it('names each wrong field by its path', () => {
    const errors = restoreHookErrors({
      resources: [
        { name: '', includedNamespaces: ['Bad_NS'], excludedNamespaces: ['ok', 'no/pe'], postHooks: [] },
        {
          name: 'h', includedResources: ['deployments'], labelSelector: { matchLabels: { 'bad key!': 'x' } },
          postHooks: [
            {},
            { exec: { command: [], container: 'Bad_Container', onError: 'Retry' as 'Fail', execTimeout: '10 parsecs', waitTimeout: '-1s' } },
            { init: { initContainers: [{ image: '' }, { name: 'a', image: 'x', command: 'echo' }, { name: 'a', image: 'y' }], timeout: 'soon' } },
            { init: { initContainers: [] }, exec: { command: ['true'] } },
          ],
        },
        { name: 'h', excludedResources: ['pods'], postHooks: [{ exec: { command: ['true'] } }] },
      ],
    });
    expect(errors).toEqual([
      'spec.hooks.resources[0].name is required',
      expect.stringMatching(/^spec\.hooks\.resources\[0\]\.includedNamespaces\[0\] "Bad_NS" is not a valid namespace name or pattern/),
      expect.stringMatching(/^spec\.hooks\.resources\[0\]\.excludedNamespaces\[1\] "no\/pe" is not a valid namespace name or pattern/),
      'spec.hooks.resources[0].postHooks is empty: give an init or exec hook, or remove the entry',
      'spec.hooks.resources[1]: restore hooks apply to pods only, and includedResources/excludedResources leave pods out, so the hook would apply to nothing; include pods (or leave both empty)',
      expect.stringMatching(/^spec\.hooks\.resources\[1\]\.labelSelector\.matchLabels/),
      'spec.hooks.resources[1].postHooks[0]: set exec or init',
      'spec.hooks.resources[1].postHooks[1].exec.command is required: the command and its arguments, e.g. ["/bin/sh", "-c", "..."]',
      'spec.hooks.resources[1].postHooks[1].exec.container "Bad_Container" is not a valid container name',
      'spec.hooks.resources[1].postHooks[1].exec.onError must be Continue or Fail, not "Retry"',
      expect.stringMatching(/^spec\.hooks\.resources\[1\]\.postHooks\[1\]\.exec\.execTimeout "10 parsecs" is not a duration/),
      'spec.hooks.resources[1].postHooks[1].exec.waitTimeout must be a positive duration, not "-1s"',
      'spec.hooks.resources[1].postHooks[2].init.initContainers[0].name is required',
      'spec.hooks.resources[1].postHooks[2].init.initContainers[0].image is required',
      'spec.hooks.resources[1].postHooks[2].init.initContainers[1].command must be a list of strings',
      'spec.hooks.resources[1].postHooks[2].init.initContainers: two containers are named "a"',
      expect.stringMatching(/^spec\.hooks\.resources\[1\]\.postHooks\[2\]\.init\.timeout "soon" is not a duration/),
      'spec.hooks.resources[1].postHooks[3]: set exec or init, not both (give each its own entry)',
      'spec.hooks.resources[1].postHooks[3].init.initContainers is empty: give at least one container',
      'spec.hooks.resources[2].name "h" is also the name of spec.hooks.resources[1]; hook names must be unique',
      'spec.hooks.resources[2]: restore hooks apply to pods only, and includedResources/excludedResources leave pods out, so the hook would apply to nothing; include pods (or leave both empty)',
    ]);
  });

  it('lets includedResources name pods in any of its forms', () => {
    for (const r of [['pods'], ['Pod'], ['*'], ['pods', 'deployments.apps']]) {
      expect(restoreHookErrors({ resources: [{ name: 'h', includedResources: r, postHooks: [{ exec: { command: ['true'] } }] }] })).toEqual([]);
    }
  });
});

describe('hooksForPod', () => {
  const compiled = compileRestoreHooks(VELERO_EXAMPLE);

  it('applies the spec\'s hooks by the pod\'s target namespace and labels, in order, with Velero\'s defaults', () => {
    const h = hooksForPod(compiled, pod('app', { tier: 'db' }));
    expect(h.problems).toEqual([]);
    expect(h.init).toEqual([{ hook: 'restore-hook-1', containers: [expect.objectContaining({ name: 'restore-hook-init1', image: 'alpine:latest' })], timeoutMs: 120_000 }]);
    expect(h.exec).toEqual([
      { hook: 'restore-hook-1', container: 'postgres', command: ['/bin/bash', '-c', 'while ! pg_isready; do sleep 1; done'], onError: 'Fail', execTimeoutMs: 60_000, waitTimeoutMs: 300_000, waitForReady: true },
      { hook: 'restore-hook-1', container: undefined, command: ['/bin/bash', '-c', 'date > /start'], onError: 'Continue', execTimeoutMs: DEFAULT_EXEC_TIMEOUT_MS, waitTimeoutMs: DEFAULT_WAIT_TIMEOUT_MS, waitForReady: false },
    ]);
    // Unset container: the pod's first.
    expect(execContainer(h.exec[1] ?? { container: 'x' } as never, pod('app'))).toBe('postgres');
    // Another namespace (the source one, before namespaceMapping), or other labels: none apply.
    expect(hooksForPod(compiled, pod('app-source', { tier: 'db' }))).toEqual({ init: [], exec: [], problems: [] });
    expect(hooksForPod(compiled, pod('app', { tier: 'web' }))).toEqual({ init: [], exec: [], problems: [] });
  });

  it('takes the pod\'s annotations over the spec, each kind on its own (Velero\'s precedence)', () => {
    const annotated = pod('app', { tier: 'db' }, {
      'post.hook.restore.velero.io/command': '["/bin/sh", "-c", "echo hi"]',
      'post.hook.restore.velero.io/container': 'sidecar',
      'post.hook.restore.velero.io/on-error': 'Fail',
      'post.hook.restore.velero.io/exec-timeout': '45s',
      'post.hook.restore.velero.io/wait-timeout': '2m',
      'post.hook.restore.velero.io/wait-for-ready': 'true',
    });
    const h = hooksForPod(compiled, annotated);
    expect(h.exec).toEqual([{ hook: '<from-annotations>', container: 'sidecar', command: ['/bin/sh', '-c', 'echo hi'], onError: 'Fail', execTimeoutMs: 45_000, waitTimeoutMs: 120_000, waitForReady: true }]);
    // No init annotations: the spec's init hook still applies.
    expect(h.init.map((i) => i.hook)).toEqual(['restore-hook-1']);

    const init = hooksForPod(compiled, pod('app', { tier: 'db' }, {
      'init.hook.restore.velero.io/container-image': 'local.invalid/busybox:stowage',
      'init.hook.restore.velero.io/command': 'date',
    }));
    expect(init.init).toEqual([{ hook: '<from-annotations>', containers: [{ name: DEFAULT_INIT_CONTAINER_NAME, image: 'local.invalid/busybox:stowage', command: ['date'] }], timeoutMs: DEFAULT_WAIT_TIMEOUT_MS }]);
    expect(init.exec).toHaveLength(2);
  });

  it('reports wrong annotations precisely instead of dropping the hook', () => {
    const h = hooksForPod(compileRestoreHooks(undefined), pod('x', {}, {
      'post.hook.restore.velero.io/command': '["sh", "-c"',
      'init.hook.restore.velero.io/container-name': 'setup',
    }));
    expect(h.problems).toEqual([
      'annotation init.hook.restore.velero.io/container-name set without init.hook.restore.velero.io/container-image, so there is no init container to add',
      expect.stringMatching(/^annotation post\.hook\.restore\.velero\.io\/command starts with "\[" but is not a JSON array: /),
    ]);
    const bad = (a: Record<string, string>): string[] => hooksForPod(compileRestoreHooks(undefined), pod('x', {}, { 'post.hook.restore.velero.io/command': 'true', ...a })).problems;
    expect(bad({ 'post.hook.restore.velero.io/on-error': 'Ignore' })).toEqual(['annotation post.hook.restore.velero.io/on-error must be Continue or Fail, not "Ignore"']);
    expect(bad({ 'post.hook.restore.velero.io/wait-for-ready': 'yes' })).toEqual(['annotation post.hook.restore.velero.io/wait-for-ready must be true or false, not "yes"']);
    expect(bad({ 'post.hook.restore.velero.io/exec-timeout': '5 minutes' })[0]).toMatch(/^annotation post\.hook\.restore\.velero\.io\/exec-timeout "5 minutes" is not a duration/);
    expect(bad({ 'post.hook.restore.velero.io/wait-for-ready': 'False' })).toEqual([]);
  });
});

describe('withInitContainers', () => {
  it('puts the hooks\' containers before the pod\'s own, in order, and leaves the original alone', () => {
    const p = pod('app');
    const { pod: out, added, notAdded } = withInitContainers(p, [
      { hook: 'a', containers: [{ name: 'one', image: 'i1' }, { name: 'two', image: 'i2' }], timeoutMs: 1 },
      { hook: 'b', containers: [{ name: 'three', image: 'i3' }], timeoutMs: 1 },
    ]);
    expect((out.spec as { initContainers: { name: string }[] }).initContainers.map((c) => c.name)).toEqual(['one', 'two', 'three', 'own-init']);
    expect(added).toEqual([{ hook: 'a', name: 'one', image: 'i1' }, { hook: 'a', name: 'two', image: 'i2' }, { hook: 'b', name: 'three', image: 'i3' }]);
    expect(notAdded).toEqual([]);
    expect(p.spec?.initContainers?.map((c) => c.name)).toEqual(['own-init']);
  });

  it('does not add a container whose name the pod already uses, and says so', () => {
    const { pod: out, added, notAdded } = withInitContainers(pod('app'), [{ hook: 'a', containers: [{ name: 'own-init', image: 'i' }, { name: 'postgres', image: 'i' }], timeoutMs: 1 }]);
    expect(added).toEqual([]);
    expect(notAdded).toEqual([
      'init container own-init of restore hook a not added: the pod already has a container named own-init',
      'init container postgres of restore hook a not added: the pod already has a container named postgres',
    ]);
    expect((out.spec as { initContainers: { name: string }[] }).initContainers.map((c) => c.name)).toEqual(['own-init']);
  });
});

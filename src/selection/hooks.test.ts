import { describe, expect, it } from 'vitest';
import type { BackupHooks } from '../apis/v1/index.js';
import { annotationHooks, backupHookSpecErrors, compileBackupHooks, DEFAULT_HOOK_TIMEOUT_MS, parseHookCommand, type HookPod } from './hooks.js';

const pod = (namespace: string, labels: Record<string, string> = {}, annotations: Record<string, string> = {}): HookPod => ({ metadata: { namespace, labels, annotations } });
const exec = (command: string[], more: Record<string, string> = {}) => ({ exec: { command, ...more } });

describe('parseHookCommand (Velero\'s annotation forms)', () => {
  it('takes a JSON array as the argument list, and any other string as the whole command', () => {
    expect(parseHookCommand('["/bin/sh", "-c", "echo hi"]')).toEqual(['/bin/sh', '-c', 'echo hi']);
    expect(parseHookCommand('/usr/bin/sync')).toEqual(['/usr/bin/sync']);
    expect(parseHookCommand('sh -c "x"')).toEqual(['sh -c "x"']);
  });

  it('refuses what starts as an array but is not one of strings', () => {
    expect(parseHookCommand('["sh" "-c"]')).toEqual({ error: expect.stringMatching(/^starts with "\[" but is not a JSON array: /) });
    expect(parseHookCommand('[1, 2]')).toEqual({ error: 'is not a JSON array of strings' });
  });
});

describe('backupHookSpecErrors: every bad value names its field', () => {
  const errors = (hooks: unknown): string[] => backupHookSpecErrors(hooks as BackupHooks, 'spec.hooks');

  it('accepts a Velero hook spec as Velero documents it', () => {
    expect(errors({
      resources: [{
        name: 'freeze', includedNamespaces: ['db-*'], excludedNamespaces: ['db-test'], includedResources: ['pods'], excludedResources: [],
        labelSelector: { matchLabels: { app: 'postgres' } },
        pre: [exec(['/sbin/fsfreeze', '--freeze', '/var/lib/postgresql'], { container: 'fsfreeze', onError: 'Fail', timeout: '55s' })],
        post: [exec(['/sbin/fsfreeze', '--unfreeze', '/var/lib/postgresql'], { onError: 'Continue' })],
      }],
    })).toEqual([]);
    expect(errors(undefined)).toEqual([]);
    expect(errors({})).toEqual([]);
  });

  it('refuses a bad onError, timeout or command, and a missing name or exec', () => {
    expect(errors({
      resources: [{
        name: '',
        pre: [exec([], { onError: 'Ignore' }), exec([''], { timeout: 'soon' })],
        post: [{}, exec(['x'], { timeout: '-5s' })],
      }],
    })).toEqual([
      'spec.hooks.resources[0].name: every hook entry needs a name (it names the hook in the log and in errors)',
      'spec.hooks.resources[0].pre[0].exec.command is empty: give the executable and its arguments',
      'spec.hooks.resources[0].pre[0].exec.onError: "Ignore" is not an onError mode (use Fail or Continue)',
      'spec.hooks.resources[0].pre[1].exec.command names no executable (its first entry is empty)',
      expect.stringMatching(/^spec\.hooks\.resources\[0\]\.pre\[1\]\.exec\.timeout "soon" is not a duration/),
      'spec.hooks.resources[0].post[0].exec: each hook needs exec (Velero\'s only hook type for backups)',
      'spec.hooks.resources[0].post[1].exec.timeout: "-5s" is negative',
    ]);
  });

  it('refuses bad namespace and resource entries, a bad labelSelector, and filters that leave pods out', () => {
    expect(errors({
      resources: [{
        name: 'h', includedNamespaces: ['Bad_NS'], excludedNamespaces: ['ok', 'also bad'], includedResources: ['deployments.apps'], excludedResources: ['pods!'],
        labelSelector: { matchExpressions: [{ key: 'app', operator: 'Near' }] },
      }],
    })).toEqual([
      expect.stringMatching(/^spec\.hooks\.resources\[0\]\.includedNamespaces\[0\]: "Bad_NS" is not a valid namespace name/),
      expect.stringMatching(/^spec\.hooks\.resources\[0\]\.excludedNamespaces\[1\]: "also bad" is not a valid namespace name/),
      'spec.hooks.resources[0].excludedResources[0]: "pods!" is not a resource name',
      'spec.hooks.resources[0].includedResources: hooks run only in pods, and ["deployments.apps"] less ["pods!"] leaves pods out, so this entry would never run; include pods (or leave the field empty)',
      'spec.hooks.resources[0].labelSelector.matchExpressions[0]: unknown operator "Near" (use In, NotIn, Exists or DoesNotExist)',
    ]);
    expect(errors({ resources: [{ name: 'h', excludedResources: ['pods'] }] })).toEqual([expect.stringContaining('leaves pods out')]);
  });
});

describe('compileBackupHooks: which spec hooks a pod gets', () => {
  const plan = compileBackupHooks({
    resources: [
      { name: 'db', includedNamespaces: ['db-*'], excludedNamespaces: ['db-test'], labelSelector: { matchLabels: { app: 'pg' } }, pre: [exec(['freeze'])], post: [exec(['thaw'], { onError: 'Continue', timeout: '2m', container: 'side' })] },
      { name: 'all-pods', includedResources: ['pods'], pre: [exec(['sync'], { timeout: '0s' })] },
      { name: 'not-pods', includedResources: ['*'], excludedResources: ['deployments'], post: [exec(['late'])] },
    ],
  });
  const names = (p: HookPod, phase: 'pre' | 'post'): string[] => {
    const r = plan.forPod(p, phase);
    return 'hooks' in r ? r.hooks.map((h) => `${h.name}:${h.command.join(' ')}`) : [r.error];
  };

  it('matches namespaces (globs, excludes), resources and labels, in spec order', () => {
    expect(names(pod('db-prod', { app: 'pg' }), 'pre')).toEqual(['db:freeze', 'all-pods:sync']);
    expect(names(pod('db-prod', { app: 'pg' }), 'post')).toEqual(['db:thaw', 'not-pods:late']);
    expect(names(pod('db-test', { app: 'pg' }), 'pre')).toEqual(['all-pods:sync']);
    expect(names(pod('db-prod', { app: 'web' }), 'pre')).toEqual(['all-pods:sync']);
    expect(names(pod('web', { app: 'pg' }), 'post')).toEqual(['not-pods:late']);
    expect(plan.hasSpecHooks).toBe(true);
  });

  it('fills in Velero\'s defaults: the first container, onError Fail, 30 s; a zero timeout is the default', () => {
    const pre = plan.forPod(pod('db-prod', { app: 'pg' }), 'pre');
    const post = plan.forPod(pod('db-prod', { app: 'pg' }), 'post');
    expect(pre).toEqual({ hooks: [
      { phase: 'pre', name: 'db', source: 'spec', container: undefined, command: ['freeze'], onError: 'Fail', timeoutMs: DEFAULT_HOOK_TIMEOUT_MS },
      { phase: 'pre', name: 'all-pods', source: 'spec', container: undefined, command: ['sync'], onError: 'Fail', timeoutMs: DEFAULT_HOOK_TIMEOUT_MS },
    ] });
    expect('hooks' in post && post.hooks[0]).toEqual({ phase: 'post', name: 'db', source: 'spec', container: 'side', command: ['thaw'], onError: 'Continue', timeoutMs: 120_000 });
  });

  it('lets a pod\'s annotations win over the spec for their phase only (as Velero)', () => {
    const annotated = pod('db-prod', { app: 'pg' }, { 'pre.hook.backup.velero.io/command': '["/bin/sh","-c","echo frozen"]', 'pre.hook.backup.velero.io/container': 'db' });
    expect(names(annotated, 'pre')).toEqual(['pre.hook.backup.velero.io:/bin/sh -c echo frozen']);
    expect(names(annotated, 'post')).toEqual(['db:thaw', 'not-pods:late']);
  });
});

describe('annotationHooks', () => {
  it('reads Velero\'s and Stowage\'s names, with every setting', () => {
    expect(annotationHooks({
      'post.hook.backup.stowage.dev/command': 'sync', 'post.hook.backup.stowage.dev/container': 'app',
      'post.hook.backup.stowage.dev/on-error': 'Continue', 'post.hook.backup.stowage.dev/timeout': '1m30s',
    }, 'post')).toEqual({ hooks: [{ phase: 'post', name: 'post.hook.backup.stowage.dev', source: 'annotation', container: 'app', command: ['sync'], onError: 'Continue', timeoutMs: 90_000 }] });
    expect(annotationHooks({ 'pre.hook.backup.velero.io/command': 'sync' }, 'pre')).toMatchObject({ hooks: [{ container: undefined, onError: 'Fail', timeoutMs: 30_000 }] });
    expect(annotationHooks({}, 'pre')).toBeUndefined();
  });

  it('reads Velero\'s phaseless legacy annotations as a pre hook', () => {
    expect(annotationHooks({ 'hook.backup.velero.io/command': 'sync', 'hook.backup.velero.io/container': 'c' }, 'pre')).toMatchObject({ hooks: [{ name: 'hook.backup.velero.io', container: 'c' }] });
    expect(annotationHooks({ 'hook.backup.velero.io/command': 'sync' }, 'post')).toBeUndefined();
  });

  it('refuses values Velero would quietly default, both names at once, and settings without a command', () => {
    expect(annotationHooks({ 'pre.hook.backup.velero.io/command': 'x', 'pre.hook.backup.velero.io/on-error': 'fail', 'pre.hook.backup.velero.io/timeout': '30' }, 'pre')).toEqual({
      error: 'annotation pre.hook.backup.velero.io/on-error: "fail" is not an onError mode (use Fail or Continue); ' +
        'annotation pre.hook.backup.velero.io/timeout "30" is not a duration like 720h0m0s: missing unit after "30" (use h, m, s, ms, us or ns)',
    });
    expect(annotationHooks({ 'pre.hook.backup.velero.io/command': 'x', 'pre.hook.backup.stowage.dev/command': 'y' }, 'pre')).toEqual({
      error: 'the pod has both pre.hook.backup.velero.io/command and pre.hook.backup.stowage.dev/command; keep one of them',
    });
    expect(annotationHooks({ 'post.hook.backup.velero.io/container': 'db' }, 'post')).toEqual({ error: 'the pod has post.hook.backup.velero.io/container but no post.hook.backup.velero.io/command' });
    expect(annotationHooks({ 'pre.hook.backup.velero.io/command': '[]' }, 'pre')).toEqual({ error: 'annotation pre.hook.backup.velero.io/command is empty: give the executable and its arguments' });
  });
});

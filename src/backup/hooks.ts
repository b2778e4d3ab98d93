// Running a pod's backup hooks (resolved by selection/hooks.ts) through hooks/exec.ts as the run's
// client, with one run-log line per hook (outcome, duration, the ends of its output) and the
// hook counts of status.hookStatus. collect.ts decides when: the bracket around a pod and its volumes.
import type winston from 'winston';
import { execInPod, formatMs, type ExecConnection, type ExecOutcome } from '../hooks/index.js';
import type { KubeObject } from '../plugin/api/index.js';
import type { BackupHookPlan, HookPhase, PodHook } from '../selection/hooks.js';
import { recordProblem, type BackupRequest } from './request.js';

export interface HookContext {
  plan: BackupHookPlan;
  /** The run's client's connection: in trust mode requester it impersonates the requester. */
  conn: ExecConnection;
}

export interface HookStatusCounts {
  hooksAttempted: number;
  hooksFailed: number;
}

/** What the pod's hooks of both phases are, read once before its pre hooks run; an error fails the pod. */
export type PodHooks = { pre: PodHook[]; post: PodHook[] } | { error: string };

export function podHooks(plan: BackupHookPlan, pod: KubeObject): PodHooks {
  const pre = plan.forPod(pod, 'pre');
  const post = plan.forPod(pod, 'post');
  const errors = [pre, post].flatMap((p) => ('error' in p ? [p.error] : []));
  if (errors.length > 0) return { error: errors.join('; ') };
  return { pre: 'hooks' in pre ? pre.hooks : [], post: 'hooks' in post ? post.hooks : [] };
}

const podName = (pod: KubeObject): string => `${pod.metadata.namespace ?? ''}/${pod.metadata.name}`;

interface PodSpecLike {
  spec?: { containers?: { name?: string }[] };
  status?: { phase?: string };
}

/**
 * Runs `hooks` in order in the pod. Returns false when one with onError Fail failed (the later ones
 * of the phase are not run, and the pod is not backed up); a Continue one that fails is a warning.
 * `signal`: the run's, for pre hooks; post hooks get none, so a canceled run still thaws what it froze.
 */
export async function runPodHooks(
  h: HookContext, req: BackupRequest, log: winston.Logger, pod: KubeObject, phase: HookPhase, hooks: readonly PodHook[], signal: AbortSignal | undefined,
): Promise<boolean> {
  const counts = req.hookStatus;
  const ns = pod.metadata.namespace ?? '';
  const p = pod as KubeObject & PodSpecLike;
  const containers = (p.spec?.containers ?? []).map((c) => c.name ?? '');
  const podPhase = p.status?.phase;
  if (hooks.length > 0 && (podPhase === 'Succeeded' || podPhase === 'Failed')) {
    // Its containers have ended: nothing can run in them, and there is nothing to quiesce (as Velero skips them).
    log.warn(recordProblem(req, 'warnings', ns, `the ${hooks.length} ${phase} hook(s) of pod ${podName(pod)} are not run: the pod has ended (${podPhase})`), { pod: podName(pod) });
    return true;
  }
  for (const hook of hooks) {
    const container = hook.container ?? containers[0] ?? '';
    const what = `${phase} hook "${hook.name}" (${hook.source === 'annotation' ? 'from the pod\'s annotations' : 'spec.hooks'}) in pod ${podName(pod)}, container ${container}`;
    counts.hooksAttempted++;
    let outcome: ExecOutcome;
    if (!containers.includes(container)) {
      outcome = notRun(`the pod has no container "${container}" (its containers: ${containers.join(', ')})`);
    } else if (podPhase !== undefined && podPhase !== 'Running') {
      outcome = notRun(`the pod is ${podPhase}, not Running, so nothing can run in it yet`);
    } else {
      outcome = await execInPod(h.conn, { namespace: ns, pod: pod.metadata.name, container, command: hook.command }, { timeoutMs: hook.timeoutMs, signal });
    }
    const fields = {
      hook: hook.name, hookPhase: phase, hookSource: hook.source, pod: podName(pod), container, durationMs: outcome.durationMs,
      ...(outcome.exitCode !== undefined ? { exitCode: outcome.exitCode } : {}),
    };
    const ok = outcome.exitCode === 0 && outcome.error === undefined;
    if (ok) {
      log.info(`${what}: succeeded in ${seconds(outcome.durationMs)}${output(outcome)}`, fields);
      continue;
    }
    counts.hooksFailed++;
    const why = outcome.timedOut ? `timed out after ${formatMs(hook.timeoutMs)}; its exec was ended`
      : outcome.error ?? `exit code ${outcome.exitCode ?? 'unknown'}`;
    if (hook.onError === 'Continue') {
      log.warn(recordProblem(req, 'warnings', ns, `${what}: failed in ${seconds(outcome.durationMs)}: ${why}${output(outcome)}; going on (onError Continue)`), fields);
      continue;
    }
    const rest = phase === 'pre' ? 'the pod is not backed up and its remaining pre hooks are not run (onError Fail)' : 'the pod is not backed up (onError Fail)';
    log.error(recordProblem(req, 'errors', ns, `${what}: failed in ${seconds(outcome.durationMs)}: ${why}${output(outcome)}; ${rest}`), fields);
    return false;
  }
  return true;
}

/** A pod whose hooks cannot be read from its annotations: it fails as a Fail hook would (counted as one). */
export function hooksUnreadable(req: BackupRequest, log: winston.Logger, pod: KubeObject, error: string): void {
  req.hookStatus.hooksAttempted++;
  req.hookStatus.hooksFailed++;
  log.error(recordProblem(req, 'errors', pod.metadata.namespace ?? '', `the hooks of pod ${podName(pod)} cannot be run: ${error}; the pod is not backed up`), { pod: podName(pod) });
}

function notRun(error: string): ExecOutcome {
  return { exitCode: undefined, stdout: '', stderr: '', durationMs: 0, timedOut: false, error };
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(2)}s`;
}

/**
 * The ends of the hook's output, quoted on the log line. It is the output of the user's own command
 * in their own pod (docs/security.md): shown as it is, bounded by hooks/tail.ts.
 */
function output(o: ExecOutcome): string {
  const parts: string[] = [];
  if (o.stdout !== '') parts.push(`stdout: ${JSON.stringify(o.stdout)}`);
  if (o.stderr !== '') parts.push(`stderr: ${JSON.stringify(o.stderr)}`);
  return parts.length === 0 ? '' : `; ${parts.join('; ')}`;
}

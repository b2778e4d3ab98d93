// Pieces of `describe` output shared by backups and restores: metadata, filters, events, results.
import type { ObjectMeta } from '../../apis/v1/index.js';
import { REQUESTER_ANNOTATION, SEAL_ANNOTATION, describeRequester, requesterOf } from '../../auth/index.js';
import { CORE, type KubeObject } from '../../kube/index.js';
import { usesScopedFilters } from '../../selection/filters.js';
import { labelSelectorToString } from '../../selection/labels.js';
import type { SelectionSpec } from '../../selection/spec.js';
import type { CliContext } from './kubeContext.js';
import { age, formatFields, formatTable, listOrNone, mapOrNone } from './output.js';
import { clampProgress } from './progress.js';

/** Who the admission webhook recorded as having asked for the run, or why nobody is known. */
export function requestedBy(md: ObjectMeta): string {
  const r = requesterOf({ metadata: md });
  if (r === undefined) return `<unknown: no ${REQUESTER_ANNOTATION} annotation>`;
  if ('error' in r) return `<unreadable: ${r.error}>`;
  return describeRequester(r);
}

export function metadataSection(md: ObjectMeta): string {
  // The stamp is shown as "Requested by", not repeated as raw JSON among the annotations; its seal
  // is for the server to check, and says nothing a reader can use.
  const { [REQUESTER_ANNOTATION]: _stamp, [SEAL_ANNOTATION]: _seal, ...annotations } = md.annotations ?? {};
  return formatFields([
    ['Name', md.name],
    ['Namespace', md.namespace ?? ''],
    ['Labels', mapOrNone(md.labels)],
    ['Annotations', mapOrNone(annotations)],
    ['Requested by', requestedBy(md)],
  ]);
}

/** The resource filters in the style the spec uses: Velero's scope-specific lists, or the older three fields. */
function resourcesSection(spec: SelectionSpec): string {
  if (usesScopedFilters(spec)) {
    const cluster = (spec.includedClusterScopedResources ?? []).length > 0 || (spec.excludedClusterScopedResources ?? []).length > 0
      ? listOrNone(spec.includedClusterScopedResources) : 'auto';
    return formatFields(
      [
        ['Namespace-scoped included', listOrNone(spec.includedNamespaceScopedResources, true)],
        ['Namespace-scoped excluded', listOrNone(spec.excludedNamespaceScopedResources)],
        ['Cluster-scoped included', cluster],
        ['Cluster-scoped excluded', listOrNone(spec.excludedClusterScopedResources)],
      ],
      '  ',
    );
  }
  const cluster = spec.includeClusterResources === true ? 'included' : spec.includeClusterResources === false ? 'excluded' : 'auto';
  return formatFields(
    [
      ['Included', listOrNone(spec.includedResources, true)],
      ['Excluded', listOrNone(spec.excludedResources)],
      ['Cluster-scoped', cluster],
    ],
    '  ',
  );
}

export function selectorText(spec: SelectionSpec): string {
  if (spec.orLabelSelectors !== undefined && spec.orLabelSelectors.length > 0) {
    return spec.orLabelSelectors.map((s) => labelSelectorToString(s) || '<all>').join(' or ');
  }
  const s = labelSelectorToString(spec.labelSelector);
  return s === '' ? '<none>' : s;
}

export function filtersSection(spec: SelectionSpec): string {
  return (
    'Namespaces:\n' +
    formatFields(
      [
        ['Included', listOrNone(spec.includedNamespaces, true)],
        ['Excluded', listOrNone(spec.excludedNamespaces)],
      ],
      '  ',
    ) +
    '\nResources:\n' +
    resourcesSection(spec) +
    '\nNames:\n' +
    formatFields(
      [
        ['Included', listOrNone(spec.includedNames, true)],
        ['Excluded', listOrNone(spec.excludedNames)],
      ],
      '  ',
    ) +
    '\n' +
    formatFields([['Label selector', selectorText(spec)]])
  );
}

type EventObj = KubeObject & {
  type?: string;
  reason?: string;
  message?: string;
  count?: number;
  firstTimestamp?: string;
  lastTimestamp?: string;
  eventTime?: string;
  involvedObject?: { uid?: string; kind?: string; name?: string };
};

/** The Events recorded on an object, oldest first, as a table (or a note that there are none / they are not readable). */
export async function eventsSection(ctx: CliContext, kind: string, md: ObjectMeta): Promise<string> {
  let items: EventObj[];
  try {
    const res = await ctx.client.list<EventObj>(CORE.events, {
      namespace: md.namespace ?? ctx.namespace,
      fieldSelector: `involvedObject.kind=${kind},involvedObject.name=${md.name}`,
    });
    items = res.items.filter((e) => md.uid === undefined || e.involvedObject?.uid === undefined || e.involvedObject.uid === md.uid);
  } catch (err) {
    return `Events:  <cannot list events: ${(err as Error).message}>\n`;
  }
  if (items.length === 0) return 'Events:  <none>\n';
  const when = (e: EventObj): string => e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? '';
  items.sort((a, b) => when(a).localeCompare(when(b)));
  const rows = items.slice(-20).map((e) => [e.type ?? '', e.reason ?? '', `${age(when(e) || undefined)}${(e.count ?? 1) > 1 ? ` (x${e.count})` : ''}`, e.message ?? '']);
  const table = formatTable(['TYPE', 'REASON', 'AGE', 'MESSAGE'], rows)
    .split('\n')
    .map((l) => (l === '' ? l : `  ${l}`))
    .join('\n');
  return `Events:\n${table}`;
}

export interface ScopedMessages {
  cluster?: string[];
  namespaces?: Record<string, string[]>;
}

/** Warnings or errors from a results file, by scope. */
export function messagesSection(title: string, m: ScopedMessages | undefined): string {
  const cluster = m?.cluster ?? [];
  const namespaces = Object.entries(m?.namespaces ?? {}).filter(([, l]) => l.length > 0);
  if (cluster.length === 0 && namespaces.length === 0) return `${title}:  <none>\n`;
  let s = `${title}:\n`;
  if (cluster.length > 0) s += `  Cluster:\n${cluster.map((l) => `    ${l}`).join('\n')}\n`;
  if (namespaces.length > 0) {
    s += '  Namespaces:\n';
    for (const [ns, list] of namespaces.sort(([a], [b]) => a.localeCompare(b))) s += `    ${ns}:\n${list.map((l) => `      ${l}`).join('\n')}\n`;
  }
  return s;
}

/** `12 of 40` style progress, or `<none>` when the run has not counted yet. */
export function progressText(done: number | undefined, total: number | undefined): string {
  if (total === undefined || total === 0) return done === undefined ? '<none>' : String(done);
  const p = clampProgress({ phase: '', done: done ?? 0, total });
  return `${p.done} of ${p.total}`;
}

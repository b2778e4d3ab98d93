// Node label mapping for scheduling constraints: a rule "key=value,newKey=newValue" maps that label
// pair, "key,newKey" renames a key whatever its value. Applied to a pod spec's nodeSelector, its
// node affinity (required and preferred terms' matchExpressions), and, for key renames, the
// topologyKey of pod (anti-)affinity terms and topology spread constraints.
import type { KubeObject } from '../../plugin/api/index.js';
import { podSpecOf } from '../../kube/references.js';
import { arrayAt, isRecord, recordAt } from '../objects.js';

export type NodeLabelRule =
  | { key: string; kind: 'pair'; fromKey: string; fromValue: string; toKey: string; toValue: string }
  | { key: string; kind: 'key'; fromKey: string; toKey: string };

/** Parses one data value; throws with the reason. */
export function parseNodeLabelRule(key: string, value: string): NodeLabelRule {
  const parts = value.split(',').map((s) => s.trim());
  if (parts.length !== 2 || parts[0] === '' || parts[1] === '') throw new Error(`"${value}" is not "old,new" (key=value,key=value or key,key)`);
  const [from, to] = parts as [string, string];
  const fe = from.indexOf('=');
  const te = to.indexOf('=');
  if ((fe < 0) !== (te < 0)) throw new Error(`"${value}": both sides must be key=value, or both a key`);
  if (fe < 0) return { key, kind: 'key', fromKey: from, toKey: to };
  return { key, kind: 'pair', fromKey: from.slice(0, fe), fromValue: from.slice(fe + 1), toKey: to.slice(0, te), toValue: to.slice(te + 1) };
}

function mapSelector(sel: Record<string, unknown>, rules: readonly NodeLabelRule[], notes: string[]): void {
  for (const [k, v] of Object.entries(sel)) {
    const r = rules.find((x) => x.fromKey === k && (x.kind === 'key' || x.fromValue === v));
    if (r === undefined) continue;
    delete sel[k];
    const nv = r.kind === 'pair' ? r.toValue : v;
    sel[r.toKey] = nv;
    notes.push(`nodeSelector ${k}=${String(v)} -> ${r.toKey}=${String(nv)}`);
  }
}

function mapExpressions(exprs: unknown[] | undefined, rules: readonly NodeLabelRule[], where: string, notes: string[]): void {
  for (const e of exprs ?? []) {
    if (!isRecord(e) || typeof e.key !== 'string') continue;
    const key = e.key;
    const values = Array.isArray(e.values) ? e.values : [];
    const rename = rules.find((x) => x.kind === 'key' && x.fromKey === key);
    const pairs = rules.filter((x): x is Extract<NodeLabelRule, { kind: 'pair' }> => x.kind === 'pair' && x.fromKey === key && values.includes(x.fromValue));
    if (rename !== undefined) {
      e.key = rename.toKey;
      notes.push(`${where} key ${key} -> ${rename.toKey}`);
    } else if (pairs.length > 0) {
      const toKeys = new Set(pairs.map((p) => p.toKey));
      // All values of one expression share its key: pairs mapping to different keys cannot be applied.
      if (toKeys.size > 1 || (pairs.length < values.length && !toKeys.has(key))) {
        throw new Error(`${where} ${key} in (${values.join(', ')}): the node label rules map its values to different keys (${[...toKeys].join(', ')})`);
      }
      const toKey = [...toKeys][0] as string;
      e.values = values.map((v) => pairs.find((p) => p.fromValue === v)?.toValue ?? v);
      e.key = toKey;
      notes.push(`${where} ${key} in (${values.join(', ')}) -> ${toKey} in (${(e.values as string[]).join(', ')})`);
    }
  }
}

function mapTopologyKeys(terms: unknown[] | undefined, rules: readonly NodeLabelRule[], where: string, notes: string[]): void {
  for (const t of terms ?? []) {
    const term = isRecord(t) && isRecord(t.podAffinityTerm) ? t.podAffinityTerm : t;
    if (!isRecord(term) || typeof term.topologyKey !== 'string') continue;
    const r = rules.find((x) => x.kind === 'key' && x.fromKey === term.topologyKey);
    if (r === undefined) continue;
    notes.push(`${where} topologyKey ${term.topologyKey} -> ${r.toKey}`);
    term.topologyKey = r.toKey;
  }
}

/** Maps the item's pod spec in place; returns what changed. Throws when an expression cannot be mapped. */
export function mapNodeLabels(item: KubeObject, rules: readonly NodeLabelRule[]): string[] {
  const spec = podSpecOf(item);
  if (!isRecord(spec)) return [];
  const notes: string[] = [];
  const sel = recordAt(spec, 'nodeSelector');
  if (sel !== undefined) mapSelector(sel, rules, notes);
  const affinity = recordAt(spec, 'affinity');
  const node = recordAt(affinity ?? {}, 'nodeAffinity');
  if (node !== undefined) {
    const required = recordAt(node, 'requiredDuringSchedulingIgnoredDuringExecution');
    for (const term of arrayAt(required ?? {}, 'nodeSelectorTerms') ?? []) {
      if (isRecord(term)) mapExpressions(arrayAt(term, 'matchExpressions'), rules, 'required node affinity', notes);
    }
    for (const p of arrayAt(node, 'preferredDuringSchedulingIgnoredDuringExecution') ?? []) {
      if (isRecord(p) && isRecord(p.preference)) mapExpressions(arrayAt(p.preference, 'matchExpressions'), rules, 'preferred node affinity', notes);
    }
  }
  for (const kind of ['podAffinity', 'podAntiAffinity']) {
    const a = recordAt(affinity ?? {}, kind);
    if (a === undefined) continue;
    for (const when of ['requiredDuringSchedulingIgnoredDuringExecution', 'preferredDuringSchedulingIgnoredDuringExecution']) {
      mapTopologyKeys(arrayAt(a, when), rules, kind, notes);
    }
  }
  mapTopologyKeys(arrayAt(spec, 'topologySpreadConstraints'), rules, 'topology spread constraint', notes);
  return notes;
}

// The plan's items by identity (group-resource, namespace in the backup, name), in the order they
// were planned. Nested maps instead of one map keyed by a joined string: that key was a string of
// its own per item, about 90 bytes, 4.5 MB of a 50,000-item restore's heap.

/** What identifies a planned item (PlannedItem has it). */
export interface PlannedIdentity {
  groupResource: string;
  sourceNamespace: string;
  sourceName: string;
}

export class PlannedItems<PlannedItem extends PlannedIdentity = PlannedIdentity> {
  /** `groupResource NUL namespace` -> name -> item: one small map per resource and namespace. */
  private readonly byScope = new Map<string, Map<string, PlannedItem>>();
  private readonly ordered: PlannedItem[] = [];

  get size(): number {
    return this.ordered.length;
  }

  get(groupResource: string, namespace: string, name: string): PlannedItem | undefined {
    return this.byScope.get(scopeOf(groupResource, namespace))?.get(name);
  }

  has(groupResource: string, namespace: string, name: string): boolean {
    return this.get(groupResource, namespace, name) !== undefined;
  }

  /** Adds `p` unless an item with its identity is planned already; whether it was added. */
  add(p: PlannedItem): boolean {
    const scope = scopeOf(p.groupResource, p.sourceNamespace);
    let names = this.byScope.get(scope);
    if (names === undefined) this.byScope.set(scope, (names = new Map()));
    if (names.has(p.sourceName)) return false;
    names.set(p.sourceName, p);
    this.ordered.push(p);
    return true;
  }

  /** The items in the order they were added. */
  values(): IterableIterator<PlannedItem> {
    return this.ordered.values();
  }
}

function scopeOf(groupResource: string, namespace: string): string {
  return `${groupResource}\u0000${namespace}`;
}

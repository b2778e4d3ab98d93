// LIST pages sized by bytes as well as by items. The apiserver bounds a page by item count only, so
// the limit of each page is worked out from the bytes per item seen before: the previous pages of the
// same listing, else the last listing of the same resource, else a typical object's size (51 items
// under the default 1 MiB budget; guessing etcd's largest object instead cost every resource of
// more than one item an extra LIST, and guessing small objects a cut-off page). A page that runs
// far past the budget (objects much larger than guessed) is cut off while it is read and asked again
// as if each item were etcd's largest object: a response of more than one item never grows past
// twice the budget.

/** The size assumed for the objects of a resource never listed before. */
export const FIRST_GUESS_ITEM_BYTES = 16 * 1024;
/** The largest object etcd accepts by default (--max-request-bytes 1.5 MiB): the size assumed after a page overflowed. */
export const UNKNOWN_ITEM_BYTES = 1.5 * 1024 * 1024;
/** Pages aim this much below the budget, so an average item a little larger than the last does not overshoot. */
const HEADROOM = 1.25;

export class PageSizer {
  /** Bytes per item of the last listing of each resource (its largest page average). */
  private readonly lastListing = new Map<string, number>();

  /** budget <= 0 disables the byte budget. */
  constructor(readonly budget: number) {}

  get enabled(): boolean {
    return this.budget > 0;
  }

  /** A response is cut off beyond this many bytes; Infinity when disabled. */
  get cutoff(): number {
    return this.enabled ? 2 * this.budget : Infinity;
  }

  /** One listing of `resource`, pages of at most `maxItems`. */
  listing(resource: string, maxItems: number): PageListing {
    return new PageListing(this, resource, maxItems, this.lastListing.get(resource));
  }

  /** @internal */
  remember(resource: string, bytesPerItem: number): void {
    this.lastListing.set(resource, bytesPerItem);
  }
}

export class PageListing {
  private perItem: number | undefined;
  private seen: number | undefined;
  /** Set by an overflow: pages of this listing stay at most this long. */
  private ceiling = Infinity;

  constructor(private readonly sizer: PageSizer, private readonly resource: string, private readonly maxItems: number, remembered: number | undefined) {
    this.perItem = remembered;
  }

  /** The limit of the next page. */
  limit(): number {
    if (!this.sizer.enabled) return this.maxItems;
    const per = Math.max(1, this.perItem ?? FIRST_GUESS_ITEM_BYTES);
    return Math.max(1, Math.min(this.maxItems, this.ceiling, Math.floor(this.sizer.budget / (per * HEADROOM))));
  }

  /** A page arrived: `bytes` of body holding `items` items. */
  observe(bytes: number, items: number): void {
    if (items === 0) return;
    const per = bytes / items;
    // The largest average of this listing, so one page of small items does not undo the caution a
    // page of large ones taught.
    this.seen = Math.max(this.seen ?? 0, per);
    this.perItem = this.seen;
    this.sizer.remember(this.resource, this.seen);
  }

  /**
   * A page of `limit` items was cut off past the cutoff: forget what was assumed and ask again at the
   * unknown-size limit, and at most half of `limit` (items larger than etcd's default limit, in a
   * cluster that raised it), so the pages shrink to one item, which is read whatever its size.
   */
  overflowed(limit: number): void {
    this.perItem = UNKNOWN_ITEM_BYTES;
    this.ceiling = Math.max(1, Math.floor(limit / 2));
  }
}

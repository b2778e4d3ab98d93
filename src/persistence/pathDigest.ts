// An order-independent digest of a multiset of paths, so two sides can be compared without either
// being held: a restore reads 100k tarball entries and must not keep a table of their paths (~20 MB
// at 50,000 items) only to compare them with the resource list at the end (see verify.ts).
//
// Each path is hashed with SHA-256 under a random key of the check's own, and the hashes are added
// modulo 2^256. Whoever wrote the archive never learns the key, so they cannot choose paths whose sum
// collides; addition (unlike XOR) keeps a path listed twice from cancelling out.
import { hash, randomBytes } from 'node:crypto';

const LANES = 8; // 8 × 32 bits

export interface PathDigest {
  add(path: string): void;
  /** An empty digest under the same key, for the other side of the comparison. */
  sibling(): PathDigest;
  /** Whether both sides added the same paths, as many times each (both under one key). */
  equals(other: PathDigest): boolean;
}

export function pathDigest(key: Buffer = randomBytes(32)): PathDigest {
  return new KeyedPathDigest(key);
}

class KeyedPathDigest implements PathDigest {
  private readonly sum = new Uint32Array(LANES);
  private count = 0;

  constructor(private readonly key: Buffer) {}

  add(path: string): void {
    // One-shot over key + path: a copied Hash per path held a native context until V8 collected it.
    const h = hash('sha256', Buffer.concat([this.key, Buffer.from(path)]), 'buffer');
    let carry = 0;
    for (let i = 0; i < LANES; i++) {
      const s = (this.sum[i] as number) + h.readUInt32LE(i * 4) + carry;
      this.sum[i] = s >>> 0;
      carry = s > 0xffffffff ? 1 : 0;
    }
    this.count++;
  }

  sibling(): PathDigest {
    return new KeyedPathDigest(this.key);
  }

  equals(other: PathDigest): boolean {
    if (!(other instanceof KeyedPathDigest) || other.key !== this.key || other.count !== this.count) return false;
    return other.sum.every((v, i) => v === this.sum[i]);
  }
}

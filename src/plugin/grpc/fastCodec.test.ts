import { describe, expect, it } from 'vitest';
import { GetObjectResponse, PutObjectRequest } from '../../gen/stowage/plugin/v1/object_store.js';
import { FastObjectStoreService } from './fastCodec.js';

const put = FastObjectStoreService.putObject;
const get = FastObjectStoreService.getObject;

describe('fast chunk codec', () => {
  it.each([0, 1, 127, 128, 16383, 16384, 1024 * 1024])('writes the same bytes as the generated code for a %i-byte chunk', (n) => {
    const chunk = Buffer.alloc(n, 7);
    const msg: PutObjectRequest = { part: { $case: 'chunk', chunk } };
    const same = (m: { chunk: Uint8Array } | undefined): boolean => m !== undefined && Buffer.from(m.chunk).equals(chunk);
    const fast = put.requestSerialize(msg);
    expect(fast.equals(Buffer.from(PutObjectRequest.encode(msg).finish()))).toBe(true);
    const back = put.requestDeserialize(fast).part;
    expect(back?.$case === 'chunk' && same(back)).toBe(true);
    const res: GetObjectResponse = { chunk };
    const fastRes = get.responseSerialize(res);
    // proto3 omits an empty bytes field: both encodings decode to the same message.
    expect(same(GetObjectResponse.decode(fastRes))).toBe(true);
    expect(same(get.responseDeserialize(Buffer.from(GetObjectResponse.encode(res).finish())))).toBe(true);
    expect(same(get.responseDeserialize(fastRes))).toBe(true);
  });

  it('decodes chunks without copying', () => {
    const wire = put.requestSerialize({ part: { $case: 'chunk', chunk: Buffer.from('abc') } });
    const decoded = put.requestDeserialize(wire);
    if (decoded.part?.$case !== 'chunk') throw new Error('not a chunk');
    expect(decoded.part.chunk.buffer).toBe(wire.buffer);
  });

  it('falls back to the generated code for headers and unusual encodings', () => {
    const header: PutObjectRequest = { part: { $case: 'header', header: { instance: { plugin: 'a/b', instanceId: 'i' }, bucket: 'bk', key: 'k' } } };
    expect(put.requestDeserialize(put.requestSerialize(header))).toEqual(header);
    // A chunk followed by an unknown field is still decoded correctly (by the generated code).
    const withExtra = Buffer.concat([Buffer.from(PutObjectRequest.encode({ part: { $case: 'chunk', chunk: Buffer.from('xy') } }).finish()), Buffer.from([0x18, 0x01])]);
    expect(put.requestDeserialize(withExtra)).toEqual({ part: { $case: 'chunk', chunk: Buffer.from('xy') } });
  });
});

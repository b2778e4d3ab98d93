// A small, real ObjectStore over @aws-sdk/client-s3 against the test S3 server (not a mock), for
// engine tests that run before the built-in S3 plugin is wired in. Streams uploads with lib-storage.
import { Readable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  S3Client,
  type ListObjectsV2CommandOutput,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { inject } from 'vitest';
import type { ObjectStore } from '../../src/plugin/api/index.js';

export interface TestS3 {
  client: S3Client;
  store: ObjectStore;
  /** Creates a bucket with a unique name and returns it. */
  createBucket(name: string): Promise<string>;
  close(): void;
}

function notFound(key: string, cause: unknown): Error {
  return Object.assign(new Error(`object ${key} not found`, { cause }), { code: 'NotFound' });
}

export function testS3(): TestS3 {
  const cfg = inject('s3');
  const client = new S3Client({
    endpoint: cfg.endpoint,
    region: cfg.region,
    forcePathStyle: true,
    credentials: { accessKeyId: cfg.accessKeyId, secretAccessKey: cfg.secretAccessKey },
  });
  const listAll = async (bucket: string, prefix: string, delimiter?: string): Promise<ListObjectsV2CommandOutput[]> => {
    const pages: ListObjectsV2CommandOutput[] = [];
    let token: string | undefined;
    do {
      const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, Delimiter: delimiter, ContinuationToken: token }));
      pages.push(page);
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    return pages;
  };
  const store: ObjectStore = {
    async init() {},
    async putObject(bucket, key, body) {
      const upload = new Upload({ client, params: { Bucket: bucket, Key: key, Body: Readable.from(body) }, partSize: 5 * 1024 * 1024, queueSize: 2 });
      await upload.done();
    },
    async getObject(bucket, key) {
      try {
        const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        return out.Body as Readable;
      } catch (err) {
        if ((err as { name?: string }).name === 'NoSuchKey') throw notFound(key, err);
        throw err;
      }
    },
    async objectExists(bucket, key) {
      try {
        await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
        return true;
      } catch (err) {
        if ((err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return false;
        throw err;
      }
    },
    async listCommonPrefixes(bucket, prefix, delimiter) {
      return (await listAll(bucket, prefix, delimiter)).flatMap((p) => (p.CommonPrefixes ?? []).map((c) => c.Prefix ?? ''));
    },
    async listObjects(bucket, prefix) {
      return (await listAll(bucket, prefix)).flatMap((p) => (p.Contents ?? []).map((c) => c.Key ?? ''));
    },
    async deleteObject(bucket, key) {
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    },
    async createSignedURL() {
      throw new Error('createSignedURL is not needed by these tests');
    },
  };
  return {
    client,
    store,
    async createBucket(name) {
      await client.send(new CreateBucketCommand({ Bucket: name }));
      return name;
    },
    close: () => client.destroy(),
  };
}

/** The text of a gzipped object in the test S3 server (a run's log or results, as the server wrote them). */
export async function readGzippedObject(bucket: string, key: string): Promise<string> {
  const s3 = testS3();
  try {
    const out = await s3.client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    return gunzipSync(Buffer.from(await out.Body!.transformToByteArray())).toString();
  } finally {
    s3.close();
  }
}

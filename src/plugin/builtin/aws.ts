// stowage.dev/aws: an object store on S3 or any S3-compatible endpoint. Uploads stream through
// @aws-sdk/lib-storage multipart (no temp file); downloads stream; signed URLs via the presigner.
// The `bucket` and `prefix` config keys are informational: callers pass the bucket with every
// call and build keys with the prefix themselves.
import https from 'node:https';
import { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { fromIni } from '@aws-sdk/credential-provider-ini';
import type { ObjectStore, PluginConfig, ResumableGetObject } from '../api/index.js';
import { log } from '../sdk/index.js';
import { parseAwsConfig } from './awsConfig.js';

/** Multipart part size: 8 MiB parts, 4 in flight, bounds upload memory at ~32 MiB. */
const PART_SIZE = 8 * 1024 * 1024;
const QUEUE_SIZE = 4;

class NotFoundError extends Error {
  readonly code = 'NotFound';
}

function httpStatus(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
}

function errName(err: unknown): string | undefined {
  return (err as { name?: string }).name;
}

function isAsyncIterable(v: unknown): v is AsyncIterable<Uint8Array> {
  return typeof v === 'object' && v !== null && Symbol.asyncIterator in v;
}

export class AwsObjectStore implements ObjectStore, ResumableGetObject {
  private client: S3Client | undefined;

  async init(config: PluginConfig): Promise<void> {
    const c = parseAwsConfig(config);
    const clientConfig: S3ClientConfig = { region: c.region, forcePathStyle: c.forcePathStyle };
    if (c.endpoint !== undefined) clientConfig.endpoint = c.endpoint;
    if (c.insecureSkipTLSVerify || c.caCert !== undefined) {
      const agentOptions: https.AgentOptions = { keepAlive: true };
      if (c.insecureSkipTLSVerify) agentOptions.rejectUnauthorized = false;
      if (c.caCert !== undefined) agentOptions.ca = c.caCert;
      clientConfig.requestHandler = { httpsAgent: new https.Agent(agentOptions) };
    }
    if (c.credentialsFile !== undefined) {
      const creds: Parameters<typeof fromIni>[0] = { filepath: c.credentialsFile, configFilepath: c.credentialsFile, ignoreCache: true };
      if (c.profile !== undefined) creds.profile = c.profile;
      clientConfig.credentials = fromIni(creds);
    } else if (c.profile !== undefined) {
      clientConfig.profile = c.profile;
    }
    this.client?.destroy();
    this.client = new S3Client(clientConfig);
    log.info('aws object store ready', { region: c.region, endpoint: c.endpoint ?? 'aws', forcePathStyle: c.forcePathStyle });
  }

  private s3(): S3Client {
    if (this.client === undefined) throw new Error('aws object store: Init was not called');
    return this.client;
  }

  async putObject(bucket: string, key: string, body: AsyncIterable<Uint8Array>): Promise<void> {
    const upload = new Upload({
      client: this.s3(),
      params: { Bucket: bucket, Key: key, Body: Readable.from(body, { objectMode: false }) },
      partSize: PART_SIZE,
      queueSize: QUEUE_SIZE,
      leavePartsOnError: false,
    });
    await upload.done();
  }

  async getObject(bucket: string, key: string): Promise<AsyncIterable<Uint8Array>> {
    return this.getObjectFrom(bucket, key, 0);
  }

  async getObjectFrom(bucket: string, key: string, offset: number): Promise<AsyncIterable<Uint8Array>> {
    try {
      const res = await this.s3().send(
        new GetObjectCommand({ Bucket: bucket, Key: key, ...(offset > 0 ? { Range: `bytes=${offset}-` } : {}) }),
      );
      if (!isAsyncIterable(res.Body)) throw new Error(`GetObject ${bucket}/${key}: the response has no readable body`);
      return res.Body;
    } catch (err) {
      if (errName(err) === 'NoSuchKey' || httpStatus(err) === 404) throw new NotFoundError(`object ${bucket}/${key} not found`);
      // Asking for bytes from exactly the end of the object: nothing left to send.
      if (offset > 0 && httpStatus(err) === 416) return Readable.from([]);
      throw err;
    }
  }

  async objectExists(bucket: string, key: string): Promise<boolean> {
    try {
      await this.s3().send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
      return true;
    } catch (err) {
      if (errName(err) === 'NotFound' || httpStatus(err) === 404) return false;
      throw err;
    }
  }

  async listCommonPrefixes(bucket: string, prefix: string, delimiter: string): Promise<string[]> {
    const out: string[] = [];
    let token: string | undefined;
    do {
      const res = await this.s3().send(
        new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, Delimiter: delimiter, ContinuationToken: token }),
      );
      for (const p of res.CommonPrefixes ?? []) if (p.Prefix !== undefined) out.push(p.Prefix);
      token = res.IsTruncated === true ? res.NextContinuationToken : undefined;
    } while (token !== undefined);
    return out;
  }

  async listObjects(bucket: string, prefix: string): Promise<string[]> {
    const out: string[] = [];
    let token: string | undefined;
    do {
      const res = await this.s3().send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
      for (const o of res.Contents ?? []) if (o.Key !== undefined) out.push(o.Key);
      token = res.IsTruncated === true ? res.NextContinuationToken : undefined;
    } while (token !== undefined);
    return out;
  }

  async deleteObject(bucket: string, key: string): Promise<void> {
    await this.s3().send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
  }

  async createSignedURL(bucket: string, key: string, ttlSeconds: number): Promise<string> {
    return getSignedUrl(this.s3(), new GetObjectCommand({ Bucket: bucket, Key: key }), { expiresIn: ttlSeconds });
  }
}

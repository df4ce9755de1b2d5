/** Upload slots: who may use an uploaded object, how big it was declared, and when the slot expires. */
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { ddb } from '../aws/dynamodb.js';
import { tables } from '../infra/resources.js';
import { resource } from '../resource-name.js';

const uploadsTable = resource(tables.uploads.envVar);

export interface UploadRecord {
  uploadId: string;
  tenantId: string;
  objectKey: string;
  fileName: string;
  contentLength: number;
  createdAt: string;
  /** Uploads are usable for runs until this moment (the retention period), not just the URL lifetime. */
  expiresAt: string;
  expiresAtEpoch: number;
}

export async function putUpload(record: UploadRecord): Promise<void> {
  await ddb.send(
    new PutCommand({ TableName: uploadsTable(), Item: record, ConditionExpression: 'attribute_not_exists(uploadId)' }),
  );
}

/** The tenant's live upload, or null when unknown, expired or another tenant's (all answer UPLOAD_NOT_FOUND). */
export async function getUploadForTenant(
  uploadId: string,
  tenantId: string,
  now = new Date(),
): Promise<UploadRecord | null> {
  const out = await ddb.send(new GetCommand({ TableName: uploadsTable(), Key: { uploadId }, ConsistentRead: true }));
  const upload = out.Item as UploadRecord | undefined;
  if (!upload || upload.tenantId !== tenantId || upload.expiresAt <= now.toISOString()) return null;
  return upload;
}

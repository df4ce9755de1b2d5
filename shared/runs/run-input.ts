/**
 * What a run's body names, checked as creation checks it: the tenant's upload (ownership, presence, size, then the real
 * type, readability and limits from the stored bytes) and the task (its schema). Shared by run creation, estimates and
 * evaluations. Not to undo: it reads and never writes, and loads no table but uploads', so a handler that only reads
 * (POST /v1/estimates) needs no other table.
 */
import { config } from '../config.js';
import { AUTO_SCHEMA, type CreateRunRequest } from '../contract.js';
import { UnknownSchemaError, UploadIncompleteError, UploadNotFoundError, UploadSizeMismatchError } from '../errors.js';
import { inspectUpload } from '../inspect/index.js';
import { buildTask, registry } from '../registry/registry.js';
import { getUploadForTenant } from '../store/uploads.js';
import type { TaskSpec } from '../task.js';
import { ObjectChangedError, openStoredObject } from '../uploads/stored-object.js';

/**
 * An upload of the tenant's as run creation checks it, in the contract's order: ownership and presence, size, then
 * the real type, readability and limits from the stored bytes (ranged reads). Throws the first failing check's error.
 */
export async function inspectTenantUpload(tenantId: string, uploadId: string, now = new Date()) {
  const upload = await getUploadForTenant(uploadId, tenantId, now);
  if (!upload) throw new UploadNotFoundError(uploadId);
  const object = await openStoredObject(upload.objectKey);
  if (!object) throw new UploadIncompleteError(uploadId);
  if (object.sizeBytes !== upload.contentLength)
    throw new UploadSizeMismatchError(upload.contentLength, object.sizeBytes);
  const facts = await inspectUpload(object.read, object.sizeBytes, config.limits).catch((error: unknown) => {
    // Replaced while it was being read: the client is still writing the upload.
    throw error instanceof ObjectChangedError ? new UploadIncompleteError(uploadId) : error;
  });
  return { upload, object, facts };
}

/**
 * The task a run's body asks for: its schema from the registry (UnknownSchemaError) or inline, prompt and format. A
 * packet (`split`, `schemaId: "auto"`) has no schema of its own: each document's is chosen among `schemaIds`.
 */
export function taskOf(
  body: Pick<CreateRunRequest, 'prompt' | 'outputFormat' | 'schemaId' | 'schema' | 'split'>,
): TaskSpec {
  const packet = body.split === true || body.schemaId === AUTO_SCHEMA;
  if (packet) return buildTask({ prompt: body.prompt, outputFormat: body.outputFormat });
  let schema = body.schema;
  if (body.schemaId !== undefined) {
    const entry = registry.get(body.schemaId);
    if (!entry) throw new UnknownSchemaError(body.schemaId, [...registry.keys()]);
    schema = entry;
  }
  return buildTask({ prompt: body.prompt, outputFormat: body.outputFormat, schemaId: body.schemaId, schema });
}

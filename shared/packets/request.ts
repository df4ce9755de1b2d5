/**
 * What a run creation asks of packets (contract-v1.2 §3), checked against the file and the registry once the body's
 * own rules (shared/contract.ts) have passed: `split: true` needs a PDF; every `schemaIds` entry must be a registry
 * schema (default: all of them). The answer is recorded on the run for the worker.
 */
import { AUTO_SCHEMA, type CreateRunRequest } from '../contract.js';
import { InvalidRequestError, UnknownSchemaError } from '../errors.js';
import type { FileFacts } from '../file-facts.js';
import { registry } from '../registry/registry.js';
import type { RunRecord } from '../store/runs.js';

/** A packet run: split into documents, or one document classed first (`auto`), among `schemaIds`. */
export type PacketRequest = NonNullable<RunRecord['packet']>;

/**
 * The packet this request asks for, or null for an ordinary run. Throws INVALID_REQUEST for `split` on a file that is
 * not a PDF, UNKNOWN_SCHEMA for an id of `schemaIds` the registry does not have.
 */
export function packetRequestOf(
  body: Pick<CreateRunRequest, 'split' | 'schemaId' | 'schemaIds'>,
  facts: FileFacts,
): PacketRequest | null {
  const mode = body.split === true ? 'split' : body.schemaId === AUTO_SCHEMA ? 'auto' : null;
  if (mode === null) return null;
  if (mode === 'split' && facts.kind !== 'pdf') {
    throw new InvalidRequestError(
      'split: true needs a PDF',
      [{ path: 'split', message: `split needs a PDF; the upload is ${facts.mime}` }],
      { reason: 'split_needs_pdf' },
    );
  }
  const known = [...registry.keys()];
  const unknown = body.schemaIds?.find((id) => !registry.has(id));
  if (unknown !== undefined) throw new UnknownSchemaError(unknown, known);
  return { mode, schemaIds: body.schemaIds ?? known };
}

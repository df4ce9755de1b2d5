/** POST /v1/uploads/presign: the upload slot, the signed PUT address and the checks on the declared file. */
import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { handler } from '../../functions/presign.js';
import { safeFileName, uploadObjectKey } from '../../shared/uploads/object-key.js';
import { call, expectContractHeaders, expectError } from '../support/api.js';
import { bucketName, tableName } from '../support/aws.js';

const ddb = mockClient(DynamoDBDocumentClient);
const MiB = 1024 * 1024;

beforeEach(() => {
  ddb.reset();
  ddb.on(PutCommand).resolves({});
});

function presign(body: unknown, tenantId = 'tenant-a') {
  return call(handler, { method: 'POST', path: '/v1/uploads/presign', body, auth: { tenantId } });
}

describe('a valid request', () => {
  test('answers 200 with uploadId, uploadUrl, expiresAt, method PUT, the header to send and maxBytes', async () => {
    const before = Date.now();
    const answer = await presign({ fileName: 'receipt.png', contentLength: 13775 });
    expect(answer.status).toBe(200);
    expectContractHeaders(answer);
    expect(answer.body).toEqual({
      uploadId: expect.stringMatching(/^upl_[0-9a-f]{32}$/),
      uploadUrl: expect.stringMatching(/^https:\/\//),
      expiresAt: expect.any(String),
      method: 'PUT',
      headers: { 'Content-Type': 'application/octet-stream' },
      maxBytes: 20 * MiB,
    });
    // The address lives 900 s by default.
    const expires = Date.parse(answer.body.expiresAt);
    expect(expires).toBeGreaterThanOrEqual(before + 900_000 - 1000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 900_000 + 1000);
    expect(answer.body.expiresAt).toMatch(/Z$/);
  });

  test('the URL is a PUT to the uploads bucket signed for content-length and content-type, valid 900 s', async () => {
    const answer = await presign({ fileName: 'receipt.png', contentLength: 13775 });
    const url = new URL(answer.body.uploadUrl);
    expect(url.href).toContain(bucketName());
    expect(url.pathname).toContain(answer.body.uploadId);
    const signed = (url.searchParams.get('X-Amz-SignedHeaders') ?? '').split(';');
    expect(signed).toEqual(expect.arrayContaining(['content-length', 'content-type']));
    expect(url.searchParams.get('X-Amz-Expires')).toBe('900');
    expect(url.searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
    expect(url.searchParams.get('x-id')).toBe('PutObject');
    // No API key or other secret in the address the client is given.
    expect(url.href).not.toMatch(/api[-_]?key/i);
  });

  test('a name with accents, spaces and other scripts is stored as given', async () => {
    const answer = await presign({ fileName: 'reçu été 領収書.png', contentLength: 10 });
    expect(answer.status).toBe(200);
    expect(ddb.commandCalls(PutCommand)[0]?.args[0].input.Item?.fileName).toBe('reçu été 領収書.png');
  });

  test.each([
    ['NUL', 'scan.pdf\u0000'],
    ['CR LF', 're\r\nceipt.png'],
    ['ESC (a terminal escape)', '\u001b[31mreceipt.png'],
    ['tab', 'a\tb.png'],
    ['DEL', 'a\u007f.png'],
    ['C1 (CSI)', 'a\u009b2J.png'],
    ['a right-to-left override (invoice‮gnp.exe reads as invoiceexe.png)', 'invoice\u202egnp.pdf'],
    ['a left-to-right isolate', 'a\u2066b.png'],
    ['a right-to-left mark', 'a\u200fb.png'],
  ])('a name with %s is refused 400 INVALID_REQUEST on fileName, and nothing is stored', async (_, fileName) => {
    const error = expectError(await presign({ fileName, contentLength: 10 }), 'INVALID_REQUEST');
    expect(error.details.issues).toEqual([
      { path: 'fileName', message: expect.stringContaining('control characters') },
    ]);
    expect(ddb).not.toHaveReceivedAnyCommand();
  });

  test('the object, and so every address of it, ends in the file’s own name (tab titles, download names)', async () => {
    const answer = await presign({ fileName: 'invoice.pdf', contentLength: 10 }, 'tenant-z');
    const key = ddb.commandCalls(PutCommand)[0]?.args[0].input.Item?.objectKey;
    expect(key).toBe(`uploads/tenant-z/${answer.body.uploadId}/invoice.pdf`);
    expect(new URL(answer.body.uploadUrl).pathname.endsWith(`/${answer.body.uploadId}/invoice.pdf`)).toBe(true);
  });

  test.each([
    ['reçu 2026.png', 're_u 2026.png'],
    ['a/b.png', 'a_b.png'],
    ['50%"off".png', '50__off_.png'],
    ['..png', '..png'],
  ])('in the key, %j is reduced to safe characters: %j', async (fileName, name) => {
    const answer = await presign({ fileName, contentLength: 10 });
    expect(ddb.commandCalls(PutCommand)[0]?.args[0].input.Item).toEqual(
      expect.objectContaining({ fileName, objectKey: `uploads/tenant-a/${answer.body.uploadId}/${name}` }),
    );
  });

  test('every upload gets a fresh id and address', async () => {
    const a = await presign({ fileName: 'a.png', contentLength: 10 });
    const b = await presign({ fileName: 'a.png', contentLength: 10 });
    expect(a.body.uploadId).not.toBe(b.body.uploadId);
    expect(a.body.uploadUrl).not.toBe(b.body.uploadUrl);
  });

  test('the upload slot is stored for the calling tenant with the declared size, once', async () => {
    const answer = await presign({ fileName: 'scan.pdf', contentLength: 4096 }, 'tenant-z');
    expect(ddb).toHaveReceivedCommandTimes(PutCommand, 1);
    const put = ddb.commandCalls(PutCommand)[0]?.args[0].input;
    expect(put?.TableName).toBe(tableName('uploads'));
    expect(put?.ConditionExpression).toBe('attribute_not_exists(uploadId)');
    expect(put?.Item).toEqual(
      expect.objectContaining({
        uploadId: answer.body.uploadId,
        tenantId: 'tenant-z',
        fileName: 'scan.pdf',
        contentLength: 4096,
        objectKey: expect.stringContaining('tenant-z'),
        expiresAtEpoch: expect.any(Number),
      }),
    );
    // The object key the URL points at is the one recorded.
    expect(new URL(answer.body.uploadUrl).pathname).toContain(put?.Item?.objectKey);
    // The slot stays usable for runs for the retention period (24 h), longer than the URL.
    const usableUntil = Date.parse(put?.Item?.expiresAt as string);
    expect(usableUntil - Date.now()).toBeGreaterThan(23 * 3600_000);
  });

  test.each([['receipt.JPG'], ['receipt.Jpeg'], ['photo.HEIC'], ['scan.PDF'], ['IMG.PnG']])(
    'the extension check ignores letter case (%s is accepted)',
    async (fileName) => {
      const answer = await presign({ fileName, contentLength: 100 });
      expect(answer.status).toBe(200);
    },
  );

  test('PDFs may be larger than images: maxBytes is 100 MiB for .pdf', async () => {
    const answer = await presign({ fileName: 'big.pdf', contentLength: 30 * MiB });
    expect(answer.status).toBe(200);
    expect(answer.body.maxBytes).toBe(100 * MiB);
  });

  test('exactly the limit is accepted', async () => {
    const answer = await presign({ fileName: 'big.jpg', contentLength: 20 * MiB });
    expect(answer.status).toBe(200);
  });
});

describe('a rejected request writes nothing', () => {
  afterEach(() => {
    expect(ddb).not.toHaveReceivedCommand(PutCommand);
  });

  test.each([['animation.gif'], ['notes.txt'], ['archive.zip'], ['no-extension'], ['trailing-dot.'], ['png']])(
    'an unsupported extension (%s) answers 415 UNSUPPORTED_FILE_TYPE listing the supported ones',
    async (fileName) => {
      const answer = await presign({ fileName, contentLength: 100 });
      const error = expectError(answer, 'UNSUPPORTED_FILE_TYPE');
      expect(error.details.supported).toEqual(['.jpg', '.jpeg', '.png', '.heic', '.pdf']);
    },
  );

  test('a name that only contains a supported extension earlier (receipt.png.gif) is refused', async () => {
    const answer = await presign({ fileName: 'receipt.png.gif', contentLength: 100 });
    expectError(answer, 'UNSUPPORTED_FILE_TYPE');
  });

  test('contentLength 0 answers 400 INVALID_REQUEST naming contentLength', async () => {
    const answer = await presign({ fileName: 'a.png', contentLength: 0 });
    const error = expectError(answer, 'INVALID_REQUEST');
    expect(error.details.issues.map((i: { path: string }) => i.path)).toContain('contentLength');
  });

  test.each([[-5], [1.5]])('contentLength %p answers 400', async (contentLength) => {
    const answer = await presign({ fileName: 'a.png', contentLength });
    expectError(answer, 'INVALID_REQUEST');
  });

  test('an image over 20 MiB answers 413 FILE_TOO_LARGE with the size and the limit', async () => {
    const answer = await presign({ fileName: 'huge.jpg', contentLength: 20 * MiB + 1 });
    const error = expectError(answer, 'FILE_TOO_LARGE');
    expect(error.details).toEqual({ sizeBytes: 20 * MiB + 1, limitBytes: 20 * MiB });
  });

  test('a PDF over 100 MiB answers 413 FILE_TOO_LARGE', async () => {
    const answer = await presign({ fileName: 'huge.pdf', contentLength: 100 * MiB + 1 });
    const error = expectError(answer, 'FILE_TOO_LARGE');
    expect(error.details.limitBytes).toBe(100 * MiB);
  });

  test('an unknown field answers 400', async () => {
    const answer = await presign({ fileName: 'a.png', contentLength: 10, contentType: 'image/png' });
    expectError(answer, 'INVALID_REQUEST');
  });
});

describe('safeFileName (a name in a storage key or a header)', () => {
  test('dots alone are never a name: URL parsers would resolve `..` away with the signed address', () => {
    for (const name of ['.', '..', '...', ' .. ', '']) expect(safeFileName(name)).toBeUndefined();
    expect(uploadObjectKey('t', 'upl_1', '..')).toBe('uploads/t/upl_1/file');
    expect(safeFileName('a'.repeat(300))).toHaveLength(200);
  });
});

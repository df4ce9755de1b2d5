/**
 * The SDK's hand-written wire types (sdk/types.ts) against the contract's zod schemas (shared/contract.ts), checked by
 * `npm run typecheck` (a type error here is the failure; there is nothing to run). For every type:
 * - every value the contract allows is one the SDK's type allows (responses: what the service sends; requests: what
 *   the API accepts, so the SDK never refuses a valid request);
 * - what the SDK lets a caller send is what the API accepts;
 * - the SDK knows every field the contract has (a new contract field fails here until sdk/types.ts has it).
 * The SDK may know a field the contract does not have yet (`progress` on a queued run, contract-v1.1 §2).
 * And the results typed per built-in schema (sdk/schemas.ts, generated from the registry and held to it by
 * test/unit/sdk-schemas.test.ts) are what `analyze` gives for a registry `schemaId`, and results the contract allows.
 */
import type { ResultFor, VisionClient } from '../../sdk/index.js';
import type * as schemas from '../../sdk/schemas.js';
import type * as sdk from '../../sdk/types.js';
import type * as contract from '../../shared/contract.js';
import type { ErrorCode } from '../../shared/errors.js';
import type * as z from '../../shared/zod.js';

/** Compiles only when `T` is `true`. */
type Assert<T extends true> = T;
/** `A` and `B` are the same type. */
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
/** `Wide` accepts every value of `Narrow`. */
type Accepts<Wide, Narrow> = [Narrow] extends [Wide] ? true : false;
/** Every top-level field of `Contract` (of each member of a union) is a field of `Sdk`. */
type KnowsFields<Sdk, Contract> = [Exclude<Contract extends unknown ? keyof Contract : never, AllKeys<Sdk>>] extends [
  never,
]
  ? true
  : false;
type AllKeys<T> = T extends unknown ? keyof T : never;
/** The SDK's type of a response: it accepts the contract's values and knows all their fields. */
type Response<Sdk, Contract> = Accepts<Sdk, Contract> extends true ? KnowsFields<Sdk, Contract> : false;
/** The SDK's type of a request: the same both ways (what it sends the API accepts, and nothing valid is refused). */
type Request<Sdk, Contract> =
  Accepts<Sdk, Contract> extends true
    ? Accepts<Contract, Sdk> extends true
      ? KnowsFields<Sdk, Contract>
      : false
    : false;

export type Checks = [
  Assert<Accepts<sdk.ErrorCode, ErrorCode>>,
  Assert<Accepts<ErrorCode, sdk.ErrorCode>>,
  Assert<Response<sdk.ErrorBody, contract.ErrorBody>>,
  Assert<Request<sdk.PresignRequest, contract.PresignRequest>>,
  Assert<Response<sdk.PresignResponse, contract.PresignResponse>>,
  Assert<Request<sdk.CreateRunInput, z.input<typeof contract.createRunRequest>>>,
  Assert<Request<sdk.InlineSchema, contract.InlineSchema>>,
  Assert<Response<sdk.CreateRunResponse, contract.CreateRunResponse>>,
  Assert<Request<sdk.EstimateInput, z.input<typeof contract.estimateRequest>>>,
  Assert<Request<sdk.DeclaredFile, z.input<typeof contract.declaredFile>>>,
  Assert<Response<sdk.EstimateResponse, contract.EstimateResponse>>,
  Assert<Response<sdk.RunResponse, contract.RunResponse>>,
  Assert<Response<sdk.QueuedRun, Extract<contract.RunResponse, { status: 'queued' }>>>,
  Assert<Response<sdk.CompletedRun, Extract<contract.RunResponse, { status: 'completed' }>>>,
  Assert<Response<sdk.FailedRun, Extract<contract.RunResponse, { status: 'failed' }>>>,
  Assert<Response<sdk.RunFile, contract.RunFile>>,
  Assert<Response<sdk.Attempt, contract.Attempt>>,
  Assert<Response<sdk.Usage, contract.Usage>>,
  Assert<Response<sdk.Verification, contract.Verification>>,
  // `limit` arrives as a query string (coerced); the SDK takes the number.
  Assert<Request<sdk.ListRunsInput, Partial<contract.ListRunsQuery>>>,
  Assert<Response<sdk.ListRunsResponse, contract.ListRunsResponse>>,
  Assert<Request<sdk.VerifyRequest, contract.VerifyRequest>>,
  Assert<Response<sdk.VerifyResponse, contract.VerifyResponse>>,
  Assert<Response<sdk.SchemasResponse, contract.SchemasResponse>>,
  Assert<Request<sdk.UsageQuery, contract.UsageQuery>>,
  Assert<Response<sdk.UsageResponse, contract.UsageResponse>>,
  Assert<Response<sdk.UsageRow, contract.UsageRow>>,
  Assert<Response<sdk.FileUrlResponse, contract.FileUrlResponse>>,
  Assert<Response<sdk.WhoamiResponse, contract.WhoamiResponse>>,
  Assert<Response<sdk.HealthResponse, z.infer<typeof contract.healthResponse>>>,
  Assert<Request<sdk.CreateWebhookInput, z.input<typeof contract.createWebhookRequest>>>,
  Assert<Response<sdk.CreatedWebhook, contract.CreateWebhookResponse>>,
  Assert<Response<sdk.Webhook, contract.Webhook>>,
  Assert<Response<sdk.ListWebhooksResponse, contract.ListWebhooksResponse>>,
  Assert<Response<sdk.WebhookDelivery, contract.WebhookDelivery>>,
  Assert<Response<sdk.WebhookDeliveriesResponse, contract.WebhookDeliveriesResponse>>,
  Assert<Response<sdk.WebhookEvent, contract.WebhookEvent>>,
  Assert<Request<sdk.CreateEvaluationInput, z.input<typeof contract.createEvaluationRequest>>>,
  Assert<Response<sdk.CreateEvaluationResponse, contract.CreateEvaluationResponse>>,
  Assert<Response<sdk.Evaluation, contract.EvaluationView>>,
  Assert<Response<sdk.EvaluationItem, contract.EvaluationItemView>>,
  Assert<Response<sdk.ListEvaluationsResponse, contract.ListEvaluationsResponse>>,
  Assert<Request<sdk.ListEvaluationsInput, Partial<contract.ListEvaluationsQuery>>>,
  Assert<Request<sdk.GetEvaluationInput, Partial<contract.GetEvaluationQuery>>>,
  Assert<Request<sdk.QualityQuery, contract.QualityQuery>>,
  Assert<Response<sdk.QualityResponse, contract.QualityResponse>>,
];

/** What `analyze` resolves with for a registry schema, a text run, and anything else. */
export type ResultChecks = [
  Assert<Equals<ResultFor<{ prompt: string; schemaId: 'receipt' }>, schemas.ReceiptResult>>,
  Assert<Equals<ResultFor<{ prompt: string; schemaId: 'bank_statement' }>, schemas.BankStatementResult>>,
  Assert<Equals<ResultFor<{ prompt: string; schemaId: 'receipt'; outputFormat: 'text' }>, sdk.TextResult>>,
  Assert<Equals<ResultFor<{ prompt: string; schemaId: 'my_own' }>, Record<string, unknown>>>,
  Assert<Equals<ResultFor<{ prompt: string; schemaId?: string | undefined }>, Record<string, unknown>>>,
  Assert<Equals<ResultFor<{ prompt: string }>, Record<string, unknown>>>,
  // Every typed result is a result the contract allows, and the default is the contract's.
  Assert<Accepts<Extract<contract.RunResponse, { status: 'completed' }>['result'], schemas.ReceiptResult>>,
  Assert<Accepts<Extract<contract.RunResponse, { status: 'completed' }>['result'], sdk.TextResult>>,
  Assert<Equals<sdk.CompletedRun['result'], Record<string, unknown>>>,
];

/** The inference itself, as a caller writes it (no `as const`): type-checked, never run. */
export async function analyzeInfersTheSchema(vision: VisionClient): Promise<void> {
  const receipt = await vision.analyze('receipt.png', { prompt: 'Extract', schemaId: 'receipt' });
  const total: Assert<Equals<typeof receipt.result.total, number | null>> = true;
  const merchant: Assert<Equals<typeof receipt.result.merchant, string | null>> = true;
  // @ts-expect-error a receipt has no such field
  receipt.result.iban;
  const text = await vision.analyze('scan.pdf', { prompt: 'Transcribe', outputFormat: 'text' });
  const transcript: Assert<Equals<typeof text.result.text, string>> = true;
  void [total, merchant, transcript];
}

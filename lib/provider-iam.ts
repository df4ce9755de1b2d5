/**
 * IAM for the providers that authenticate with the worker's role (auth `iam` in shared/providers/catalog.ts), granted
 * only when the provider is enabled in the `providers` setting. API-key providers need only the provider secret.
 */
import { Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { bedrockBaseModelId } from '../shared/infra/bedrock.js';
import type { ProviderId } from '../shared/task.js';

/** Converse and InvokeModel both authorize as bedrock:InvokeModel (the adapter does not stream). */
export const BEDROCK_ACTIONS = ['bedrock:InvokeModel'] as const;

/** Every Textract API the adapter calls (sync for images and one-page PDFs, async jobs for multi-page PDFs). */
export const TEXTRACT_ACTIONS = [
  'textract:DetectDocumentText',
  'textract:AnalyzeDocument',
  'textract:AnalyzeExpense',
  'textract:AnalyzeID',
  'textract:StartDocumentTextDetection',
  'textract:GetDocumentTextDetection',
  'textract:StartDocumentAnalysis',
  'textract:GetDocumentAnalysis',
  'textract:StartExpenseAnalysis',
  'textract:GetExpenseAnalysis',
] as const;

/**
 * bedrock:InvokeModel for one model id:
 * - a system-defined inference profile (`us.`, `eu.`, `global.` …): the profile in this account and region, plus the
 *   base foundation model in any region (the profile routes to destination regions; a global profile's model ARN has
 *   an empty region, which `*` also matches), the latter only when called through that profile
 *   (bedrock:InferenceProfileArn condition), so the role cannot call the model directly elsewhere;
 * - a plain model id: that foundation model in this region.
 */
export function bedrockStatements(stack: Stack, modelId: string): iam.PolicyStatement[] {
  const base = bedrockBaseModelId(modelId);
  if (base === modelId) {
    return [
      new iam.PolicyStatement({
        actions: [...BEDROCK_ACTIONS],
        resources: [`arn:${stack.partition}:bedrock:${stack.region}::foundation-model/${modelId}`],
      }),
    ];
  }
  const profileArn = `arn:${stack.partition}:bedrock:${stack.region}:${stack.account}:inference-profile/${modelId}`;
  return [
    new iam.PolicyStatement({ actions: [...BEDROCK_ACTIONS], resources: [profileArn] }),
    new iam.PolicyStatement({
      actions: [...BEDROCK_ACTIONS],
      resources: [`arn:${stack.partition}:bedrock:*::foundation-model/${base}`],
      conditions: { ArnLike: { 'bedrock:InferenceProfileArn': profileArn } },
    }),
  ];
}

export interface ProviderGrants {
  readonly providers: readonly ProviderId[];
  /** Required when `providers` includes bedrock. */
  readonly bedrockModelId?: string;
}

/** Adds the IAM of every enabled IAM provider to the function's role and acknowledges its unavoidable wildcards. */
export function grantProviders(fn: lambda.Function, grants: ProviderGrants): void {
  const stack = Stack.of(fn);
  if (grants.providers.includes('bedrock')) {
    const modelId = grants.bedrockModelId;
    if (!modelId) throw new Error('bedrock is enabled but no bedrockModelId was resolved');
    for (const statement of bedrockStatements(stack, modelId)) fn.addToRolePolicy(statement);
    const base = bedrockBaseModelId(modelId);
    if (base !== modelId) {
      Validations.of(fn).acknowledge({
        id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/${base}]`,
        reason: `Inference profile ${modelId} routes to ${base} in regions Bedrock chooses; the region wildcard is limited to that one model and, by the bedrock:InferenceProfileArn condition, to calls through that profile.`,
      });
    }
  }

  if (grants.providers.includes('textract')) {
    fn.addToRolePolicy(new iam.PolicyStatement({ actions: [...TEXTRACT_ACTIONS], resources: ['*'] }));
    Validations.of(fn).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'Textract actions support no resource-level permissions (the Service Authorization Reference lists no resource types for them), so Resource "*" is the only form; the statement lists only the Textract actions the adapter calls.',
    });
  }
}

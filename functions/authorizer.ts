/**
 * API-key authorizer (API Gateway REQUEST authorizer). Looks the key up by hash; an unknown or revoked key is denied
 * with API Gateway's `Unauthorized` convention (→ 401). The policy allows every route (API Gateway caches it per key);
 * each handler checks scopes. `usageIdentifierKey` ties the request to the key's usage plan throttle and is never
 * logged (docs/decisions.md#per-key-throttling).
 */
import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { checkEnvironment } from '../shared/resource-name.js';
import { findActiveKey } from '../shared/store/tenants.js';

checkEnvironment();

/** Builds `arn:aws:execute-api:region:account:apiId/stage/*` from the invoked method ARN. */
export function wildcardResource(methodArn: string): string {
  // The apiId is part of the first segment: arn:aws:execute-api:region:account:apiId/stage/METHOD/path…
  const [arnPrefixWithApiId, stage] = methodArn.split('/');
  return `${arnPrefixWithApiId}/${stage}/*`;
}

export async function authorize(event: APIGatewayRequestAuthorizerEvent): Promise<APIGatewayAuthorizerResult> {
  const headers = event.headers ?? {};
  const presented = Object.entries(headers).find(([name]) => name.toLowerCase() === 'x-api-key')?.[1];
  if (!presented) throw new Error('Unauthorized');
  const key = await findActiveKey(presented);
  if (!key) throw new Error('Unauthorized');
  return {
    principalId: key.keyId,
    policyDocument: {
      Version: '2012-10-17',
      Statement: [{ Action: 'execute-api:Invoke', Effect: 'Allow', Resource: wildcardResource(event.methodArn) }],
    },
    // API Gateway passes only strings, numbers and booleans through the context.
    // The label (the name `npm run keys` gave the key) lets a review name its reviewer, and the dashboard its user.
    context: { tenantId: key.tenantId, keyId: key.keyId, keyLabel: key.label, scopes: key.scopes.join(',') },
    ...(key.usagePlanKeyValue ? { usageIdentifierKey: key.usagePlanKeyValue } : {}),
  };
}

export const handler = authorize;

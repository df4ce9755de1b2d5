/**
 * API-key authorizer (API Gateway REQUEST authorizer). Looks the key up by hash; an unknown or revoked key is denied
 * with API Gateway's `Unauthorized` convention (→ 401, body shaped by the gateway response). The policy allows every
 * route of the API because API Gateway caches it per key for all routes; scopes are checked by each route's handler.
 *
 * An allowed key that has a usage-plan key (deployments: the keys CLI creates one per client key) is returned as
 * `usageIdentifierKey`, so API Gateway's usage plan throttles each client key on its own (the RestApi takes API keys
 * from the authorizer: lib/stateless-stack.ts PER_KEY_THROTTLE). A key without one (the local stack) gets none; the
 * local gateway throttles per client key itself. The value is never logged.
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
    context: { tenantId: key.tenantId, keyId: key.keyId, scopes: key.scopes.join(',') },
    ...(key.usagePlanKeyValue ? { usageIdentifierKey: key.usagePlanKeyValue } : {}),
  };
}

export const handler = authorize;

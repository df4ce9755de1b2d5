/**
 * Helpers for acknowledging cdk-nag findings (cdk-nag 3: `Validations.of(construct).acknowledge`, which replaced
 * NagSuppressions). An acknowledgement matches a finding id exactly, e.g. `AwsSolutions-IAM5[Resource::<...>/index/*]`.
 *
 * Some ids cannot be written down while the stacks are built: a grant on a table or bucket of the stateful stack is a
 * cross-stack reference that becomes `Fn::GetStackOutput` (weak references) only when the app is prepared for synth.
 * `acknowledgeWildcardResources` therefore registers a construct validation, which runs after that step and before
 * the policy validation plugins (cdk-nag), renders each wildcard resource the way cdk-nag does, and acknowledges the
 * ones its rules describe. The nag infra test fails if a rendering ever stops matching.
 */
import { Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type { IConstruct } from 'constructs';

/** cdk-nag's flattenCfnReference (cdk-nag 3.0.2, lib/utils/flatten-cfn-reference.js), which names IAM5 findings. */
export function flattenCfnReference(reference: unknown): string {
  const visit = (node: unknown): string => {
    if (node === undefined) return '';
    if (typeof node === 'string') return node.replace(/\$\{/g, '<').replace(/}/g, '>');
    const n = node as Record<string, unknown>;
    if (n['Fn::Join']) {
      const [delimiter, items] = n['Fn::Join'] as [string, unknown[]];
      return items.map(visit).join(delimiter);
    }
    if (n['Fn::Sub']) return visit(n['Fn::Sub']);
    if (n['Fn::GetAtt']) {
      const [resource, attribute] = n['Fn::GetAtt'] as [unknown, unknown];
      return `<${visit(resource)}.${visit(attribute)}>`;
    }
    if (n['Fn::ImportValue']) return visit(n['Fn::ImportValue']);
    if (n.Ref) return `<${visit(n.Ref)}>`;
    return JSON.stringify(node);
  };
  return visit(reference);
}

export interface WildcardResourceRule {
  /** Matched against the flattened resource (see flattenCfnReference). */
  readonly pattern: RegExp;
  readonly reason: string;
}

/**
 * Acknowledges `AwsSolutions-IAM5[Resource::…]` for every Allow-statement resource with a `*` in the IAM policies
 * under `scope` that matches one of `rules`. Wildcard resources matching no rule stay findings.
 */
export function acknowledgeWildcardResources(scope: IConstruct, rules: readonly WildcardResourceRule[]): void {
  scope.node.addValidation({
    validate: () => {
      for (const policy of scope.node.findAll().filter((c): c is iam.CfnPolicy => c instanceof iam.CfnPolicy)) {
        const document = Stack.of(policy).resolve(policy.policyDocument) as {
          Statement?: { Effect?: string; Resource?: unknown }[];
        };
        for (const statement of document.Statement ?? []) {
          if (statement.Effect !== 'Allow') continue;
          const resources = Array.isArray(statement.Resource) ? statement.Resource : [statement.Resource];
          for (const resource of resources.map(flattenCfnReference).filter((r) => r.includes('*'))) {
            const rule = rules.find((r) => r.pattern.test(resource));
            if (rule)
              Validations.of(policy).acknowledge({
                id: `AwsSolutions-IAM5[Resource::${resource}]`,
                reason: rule.reason,
              });
          }
        }
      }
      return [];
    },
  });
}

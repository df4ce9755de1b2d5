#!/usr/bin/env bash
# Deploys both stacks (VisionStateful-<stage>, VisionStateless-<stage>) to a running LocalStack with cdklocal, then
# prints the API URL, how to create an API key and how to run the end-to-end suite against the deployment.
# docs/localstack.md explains the requirements (Docker, LocalStack auth token, plans) and what CI does instead.
#
# Usage: scripts/localstack-deploy.sh [extra cdk arguments, e.g. -c confirmationThresholdUsd=0.5]
#
# Environment (all optional):
#   LOCALSTACK_ENDPOINT   LocalStack edge URL                    (default http://localhost:4566)
#   STAGE                 stage context value                    (default local)
#   PROVIDERS             providers context value                (default local; textract,local to exercise the fallback)
#   WORKER_PACKAGING      workerPackaging context value          (default zip: no ECR / Lambda container images needed)
#   AWS_REGION            region of the deployment               (default us-east-1)
#   CDKLOCAL_VERSION      npm version of aws-cdk-local           (default pinned below)
set -euo pipefail

CDKLOCAL_VERSION="${CDKLOCAL_VERSION:-3.0.4}"
LOCALSTACK_ENDPOINT="${LOCALSTACK_ENDPOINT:-http://localhost:4566}"
LOCALSTACK_ENDPOINT="${LOCALSTACK_ENDPOINT%/}"
STAGE="${STAGE:-local}"
PROVIDERS="${PROVIDERS:-local}"
WORKER_PACKAGING="${WORKER_PACKAGING:-zip}"
REGION="${AWS_REGION:-${AWS_DEFAULT_REGION:-us-east-1}}"
ACCOUNT="000000000000" # LocalStack's default account

cd "$(dirname "$0")/.."
PROJECT_ROOT="$(pwd)"
OUTPUTS_FILE="cdk.out/localstack-outputs-${STAGE}.json"

die() {
  echo "localstack-deploy: $*" >&2
  exit 1
}

command -v node >/dev/null 2>&1 || die "node is required (Node.js 20.19+)"
command -v npx >/dev/null 2>&1 || die "npx is required (it comes with npm)"
[ -x node_modules/.bin/cdk ] || die "the project's aws-cdk CLI is missing: run 'npm ci' first (cdklocal wraps it)"

# 1. Fail fast when LocalStack is not reachable (5 s), and show which of the services the stacks use it offers.
echo "Checking LocalStack at ${LOCALSTACK_ENDPOINT} ..."
if ! HEALTH="$(LOCALSTACK_ENDPOINT="$LOCALSTACK_ENDPOINT" node --input-type=module -e '
  const url = `${process.env.LOCALSTACK_ENDPOINT}/_localstack/health`;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
    if (!res.ok) { console.error(`${url} answered HTTP ${res.status}`); process.exit(1); }
    process.stdout.write(await res.text());
  } catch (error) {
    console.error(`${url}: ${error?.cause?.code ?? error?.name ?? error}`);
    process.exit(1);
  }
')"; then
  cat >&2 <<MSG
localstack-deploy: LocalStack is not reachable at ${LOCALSTACK_ENDPOINT}.
  Start it first (Docker required; an auth token is required by current LocalStack images), e.g.
    docker run --rm -d -p 4566:4566 -e LOCALSTACK_AUTH_TOKEN=\$LOCALSTACK_AUTH_TOKEN \\
      -v /var/run/docker.sock:/var/run/docker.sock localstack/localstack
  or set LOCALSTACK_ENDPOINT to where it runs. See docs/localstack.md.
MSG
  exit 1
fi
HEALTH="$HEALTH" node --input-type=module -e '
  const wanted = ["cloudformation", "iam", "sts", "ssm", "s3", "lambda", "apigateway", "dynamodb", "sqs",
    "secretsmanager", "logs", "cloudwatch", "sns", "kms"];
  let services = {};
  try { services = JSON.parse(process.env.HEALTH).services ?? {}; } catch {}
  const missing = wanted.filter((s) => !(s in services) || services[s] === "disabled");
  console.log(`LocalStack is up. Services used by the stacks: ${wanted.map((s) => `${s}=${services[s] ?? "?"}`).join(" ")}`);
  if (missing.length) console.warn(`WARNING: not offered by this LocalStack: ${missing.join(", ")} (the deploy will likely fail)`);
'

# 2. Point the CDK CLI (through cdklocal) at LocalStack with LocalStack's dummy credentials.
export AWS_ENDPOINT_URL="$LOCALSTACK_ENDPOINT"
export AWS_REGION="$REGION" AWS_DEFAULT_REGION="$REGION"
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}" AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"
export CDK_DEFAULT_ACCOUNT="$ACCOUNT" CDK_DEFAULT_REGION="$REGION"
# cdklocal (from the npx cache) must find the project's aws-cdk CLI.
export NODE_PATH="${PROJECT_ROOT}/node_modules${NODE_PATH:+:$NODE_PATH}"
CDKLOCAL=(npx --yes "aws-cdk-local@${CDKLOCAL_VERSION}")
CONTEXT=(-c "stage=${STAGE}" -c "providers=${PROVIDERS}" -c "workerPackaging=${WORKER_PACKAGING}" -c destroyOnRemoval=true)

if [ "$WORKER_PACKAGING" = "zip" ]; then
  echo "Note: workerPackaging=zip runs 'npm ci' for the worker's native modules during synth (needs the npm registry)."
fi

echo "Bootstrapping aws://${ACCOUNT}/${REGION} ..."
"${CDKLOCAL[@]}" bootstrap "aws://${ACCOUNT}/${REGION}" "${CONTEXT[@]}" "$@"

echo "Deploying VisionStateful-${STAGE} and VisionStateless-${STAGE} ..."
"${CDKLOCAL[@]}" deploy "VisionStateful-${STAGE}" "VisionStateless-${STAGE}" \
  --require-approval never --outputs-file "$OUTPUTS_FILE" "${CONTEXT[@]}" "$@"

# 3. Read the API URL from the outputs and find the key tables (the stateful stack has no outputs for table names).
API_URL="$(OUTPUTS_FILE="$OUTPUTS_FILE" STAGE="$STAGE" node --input-type=module -e '
  import { readFileSync } from "node:fs";
  const outputs = JSON.parse(readFileSync(process.env.OUTPUTS_FILE, "utf8"));
  const url = outputs[`VisionStateless-${process.env.STAGE}`]?.ApiUrl;
  if (!url) { console.error(`no ApiUrl output in ${process.env.OUTPUTS_FILE}`); process.exit(1); }
  process.stdout.write(url.replace(/\/+$/, ""));
')" || die "deploy finished but the API URL could not be read from ${OUTPUTS_FILE}"

cat <<DONE

Deployed to LocalStack (${LOCALSTACK_ENDPOINT}, stage ${STAGE}, providers ${PROVIDERS}, worker ${WORKER_PACKAGING}).
  API URL: ${API_URL}
  Outputs: ${OUTPUTS_FILE}

Create an API key (printed once) in the deployed tables:
  AWS_ENDPOINT_URL=${LOCALSTACK_ENDPOINT} AWS_REGION=${REGION} AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test \\
    npm run keys -- create --tenant t1 --stack ${STAGE}

Run the end-to-end suite against this deployment (Lambda cold starts on LocalStack are slow; allow time):
  E2E_BASE_URL=${API_URL} E2E_API_KEY=<the key> E2E_TIMEOUT_MS=300000 npm run test:e2e
DONE

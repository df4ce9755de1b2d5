/**
 * GET / and GET /dashboard/{asset} — the review dashboard (static files, no data; the page calls the API with the
 * key the operator pastes). Public routes: see their publicReason in shared/infra/routes.ts.
 */
import { dashboardAsset, dashboardHeaders } from '../shared/dashboard/assets.js';
import { NotFoundError } from '../shared/errors.js';
import { apiHandler } from '../shared/http.js';
import { checkEnvironment } from '../shared/resource-name.js';

checkEnvironment();

const HEADERS = dashboardHeaders();

export const handler = apiHandler('dashboard', {}, async (req) => {
  const asset = req.pathParameters.asset;
  // Deployed, the page lives under the stage (`/prod/`); its relative asset and API addresses need the trailing slash.
  // Only a bare stage name (`/prod`): the Location header is never built from anything else.
  if (asset === undefined && req.publicPath !== undefined && /^\/[A-Za-z0-9._-]+$/.test(req.publicPath)) {
    return { statusCode: 301, headers: { location: `${req.publicPath}/`, ...HEADERS }, text: '' };
  }
  // index.html only at `/`: its relative addresses would not resolve from /dashboard/.
  const file = asset === 'index.html' ? null : dashboardAsset(asset ?? 'index.html');
  if (!file) throw new NotFoundError('dashboard file', asset);
  return { statusCode: 200, headers: { 'content-type': file.contentType, ...HEADERS }, text: file.text };
});

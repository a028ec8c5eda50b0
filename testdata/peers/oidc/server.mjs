// server.mjs: a real authorization server (oidc-provider, a certified OpenID
// provider) in front of TypeScript SDK MCP servers that require its tokens,
// for berth's sign-in tests (internal/cli/*_oidc_test.go).
//
// Run with the peers' Node 22:
//
//	node testdata/peers/oidc/server.mjs '{"accessTokenTTL":5,"resources":[{"name":"a"}]}'
//
// Everything listens on 127.0.0.1 on ephemeral ports. The first stdout line
// is JSON: {"issuer": URL, "resources": {name: URL}, "jwks": URL}. Then one
// JSON line per event the tests observe:
//
//	{"event":"token","grant_type":"authorization_code"|"refresh_token","status":200,"resource":URL,"error":...}
//	{"event":"register","client_id":...,"grant_types":[...],"redirect_uris":[...],"application_type":...}
//	{"event":"revocation","status":200,"token_type_hint":...,"error":...}
//	{"event":"mcp","resource":name,"status":401|200|307,"bearer":bool,"aud":...,"sub":...,"token_sha256":...}
//
// No token is ever printed on stdout. When the configuration names
// "tokenFile", every access and refresh token issued is appended there (one
// "access TOKEN" or "refresh TOKEN" line), so a test can look for the
// token strings where they must not be.
//
// The provider:
//   - dynamic client registration, open (no initial access token); clients
//     that omit grant_types get authorization_code and refresh_token;
//   - PKCE (S256) required for every client;
//   - resource indicators (RFC 8707): an access token is issued only for a
//     configured resource, as a JWT whose aud is that resource, with the
//     configured TTL (accessTokenTTL seconds, default 60);
//   - refresh tokens for every client registered for the refresh_token
//     grant (offline_access is advertised, but oidc-provider drops it
//     without prompt=consent), rotated on every use;
//   - the devInteractions login and consent pages: a test signs in by
//     posting their forms (any login and password; the login is the subject);
//   - revocation (RFC 7009) and introspection.
//
// Each resource is its own MCP server (Streamable HTTP, stateless) on its own
// port at /mcp with one tool, whoami, answering the token's subject and
// audience. It requires a bearer JWT signed by the provider whose aud is this
// resource (the SDK's requireBearerAuth with expectedResource), and serves
// its protected-resource metadata (RFC 9728) at
// /.well-known/oauth-protected-resource/mcp.
//
// "issuerHost" names the provider's host in its issuer (default 127.0.0.1;
// "localhost" makes an authorization server on another host than the
// resources, still listening on 127.0.0.1).
//
// POST /_test/refuse on a resource's port with {"sha256": HEX} or
// {"all": true} makes it refuse those tokens from then on with 401
// invalid_token (a token revoked behind the client's back).
//
// Per resource, for the attacker's tests:
//   - "authorizationServers": the PRM's authorization_servers instead of the
//     provider's issuer (a metadata document pointing elsewhere);
//   - "redirectTo": every POST to /mcp that carries an Authorization header
//     is answered 307 to this URL (a redirect to another origin; the test
//     watches where the token goes). Without one it answers 401 as usual,
//     so a client can sign in first;
//   - "claimResourceOf": the name of another resource whose URL this one's
//     metadata gives as its "resource" (a server that asks for another
//     server's token, to replay it there);
//   - "stepUpScope": the resource also has a tool "admin" whose call needs
//     this scope besides the usual one: without it, 403 insufficient_scope
//     with scope="<usual> <stepUpScope>" (a step-up).
import { createHash } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import http from 'node:http';

import express from 'express';
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import Provider, { errors } from 'oidc-provider';

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { getOAuthProtectedResourceMetadataUrl } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { metadataHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/metadata.js';
import { InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';

const config = JSON.parse(process.argv[2] || '{}');
const ttl = Number(config.accessTokenTTL ?? 60);
const resourcesConfig = config.resources ?? [{ name: 'a' }];
const scope = config.scope ?? 'mcp:tools';

function emit(event) {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}

function sha256(s) {
  return createHash('sha256').update(s).digest('hex');
}

function recordToken(kind, value) {
  if (config.tokenFile && value) appendFileSync(config.tokenFile, `${kind} ${value}\n`, { mode: 0o600 });
}

function listen(handler) {
  return new Promise((resolve, reject) => {
    const server = http.createServer(handler);
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

// The resource servers listen first, so the provider knows their URLs.
const resources = {};
const rsServers = [];
for (const rc of resourcesConfig) {
  let app;
  const server = await listen((req, res) => app(req, res));
  const url = `http://127.0.0.1:${server.address().port}/mcp`;
  resources[rc.name] = { ...rc, url, setApp(a) { app = a; } };
  rsServers.push(server);
}
const resourceByURL = new Map(Object.values(resources).map((r) => [r.url, r]));

let providerCallback;
const asServer = await listen((req, res) => providerCallback(req, res));
const issuer = `http://${config.issuerHost ?? '127.0.0.1'}:${asServer.address().port}`;

const provider = new Provider(issuer, {
  clients: [],
  clientDefaults: {
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  },
  findAccount(ctx, sub) {
    return { accountId: sub, claims: () => ({ sub }) };
  },
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true },
    revocation: { enabled: true },
    introspection: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource(ctx, client, oneOf) {
        return oneOf;
      },
      useGrantedResource() {
        return true;
      },
      getResourceServerInfo(ctx, indicator) {
        const r = resourceByURL.get(indicator) ?? resourceByURL.get(indicator.replace(/\/$/, ''));
        if (!r) throw new errors.InvalidTarget(`unknown resource ${indicator}`);
        return {
          scope: [scope, r.stepUpScope].filter(Boolean).join(' '),
          audience: r.url,
          accessTokenTTL: ttl,
          accessTokenFormat: 'jwt',
        };
      },
    },
  },
  pkce: { required: () => true },
  scopes: ['openid', 'offline_access'],
  // oidc-provider follows OpenID Connect here: offline_access is dropped
  // from a request without prompt=consent, which MCP clients do not send.
  // Like most hosted authorization servers, this one issues a refresh
  // token to every client registered for the refresh_token grant, and the
  // refresh token outlives the provider's login session.
  issueRefreshToken(ctx, client) {
    return client.grantTypeAllowed('refresh_token');
  },
  expiresWithSession() {
    return false;
  },
  rotateRefreshToken: true,
  ttl: {
    RefreshToken: 24 * 60 * 60,
  },
});
provider.proxy = false;

provider.use(async (ctx, next) => {
  await next();
  if (ctx.method !== 'POST') return;
  if (ctx.path === '/token') {
    const body = ctx.body && typeof ctx.body === 'object' ? ctx.body : {};
    recordToken('access', body.access_token);
    recordToken('refresh', body.refresh_token);
    emit({
      event: 'token',
      grant_type: ctx.oidc?.params?.grant_type,
      resource: ctx.oidc?.params?.resource,
      status: ctx.status,
      error: body.error,
      error_description: body.error_description,
      refresh_token: Boolean(body.refresh_token),
      expires_in: body.expires_in,
    });
  } else if (ctx.path === '/reg') {
    const body = ctx.body && typeof ctx.body === 'object' ? ctx.body : {};
    emit({
      event: 'register',
      status: ctx.status,
      error: body.error,
      error_description: body.error_description,
      client_id: body.client_id,
      grant_types: body.grant_types,
      redirect_uris: body.redirect_uris,
      application_type: body.application_type,
      token_endpoint_auth_method: body.token_endpoint_auth_method,
    });
  } else if (ctx.path === '/token/revocation') {
    const body = ctx.body && typeof ctx.body === 'object' ? ctx.body : {};
    emit({
      event: 'revocation',
      status: ctx.status,
      token_type_hint: ctx.oidc?.params?.token_type_hint,
      error: body.error,
      error_description: body.error_description,
    });
  }
});
provider.on('server_error', (ctx, err) => emit({ event: 'server_error', message: String(err) }));
providerCallback = provider.callback();

const jwks = createRemoteJWKSet(new URL(`http://127.0.0.1:${asServer.address().port}/jwks`));

for (const r of Object.values(resources)) {
  const app = express();
  const prmURL = getOAuthProtectedResourceMetadataUrl(new URL(r.url));
  app.use(new URL(prmURL).pathname, metadataHandler({
    resource: r.claimResourceOf ? resources[r.claimResourceOf].url : r.url,
    authorization_servers: r.authorizationServers ?? [issuer],
    scopes_supported: [scope],
    resource_name: `berth test resource ${r.name}`,
  }));

  // The test's control: refuse tokens from now on (by sha256, or all),
  // as a resource does whose tokens were revoked behind the client's back.
  const refused = new Set();
  let refuseAll = false;
  app.post('/_test/refuse', express.json(), (req, res) => {
    if (req.body?.all) refuseAll = true;
    if (req.body?.sha256) refused.add(req.body.sha256);
    res.json({ ok: true });
  });

  // Observe every request to /mcp before anything answers it.
  app.use('/mcp', (req, res, next) => {
    const h = req.headers.authorization ?? '';
    const token = h.toLowerCase().startsWith('bearer ') ? h.slice(7).trim() : '';
    const seen = { event: 'mcp', resource: r.name, method: req.method, bearer: Boolean(token) };
    if (token) {
      seen.token_sha256 = sha256(token);
      try {
        const claims = decodeJwt(token);
        seen.aud = claims.aud;
        seen.sub = claims.sub;
      } catch {
        seen.aud = null;
      }
    }
    res.on('finish', () => emit({ ...seen, status: res.statusCode }));
    next();
  });

  if (r.redirectTo) {
    app.post('/mcp', (req, res, next) => {
      if (!req.headers.authorization) return next();
      res.redirect(307, r.redirectTo);
    });
  }

  app.use('/mcp', express.json(), requireBearerAuth({
    resourceMetadataUrl: prmURL,
    expectedResource: new URL(r.url),
    requiredScopes: [scope],
    verifier: {
      async verifyAccessToken(token) {
        if (refuseAll || refused.has(sha256(token))) {
          throw new InvalidTokenError('token refused (revoked)');
        }
        let payload;
        try {
          ({ payload } = await jwtVerify(token, jwks, { issuer, audience: r.url, typ: 'at+jwt' }));
        } catch (err) {
          throw new InvalidTokenError(`token refused: ${err.code ?? err.message}`);
        }
        return {
          token,
          clientId: payload.client_id,
          scopes: String(payload.scope ?? '').split(' ').filter(Boolean),
          expiresAt: payload.exp,
          resource: new URL(Array.isArray(payload.aud) ? payload.aud[0] : payload.aud),
          extra: { sub: payload.sub },
        };
      },
    },
  }));

  // Step-up: a call of the tool "admin" needs r.stepUpScope too; without
  // it the resource answers 403 insufficient_scope naming both scopes
  // (RFC 6750 §3.1), as the MCP authorization spec says.
  if (r.stepUpScope) {
    app.post('/mcp', (req, res, next) => {
      const msgs = Array.isArray(req.body) ? req.body : [req.body];
      const admin = msgs.some((m) => m?.method === 'tools/call' && m?.params?.name === 'admin');
      if (admin && !req.auth.scopes.includes(r.stepUpScope)) {
        const both = `${scope} ${r.stepUpScope}`;
        res.set('WWW-Authenticate', `Bearer error="insufficient_scope", scope="${both}", resource_metadata="${prmURL}", error_description="the admin tool needs ${r.stepUpScope}"`);
        res.status(403).json({ error: 'insufficient_scope', error_description: `the admin tool needs ${r.stepUpScope}` });
        return;
      }
      next();
    });
  }

  app.post('/mcp', async (req, res) => {
    const server = new McpServer({ name: `berth-oidc-${r.name}`, version: '1.0.0' });
    server.registerTool('whoami', {
      description: 'Answers the subject and audience of the access token this call carried.',
    }, async (extra) => ({
      content: [{
        type: 'text',
        text: JSON.stringify({ sub: extra.authInfo?.extra?.sub, aud: String(extra.authInfo?.resource ?? '') }),
      }],
    }));
    if (r.stepUpScope) {
      server.registerTool('admin', {
        description: `Needs the scope ${r.stepUpScope} (step-up).`,
      }, async (extra) => ({
        content: [{ type: 'text', text: JSON.stringify({ admin: true, scopes: extra.authInfo?.scopes }) }],
      }));
    }
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  app.all('/mcp', (req, res) => {
    res.status(405).set('Allow', 'POST').json({ error: 'method not allowed' });
  });
  r.setApp(app);
}

emit({
  issuer,
  jwks: `${issuer}/jwks`,
  resources: Object.fromEntries(Object.values(resources).map((r) => [r.name, r.url])),
});

function shutdown() {
  for (const s of [asServer, ...rsServers]) s.close();
  process.exit(0);
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
process.stdin.on('end', shutdown);
process.stdin.resume();

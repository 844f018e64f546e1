/**
 * The settings for signing teams in (SPEC §17): the issuer of access tokens, their audience, the
 * scope names per action, the scopes of static tokens and the server's public URL. A group of the
 * settings table.
 */
import * as v from 'valibot';
import { DEFAULT_SCOPE_NAMES, isScopeToken, type ScopeNames } from '@mdp/core';
import { ACCESS_TOKEN_DEFAULTS } from '../access-token-defaults.js';
import { list, text, toggle, wholeNumber, type ValueSchema } from './values.js';
import type { MdpServerOptions } from './options.js';
import { settingGroup } from './table.js';

/** An absolute http(s) URL. */
function httpUrl(): ValueSchema<string> {
  return v.pipe(
    text(),
    v.check((value) => {
      try {
        const url = new URL(value);
        return url.protocol === 'http:' || url.protocol === 'https:';
      } catch {
        return false;
      }
    }, 'must be an http or https URL'),
  );
}

function scope(): ValueSchema<string> {
  return v.pipe(text(), v.check(isScopeToken, 'must be one OAuth scope (no spaces or quotes)'));
}

const scopeRow = (action: keyof ScopeNames, what: string) => ({
  flag: `auth-scope-${action}`,
  placeholder: '<scope>',
  schema: scope(),
  default: DEFAULT_SCOPE_NAMES[action],
  help: `the scope to ${what}`,
});

export const ACCESS_TOKEN_SETTINGS = settingGroup({
  title: 'Sign in with an identity provider (off by default)',
  settings: {
    authIssuer: {
      flag: 'auth-issuer',
      placeholder: '<url>',
      schema: httpUrl(),
      help: `also accept access tokens (signed JWTs) this issuer made: its OIDC discovery document
        names the key set; signature (asymmetric keys only), iss, aud, exp and nbf are checked, the
        principal is iss + sub, and each action needs its scope. /mcp then answers 401 with the
        protected resource metadata (/.well-known/oauth-protected-resource) agents sign in with`,
    },
    authJwksUrl: {
      flag: 'auth-jwks-url',
      placeholder: '<url>',
      schema: httpUrl(),
      help: "the issuer's key set (JWKS) URL, for an issuer without OIDC discovery",
    },
    authAudience: {
      flag: 'auth-audience',
      placeholder: '<aud>',
      arity: 'list',
      schema: list('audiences'),
      defaultText: '--public-url (or http(s)://<host>:<port>), and that with /mcp',
      help: "what a token's aud must name (repeatable: one of them)",
    },
    authClockSkewS: {
      flag: 'auth-clock-skew-s',
      placeholder: '<s>',
      schema: wholeNumber(0, 600),
      default: ACCESS_TOKEN_DEFAULTS.clockSkewS,
      help: "clock skew allowed on a token's exp and nbf, seconds",
    },
    authKeySetRefreshMs: {
      flag: 'auth-key-set-refresh-ms',
      placeholder: '<ms>',
      schema: wholeNumber(1000, 24 * 3_600_000),
      default: ACCESS_TOKEN_DEFAULTS.refreshIntervalMs,
      help: 'fetch the key set again this often (a key the issuer removed stops working within it)',
    },
    authKeySetCooldownMs: {
      flag: 'auth-key-set-cooldown-ms',
      placeholder: '<ms>',
      schema: wholeNumber(0, 3_600_000),
      default: ACCESS_TOKEN_DEFAULTS.cooldownMs,
      help: 'least time between two fetches of the key set for tokens with an unknown kid',
    },
    authScopeRead: scopeRow('read', 'read skills and list clients'),
    authScopeCall: scopeRow('call', 'call endpoints and prompts'),
    authScopeRegister: {
      ...scopeRow('register', 'register MDP clients'),
      help: 'the scope to register MDP clients (<scope>:<prefix>: only ids starting with <prefix>)',
    },
    authScopeAdmin: scopeRow('admin', 'use the inspector (and the probes, beside --metrics-token)'),
    authTokenScopes: {
      flag: 'auth-token-scopes',
      placeholder: '<scope>',
      arity: 'list',
      schema: list('scopes'),
      defaultText: 'every scope',
      help: 'with --auth-issuer: the scopes of the --auth-token tokens (repeatable)',
    },
    authForwardToken: {
      flag: 'auth-forward-token',
      arity: 'switch',
      schema: toggle(),
      default: false,
      help: "with --auth-issuer: pass the caller's token on to the clients it calls (for clients that call on with it; such a client can act as the caller)",
    },
    publicUrl: {
      flag: 'public-url',
      placeholder: '<url>',
      schema: httpUrl(),
      help: 'the URL clients reach this server at (behind a proxy): the default token audience and the resource agents sign in for',
    },
  },
});

type AccessTokenSettingOptions = Pick<MdpServerOptions, 'accessTokens' | 'publicUrl'>;

/** The options of the settings' values; a message when they do not go together. */
export function accessTokenOptions(values: {
  readonly authIssuer?: string | undefined;
  readonly authJwksUrl?: string | undefined;
  readonly authAudience?: readonly string[] | undefined;
  readonly authClockSkewS: number;
  readonly authKeySetRefreshMs: number;
  readonly authKeySetCooldownMs: number;
  readonly authScopeRead: string;
  readonly authScopeCall: string;
  readonly authScopeRegister: string;
  readonly authScopeAdmin: string;
  readonly authTokenScopes?: readonly string[] | undefined;
  readonly authForwardToken: boolean;
  readonly publicUrl?: string | undefined;
}): AccessTokenSettingOptions | string {
  const publicUrl = values.publicUrl === undefined ? {} : { publicUrl: values.publicUrl };
  if (values.authIssuer === undefined) {
    if (values.authJwksUrl !== undefined || values.authAudience !== undefined || values.authTokenScopes !== undefined || values.authForwardToken) {
      return '--auth-jwks-url, --auth-audience, --auth-token-scopes and --auth-forward-token need --auth-issuer (the iss tokens must name)';
    }
    return publicUrl;
  }
  const scopeNames = { read: values.authScopeRead, call: values.authScopeCall, register: values.authScopeRegister, admin: values.authScopeAdmin };
  const names = Object.values(scopeNames);
  if (new Set(names).size !== names.length) return `the --auth-scope-* flags must name four different scopes, got ${names.join(', ')}`;
  return {
    ...publicUrl,
    accessTokens: {
      issuer: values.authIssuer,
      ...(values.authJwksUrl !== undefined ? { jwksUrl: values.authJwksUrl } : {}),
      ...(values.authAudience !== undefined ? { audiences: values.authAudience } : {}),
      clockSkewS: values.authClockSkewS,
      refreshIntervalMs: values.authKeySetRefreshMs,
      cooldownMs: values.authKeySetCooldownMs,
      scopeNames,
      ...(values.authTokenScopes !== undefined ? { staticTokenScopes: values.authTokenScopes } : {}),
      ...(values.authForwardToken ? { forwardToken: true } : {}),
    },
  };
}

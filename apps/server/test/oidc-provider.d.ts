/** Types for `oidc-provider` (it ships none): only what the sign-in tests use (test/oidc.ts). */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export interface Interaction {
    readonly uid: string;
    readonly prompt: { readonly name: string; readonly details?: Record<string, unknown> };
    readonly params: Record<string, unknown>;
    readonly session?: { readonly accountId?: string };
    readonly grantId?: string;
  }

  export class Grant {
    constructor(init: { accountId: string; clientId: string });
    addOIDCScope(scope: string): void;
    addResourceScope(resource: string, scope: string): void;
    rejectOIDCScope(scope: string): void;
    rejectResourceScope(resource: string, scope: string): void;
    save(): Promise<string>;
  }

  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    proxy: boolean;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<Interaction>;
    interactionFinished(
      req: IncomingMessage,
      res: ServerResponse,
      result: Record<string, unknown>,
      options?: { mergeWithLastSubmission?: boolean },
    ): Promise<void>;
    readonly Grant: typeof Grant & { find(id: string): Promise<Grant | undefined> };
  }
}

import { apiKeyPrefixOf, type ApiKeyGrant, type ApiKeyScope } from "@operon/protocol/api-keys";
import { OperonError } from "@operon/protocol/errors";
import type { ApiKeyRing } from "./api-key-ring.js";

/**
 * Who may call what on the gateway's frontends (HTTP and gRPC alike).
 *
 * Needs: "infer" (inference, metadata, statistics, repository index,
 * operator listing) and "admin" (model control: load, unload, operator
 * registration). Health and server metadata need nothing and are not
 * routed here.
 *
 * Rules:
 * - A presented key is always checked, even where none is required, so a
 *   revoked or expired key is refused everywhere.
 * - "infer" needs a key iff requireApiKey; either scope satisfies it.
 * - "admin" needs a key iff requireApiKey, or a listener binds beyond
 *   loopback, or a user key has ever been issued (ApiKeyRing.modelControlLocked,
 *   which never unlocks) unless anonymousModelControl says so explicitly.
 *   Without any of those, model control stays open, as in Triton on localhost.
 * - A presented key is checked for its scope whether or not one is needed:
 *   an infer key never does model control.
 * - Every authorized request with a key takes one request from its quota
 *   and notes the key's use (ApiKeyRing.recordUse).
 *
 * Failures are OperonErrors: UNAUTHENTICATED (no valid key),
 * PERMISSION_DENIED (key without the scope), RESOURCE_EXHAUSTED (quota).
 */
export type AccessNeed = ApiKeyScope;

/** The caller a request was authorized for. */
export interface Principal {
  keyId: string;
  /** Priority given to requests that set none (0 = the model's default). */
  priorityLevel: number;
  /** How messages name the key: `opk_<prefix>…`, never the whole key; `id <keyId>` when the token has no prefix. */
  label: string;
  /** The key's tenant (traffic shares); undefined while no tenant shares are configured. */
  tenantId?: string;
  /** The control plane's own key (config-search shadow models are served to it alone). */
  internal?: boolean;
  /** A running batch job's key: its requests are batch traffic, not online (online-latency.ts). */
  batchJob?: boolean;
  /** The key has the admin scope (it may tag perf traffic, perf-traffic.ts). */
  admin?: boolean;
}

export interface GatewayAccessPolicyOptions {
  ring: ApiKeyRing;
  /** --require-api-key: every request but health and server metadata needs a key. */
  requireApiKey: boolean;
  /** True when every enabled listener binds a loopback address. */
  loopbackOnly: boolean;
  /**
   * --anonymous-model-control: on a loopback-only server, keep model control
   * open to callers without a key even after keys were issued. Default false.
   */
  anonymousModelControl?: boolean;
}

/**
 * A model control change made through the gateway's own API (load, unload,
 * operator registration), reported after it succeeded so that the control
 * plane can write it to the audit log. `keyId` is null for an anonymous
 * caller where model control is open.
 */
export interface ModelControlEvent {
  action: "model.load" | "model.unload" | "operator.register" | "operator.remove" | "model.scale" | "model.park";
  /** The model or operator name. */
  target: string;
  keyId: string | null;
  transport: "http" | "grpc";
  /** The caller's address as the socket saw it. */
  address: string | null;
  /** Load only: whether the request carried a config override, and the names of uploaded files. */
  configOverride?: boolean;
  files?: string[];
  /** Load only: uploaded shared libraries (native backends) and their SHA-256, hex. */
  nativeLibraries?: Array<{ file: string; sha256: string }>;
}

const BEARER = /^Bearer +([^\s]+) *$/i;

export class GatewayAccessPolicy {
  readonly ring: ApiKeyRing;
  readonly requireApiKey: boolean;
  readonly loopbackOnly: boolean;
  readonly anonymousModelControl: boolean;
  private readonly modelControlListeners = new Set<(event: ModelControlEvent) => void>();

  constructor(options: GatewayAccessPolicyOptions) {
    this.ring = options.ring;
    this.requireApiKey = options.requireApiKey;
    this.loopbackOnly = options.loopbackOnly;
    this.anonymousModelControl = options.anonymousModelControl ?? false;
  }

  /** Calls `listener` after every successful model control change; returns the unsubscribe. */
  onModelControl(listener: (event: ModelControlEvent) => void): () => void {
    this.modelControlListeners.add(listener);
    return () => this.modelControlListeners.delete(listener);
  }

  /** For the frontends: a model control request succeeded. Listener errors never reach the caller. */
  noteModelControl(event: ModelControlEvent): void {
    for (const listener of this.modelControlListeners) {
      try {
        listener(event);
      } catch {
        // the audit side logs its own failures
      }
    }
  }

  /** True when model control needs no key right now (start-up messages tell the user). */
  modelControlOpen(): boolean {
    return !this.keyRequired("admin");
  }

  /** True when requests of this need must present a key right now. */
  keyRequired(need: AccessNeed): boolean {
    if (need === "infer") return this.requireApiKey;
    return this.requireApiKey || !this.loopbackOnly || (!this.anonymousModelControl && this.ring.modelControlLocked());
  }

  /**
   * Checks one request's Authorization value (undefined = none sent) for a
   * need, takes it from the key's quota and notes the key's use. Resolves
   * the principal, or null for an anonymous request that needs no key.
   */
  authorize(authorizationHeader: string | undefined, need: AccessNeed): Principal | null {
    const principal = this.authenticate(authorizationHeader, need);
    if (principal !== null) this.admit(principal);
    return principal;
  }

  /**
   * The identity and scope half of authorize, without quota or use: for a
   * stream, checked once when it opens; admit() then runs per request.
   */
  authenticate(authorizationHeader: string | undefined, need: AccessNeed): Principal | null {
    if (authorizationHeader === undefined) {
      if (!this.keyRequired(need)) return null;
      throw new OperonError(
        "UNAUTHENTICATED",
        `${NEED_WORDS[need]} on this server needs an API key (Authorization: Bearer <key>)`,
      );
    }
    const token = BEARER.exec(authorizationHeader)?.[1];
    if (token === undefined) throw new OperonError("UNAUTHENTICATED", "Authorization must be 'Bearer <api key>'");
    const grant = this.ring.lookup(token);
    if (grant === undefined)
      throw new OperonError("UNAUTHENTICATED", "the API key is not valid (unknown, revoked or expired)");
    checkScope(grant, need);
    const prefix = apiKeyPrefixOf(token);
    const label = prefix !== undefined ? `opk_${prefix}…` : `id ${grant.id}`;
    return {
      keyId: grant.id,
      priorityLevel: grant.priorityLevel,
      label,
      ...(grant.tenant !== undefined ? { tenantId: grant.tenant.id } : {}),
      ...(grant.internal === true ? { internal: true } : {}),
      ...(grant.batchJob === true ? { batchJob: true } : {}),
      ...(grant.scopes.includes("admin") ? { admin: true } : {}),
    };
  }

  /**
   * One request of an authenticated principal: the key must still be held
   * (not revoked or expired since), and within its quota. Notes its use.
   */
  admit(principal: Principal): void {
    const grant = this.ring.grantById(principal.keyId);
    if (grant === undefined)
      throw new OperonError("UNAUTHENTICATED", "the API key is not valid (unknown, revoked or expired)");
    if (!this.ring.takeQuota(grant)) {
      throw new OperonError(
        "RESOURCE_EXHAUSTED",
        `API key ${principal.label} exceeded its quota of ${grant.qpsQuota} requests/s`,
      );
    }
    this.ring.recordUse(grant.id);
  }
}

const NEED_WORDS: Record<AccessNeed, string> = {
  infer: "inference",
  admin: "model control",
};

function checkScope(grant: ApiKeyGrant, need: AccessNeed): void {
  if (need === "admin") {
    // Even where model control is open to anonymous callers: a caller who sends a key acts as that key.
    if (!grant.scopes.includes("admin")) {
      throw new OperonError("PERMISSION_DENIED", "this API key lacks the 'admin' scope that model control needs");
    }
    return;
  }
  if (!grant.scopes.includes("infer") && !grant.scopes.includes("admin")) {
    throw new OperonError("PERMISSION_DENIED", "this API key lacks the 'infer' scope that inference needs");
  }
}

import { RateLimiterMemory, RateLimiterRes } from "rate-limiter-flexible";
import { AppError } from "../../app-error.js";

/**
 * Slows down password guessing: password checks are counted per
 * (address, email) and per address. Over the limit, sign-in fails with
 * RATE_LIMITED before the password is checked, until the window passes.
 *
 * Each attempt takes its point *before* its password is checked (reserve),
 * and only a correct password gives it back (succeeded). Counting after the
 * check let a caller start 100 checks at once (one tRPC batch) that all saw
 * an empty budget; now the sixth concurrent guess at one account is refused
 * however the calls arrive.
 */
export interface LoginRateLimits {
  /** Failed attempts per address and email within the window (default 5). */
  perAccount: number;
  /** Failed attempts per address within the window, any email (default 50). */
  perAddress: number;
  windowSecs: number;
}

export const DEFAULT_LOGIN_RATE_LIMITS: LoginRateLimits = { perAccount: 5, perAddress: 50, windowSecs: 15 * 60 };

export class LoginRateLimiter {
  private readonly account: RateLimiterMemory;
  private readonly address: RateLimiterMemory;

  constructor(private readonly limits: LoginRateLimits = DEFAULT_LOGIN_RATE_LIMITS) {
    this.account = new RateLimiterMemory({ points: limits.perAccount, duration: limits.windowSecs });
    this.address = new RateLimiterMemory({ points: limits.perAddress, duration: limits.windowSecs });
  }

  /**
   * Takes one attempt from both budgets, or throws RATE_LIMITED (taking
   * nothing) when either is spent; `what` names the attempts in the message.
   * Synchronous up to the point of counting (RateLimiterMemory answers in
   * the same tick), so concurrent callers are counted one after the other.
   */
  async reserve(ip: string, email: string, what = "sign-ins"): Promise<void> {
    const accountKeyOf = accountKey(ip, email);
    const account = this.account.consume(accountKeyOf, 1);
    const address = this.address.consume(ip, 1);
    const [accountResult, addressResult] = await Promise.allSettled([account, address]);
    const refused = [accountResult, addressResult].filter((result): result is PromiseRejectedResult => result.status === "rejected");
    if (refused.length === 0) return;
    // Give back what the refused attempt took from the budget that still had room.
    if (accountResult.status === "fulfilled") await this.account.reward(accountKeyOf, 1);
    if (addressResult.status === "fulfilled") await this.address.reward(ip, 1);
    const waits = refused.map((result) => (result.reason instanceof RateLimiterRes ? result.reason.msBeforeNext : this.limits.windowSecs * 1000));
    const retryAfterSecs = Math.max(1, Math.ceil(Math.max(...waits) / 1000));
    throw new AppError("RATE_LIMITED", `too many failed ${what}; try again in ${retryAfterSecs} s`, { retryAfterSecs });
  }

  /** A reserved attempt whose password was right: it does not count, and the account's failures are forgiven. */
  async succeeded(ip: string, email: string): Promise<void> {
    await Promise.all([this.account.delete(accountKey(ip, email)), this.address.reward(ip, 1)]);
  }
}

function accountKey(ip: string, email: string): string {
  return `${ip}|${email.toLowerCase()}`;
}

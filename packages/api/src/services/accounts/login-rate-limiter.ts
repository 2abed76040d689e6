import { RateLimiterMemory, RateLimiterRes } from "rate-limiter-flexible";
import { AppError } from "../../app-error.js";

/**
 * Slows down password guessing: failed sign-ins are counted per
 * (address, email) and per address. Over the limit, sign-in fails with
 * RATE_LIMITED before the password is checked, until the window passes.
 * A successful sign-in clears the (address, email) count.
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

  /** Throws RATE_LIMITED when either budget is spent; `what` names the failures in the message. */
  async check(ip: string, email: string, what = "sign-ins"): Promise<void> {
    const [account, address] = await Promise.all([this.account.get(accountKey(ip, email)), this.address.get(ip)]);
    const blocked = [
      { res: account, limit: this.limits.perAccount },
      { res: address, limit: this.limits.perAddress },
    ].filter(({ res, limit }) => res !== null && res.consumedPoints >= limit);
    if (blocked.length > 0) {
      const retryAfterSecs = Math.ceil(Math.max(...blocked.map(({ res }) => (res as RateLimiterRes).msBeforeNext)) / 1000);
      throw new AppError("RATE_LIMITED", `too many failed ${what}; try again in ${retryAfterSecs} s`, { retryAfterSecs });
    }
  }

  async recordFailure(ip: string, email: string): Promise<void> {
    await Promise.all([this.account.penalty(accountKey(ip, email), 1), this.address.penalty(ip, 1)]);
  }

  async recordSuccess(ip: string, email: string): Promise<void> {
    await this.account.delete(accountKey(ip, email));
  }
}

function accountKey(ip: string, email: string): string {
  return `${ip}|${email.toLowerCase()}`;
}

import { RateLimiterMemory, RateLimiterRes } from "rate-limiter-flexible";
import { AppError } from "../../app-error.js";

/**
 * Slows down password guessing: password checks are counted per
 * (address, email), per address, and per email over all addresses. Over a
 * limit, sign-in fails with RATE_LIMITED before the password is checked,
 * until the window passes.
 *
 * Each attempt takes its point *before* its password is checked (reserve),
 * and only a correct password gives it back (succeeded). Counting after the
 * check let a caller start 100 checks at once (one tRPC batch) that all saw
 * an empty budget; now the sixth concurrent guess at one account is refused
 * however the calls arrive.
 *
 * The per-email budget stops guessing from rotating addresses (40 guesses
 * from 127.0.0.2–9 went through the per-address budgets). Its price is that
 * anyone can lock an account for one window by guessing wrong; the account's
 * admins are told (onAccountLocked: an audit event) so they see the attack.
 * Unknown emails are locked alike, so a lock says nothing about which
 * accounts exist.
 */
export interface LoginRateLimits {
  /** Failed attempts per address and email within the window (default 5). */
  perAccount: number;
  /** Failed attempts per address within the window, any email (default 50). */
  perAddress: number;
  /** Failed attempts per email within the window, from all addresses together (default 20). */
  perAccountAllAddresses: number;
  windowSecs: number;
}

export const DEFAULT_LOGIN_RATE_LIMITS: LoginRateLimits = {
  perAccount: 5,
  perAddress: 50,
  perAccountAllAddresses: 20,
  windowSecs: 15 * 60,
};

/** Told once per window when an email's budget over all addresses is spent. */
export type AccountLockedListener = (event: {
  email: string;
  lockedForSecs: number;
  failures: number;
  ip: string;
}) => void;

export class LoginRateLimiter {
  private readonly account: RateLimiterMemory;
  private readonly address: RateLimiterMemory;
  private readonly accountAllAddresses: RateLimiterMemory;
  /** Emails whose lock was reported, until when (epoch ms): one notice per lock. */
  private readonly reported = new Map<string, number>();
  private readonly limits: LoginRateLimits;

  constructor(
    limits: Partial<LoginRateLimits> = DEFAULT_LOGIN_RATE_LIMITS,
    private readonly onAccountLocked: AccountLockedListener = () => undefined,
  ) {
    this.limits = { ...DEFAULT_LOGIN_RATE_LIMITS, ...limits };
    this.account = new RateLimiterMemory({ points: this.limits.perAccount, duration: this.limits.windowSecs });
    this.address = new RateLimiterMemory({ points: this.limits.perAddress, duration: this.limits.windowSecs });
    this.accountAllAddresses = new RateLimiterMemory({
      points: this.limits.perAccountAllAddresses,
      duration: this.limits.windowSecs,
    });
  }

  /**
   * Takes one attempt from every budget, or throws RATE_LIMITED (taking
   * nothing) when any is spent; `what` names the attempts in the message.
   * Synchronous up to the point of counting (RateLimiterMemory answers in
   * the same tick), so concurrent callers are counted one after the other.
   */
  async reserve(ip: string, email: string, what = "sign-ins"): Promise<void> {
    const emailKey = email.toLowerCase();
    const accountKeyOf = accountKey(ip, email);
    const budgets = [
      { limiter: this.account, key: accountKeyOf },
      { limiter: this.address, key: ip },
      { limiter: this.accountAllAddresses, key: emailKey },
    ];
    const results = await Promise.allSettled(budgets.map(({ limiter, key }) => limiter.consume(key, 1)));
    const refused = results.filter((result): result is PromiseRejectedResult => result.status === "rejected");
    if (refused.length === 0) return;
    // Give back what the refused attempt took from the budgets that still had room.
    await Promise.all(
      budgets.map(({ limiter, key }, i) => (results[i]!.status === "fulfilled" ? limiter.reward(key, 1) : undefined)),
    );
    const waits = refused.map((result) =>
      result.reason instanceof RateLimiterRes ? result.reason.msBeforeNext : this.limits.windowSecs * 1000,
    );
    const retryAfterSecs = Math.max(1, Math.ceil(Math.max(...waits) / 1000));
    if (results[2]!.status === "rejected") {
      this.reportLock(emailKey, ip, retryAfterSecs);
      throw new AppError(
        "RATE_LIMITED",
        `too many failed ${what} for this account from all addresses: it is locked; try again in ${retryAfterSecs} s`,
        { retryAfterSecs },
      );
    }
    throw new AppError("RATE_LIMITED", `too many failed ${what}; try again in ${retryAfterSecs} s`, { retryAfterSecs });
  }

  /**
   * A reserved attempt whose password was right: it does not count, and the
   * failures from this address are forgiven. Failures from other addresses
   * stay counted: the right password from one place says nothing about the
   * guesses from elsewhere.
   */
  async succeeded(ip: string, email: string): Promise<void> {
    await Promise.all([
      this.account.delete(accountKey(ip, email)),
      this.address.reward(ip, 1),
      this.accountAllAddresses.reward(email.toLowerCase(), 1),
    ]);
  }

  private reportLock(email: string, ip: string, lockedForSecs: number): void {
    const now = Date.now();
    for (const [key, until] of this.reported) if (until <= now) this.reported.delete(key);
    if (this.reported.has(email)) return;
    this.reported.set(email, now + lockedForSecs * 1000);
    try {
      this.onAccountLocked({ email, lockedForSecs, failures: this.limits.perAccountAllAddresses, ip });
    } catch {
      // A failing notice must not turn the refusal into an error.
    }
  }
}

function accountKey(ip: string, email: string): string {
  return `${ip}|${email.toLowerCase()}`;
}

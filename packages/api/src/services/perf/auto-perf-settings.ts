import type { AutoPerfSettings as AutoPerfSettingsRow, PrismaClient } from "@operon/db";
import { AppError } from "../../app-error.js";
import { recordAudit, type Actor } from "../audit/audit-log.js";

/**
 * The plan of automatic perf reports and whether they run at all: one row
 * (id "default") that admins edit; absent = the defaults below. The sweep's
 * plan is copied into a run when it is queued; `enabled` and the headroom
 * limits are read again when its turn comes.
 */
export interface AutoPerfSettings {
  enabled: boolean;
  maxConcurrency: number;
  measurementIntervalMs: number;
  maxTrials: number;
  timeBoundSecs: number;
  minGainPercent: number;
  /** Users' traffic to the measured model itself (not to the gateway as a whole) a run may start under (headroom-gate.ts). */
  headroomMaxRequestsPerSec: number;
  maxWaitSecs: number;
  updatedAt: Date | null;
  updatedById: string | null;
}

export type AutoPerfSettingsPatch = Partial<Omit<AutoPerfSettings, "updatedAt" | "updatedById">>;

export const AUTO_PERF_DEFAULTS: Omit<AutoPerfSettings, "updatedAt" | "updatedById"> = {
  enabled: true,
  maxConcurrency: 32,
  measurementIntervalMs: 2000,
  maxTrials: 5,
  timeBoundSecs: 60,
  minGainPercent: 5,
  headroomMaxRequestsPerSec: 1,
  maxWaitSecs: 600,
};

/** Bounds the API enforces (zod in the router mirrors them); hostile values are refused, not clamped. */
export const AUTO_PERF_LIMITS = {
  maxConcurrency: [1, 1024],
  measurementIntervalMs: [100, 60_000],
  maxTrials: [3, 50],
  timeBoundSecs: [1, 3600],
  minGainPercent: [0, 100],
  headroomMaxRequestsPerSec: [0, 1_000_000],
  maxWaitSecs: [0, 86_400],
} as const;

const ID = "default";

export class AutoPerfSettingsStore {
  constructor(private readonly prisma: PrismaClient) {}

  async get(): Promise<AutoPerfSettings> {
    return view(await this.prisma.autoPerfSettings.findUnique({ where: { id: ID } }));
  }

  /** Changes the fields given; audited as perf.settings with before and after. */
  async update(actor: Actor, patch: AutoPerfSettingsPatch): Promise<AutoPerfSettings> {
    for (const [key, [min, max]] of Object.entries(AUTO_PERF_LIMITS) as Array<
      [keyof typeof AUTO_PERF_LIMITS, readonly [number, number]]
    >) {
      const value = patch[key];
      if (value !== undefined && (!Number.isFinite(value) || value < min || value > max)) {
        throw new AppError("VALIDATION_FAILED", `${key} must be between ${min} and ${max}, got ${value}`, {
          fieldErrors: [{ path: key, message: `between ${min} and ${max}` }],
        });
      }
    }
    return this.prisma.$transaction(async (tx) => {
      const before = view(await tx.autoPerfSettings.findUnique({ where: { id: ID } }));
      const row = await tx.autoPerfSettings.upsert({
        where: { id: ID },
        create: { id: ID, ...AUTO_PERF_DEFAULTS, ...patch, updatedById: actor.userId },
        update: { ...patch, updatedById: actor.userId },
      });
      const after = view(row);
      await recordAudit(tx, actor, {
        action: "perf.settings",
        targetType: "AutoPerfSettings",
        targetId: ID,
        before: plain(before),
        after: plain(after),
      });
      return after;
    });
  }
}

function view(row: AutoPerfSettingsRow | null): AutoPerfSettings {
  if (row === null) return { ...AUTO_PERF_DEFAULTS, updatedAt: null, updatedById: null };
  return {
    enabled: row.enabled,
    maxConcurrency: row.maxConcurrency,
    measurementIntervalMs: row.measurementIntervalMs,
    maxTrials: row.maxTrials,
    timeBoundSecs: row.timeBoundSecs,
    minGainPercent: row.minGainPercent,
    headroomMaxRequestsPerSec: row.headroomMaxRequestsPerSec,
    maxWaitSecs: row.maxWaitSecs,
    updatedAt: row.updatedAt,
    updatedById: row.updatedById,
  };
}

function plain(settings: AutoPerfSettings): Omit<AutoPerfSettings, "updatedAt" | "updatedById"> {
  const { updatedAt: _updatedAt, updatedById: _updatedById, ...rest } = settings;
  return rest;
}

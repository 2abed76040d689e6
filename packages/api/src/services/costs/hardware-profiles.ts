import type { AdvisoryLocks, HardwareKind, HardwareProfile, Prisma, PrismaClient } from "@operon/db";
import { AppError, notFound } from "../../app-error.js";
import { recordAudit, type Actor } from "../audit/audit-log.js";
import { KeyedLock } from "../keyed-lock.js";
import { isUniqueViolation } from "../accounts/user-accounts.js";

/**
 * Hardware profiles: what a host is and what it costs per hour. Usage
 * samples are costed with the default profile, the one of the host the
 * gateway runs on. Rule: whenever profiles exist, exactly one is the
 * default: the first one created becomes it, setDefault moves it, and the
 * default cannot be deleted while other profiles exist.
 */
export interface HardwareProfileInput {
  name: string;
  kind: HardwareKind;
  cpuCores?: number | null | undefined;
  memoryBytes?: number | null | undefined;
  gpuModel?: string | null | undefined;
  gpuCount?: number | undefined;
  gpuMemoryBytes?: number | null | undefined;
  /** Share of costPerHour paying for the GPUs (0..1); null/absent: the default (cost-model.ts). */
  gpuPriceShare?: number | null | undefined;
  costPerHour: number;
  currency: string;
}

/** A profile as the API returns it: Decimal and BigInt as JSON numbers (bytes stay far below 2^53). */
export interface HardwareProfileView {
  id: string;
  name: string;
  kind: HardwareKind;
  cpuCores: number | null;
  memoryBytes: number | null;
  gpuModel: string | null;
  gpuCount: number;
  gpuMemoryBytes: number | null;
  /** As set; null = the default for the kind (gpuPriceShareOf). */
  gpuPriceShare: number | null;
  costPerHour: number;
  currency: string;
  isDefault: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export function viewHardwareProfile(profile: HardwareProfile): HardwareProfileView {
  return {
    id: profile.id,
    name: profile.name,
    kind: profile.kind,
    cpuCores: profile.cpuCores,
    memoryBytes: profile.memoryBytes === null ? null : Number(profile.memoryBytes),
    gpuModel: profile.gpuModel,
    gpuCount: profile.gpuCount,
    gpuMemoryBytes: profile.gpuMemoryBytes === null ? null : Number(profile.gpuMemoryBytes),
    gpuPriceShare: profile.gpuPriceShare,
    costPerHour: Number(profile.costPerHour),
    currency: profile.currency,
    isDefault: profile.isDefault,
    createdAt: profile.createdAt,
    updatedAt: profile.updatedAt,
  };
}

/** A GPU profile names its GPUs; a CPU profile has none. */
function checkKind(input: Pick<HardwareProfileInput, "kind" | "gpuCount" | "gpuModel">): void {
  const gpuCount = input.gpuCount ?? 0;
  if (input.kind === "GPU" && gpuCount < 1) {
    throw new AppError("VALIDATION_FAILED", "a GPU profile needs gpuCount of at least 1", {
      fieldErrors: [{ path: "gpuCount", message: "at least 1 for a GPU profile" }],
    });
  }
  if (input.kind === "CPU" && (gpuCount > 0 || (input.gpuModel ?? null) !== null)) {
    throw new AppError(
      "VALIDATION_FAILED",
      "a CPU profile has no GPUs: leave gpuCount at 0 and gpuModel empty, or make it a GPU profile",
      {
        fieldErrors: [{ path: gpuCount > 0 ? "gpuCount" : "gpuModel", message: "CPU profiles have no GPUs" }],
      },
    );
  }
}

function dataOf(input: Partial<HardwareProfileInput>): Prisma.HardwareProfileUncheckedUpdateInput {
  const data: Prisma.HardwareProfileUncheckedUpdateInput = {};
  if (input.name !== undefined) data.name = input.name;
  if (input.kind !== undefined) data.kind = input.kind;
  if (input.cpuCores !== undefined) data.cpuCores = input.cpuCores;
  if (input.memoryBytes !== undefined) data.memoryBytes = input.memoryBytes === null ? null : BigInt(input.memoryBytes);
  if (input.gpuModel !== undefined) data.gpuModel = input.gpuModel;
  if (input.gpuCount !== undefined) data.gpuCount = input.gpuCount;
  if (input.gpuMemoryBytes !== undefined)
    data.gpuMemoryBytes = input.gpuMemoryBytes === null ? null : BigInt(input.gpuMemoryBytes);
  if (input.gpuPriceShare !== undefined) data.gpuPriceShare = input.gpuPriceShare;
  if (input.costPerHour !== undefined) data.costPerHour = input.costPerHour.toFixed(4);
  if (input.currency !== undefined) data.currency = input.currency;
  return data;
}

export class HardwareProfiles {
  /** One writer at a time keeps "exactly one default" true without a database constraint. */
  private readonly lock: KeyedLock;

  /** `locks`: the database's, so the writers of every control plane on it take turns. */
  constructor(
    private readonly prisma: PrismaClient,
    locks: AdvisoryLocks,
  ) {
    this.lock = new KeyedLock(locks, "hardware-profiles");
  }

  async list(): Promise<HardwareProfileView[]> {
    return (await this.prisma.hardwareProfile.findMany({ orderBy: [{ isDefault: "desc" }, { name: "asc" }] })).map(
      viewHardwareProfile,
    );
  }

  async defaultProfile(): Promise<HardwareProfileView | null> {
    const profile = await this.prisma.hardwareProfile.findFirst({ where: { isDefault: true } });
    return profile === null ? null : viewHardwareProfile(profile);
  }

  create(actor: Actor, input: HardwareProfileInput): Promise<HardwareProfileView> {
    checkKind(input);
    return this.write(input.name, async (tx) => {
      const first = (await tx.hardwareProfile.count()) === 0;
      const created = await tx.hardwareProfile.create({
        data: { ...(dataOf(input) as Prisma.HardwareProfileUncheckedCreateInput), isDefault: first },
      });
      const view = viewHardwareProfile(created);
      await recordAudit(tx, actor, {
        action: "hardwareProfile.create",
        targetType: "HardwareProfile",
        targetId: created.id,
        after: view,
      });
      return view;
    });
  }

  update(actor: Actor, id: string, change: Partial<HardwareProfileInput>): Promise<HardwareProfileView> {
    return this.write(change.name ?? "", async (tx) => {
      const before = await tx.hardwareProfile.findUnique({ where: { id } });
      if (before === null) throw notFound(`hardware profile ${id}`);
      checkKind({
        kind: change.kind ?? before.kind,
        gpuCount: change.gpuCount ?? before.gpuCount,
        gpuModel: change.gpuModel !== undefined ? change.gpuModel : before.gpuModel,
      });
      const after = await tx.hardwareProfile.update({ where: { id }, data: dataOf(change) });
      const view = viewHardwareProfile(after);
      await recordAudit(tx, actor, {
        action: "hardwareProfile.update",
        targetType: "HardwareProfile",
        targetId: id,
        before: viewHardwareProfile(before),
        after: view,
      });
      return view;
    });
  }

  delete(actor: Actor, id: string): Promise<void> {
    return this.write("", async (tx) => {
      const before = await tx.hardwareProfile.findUnique({ where: { id } });
      if (before === null) throw notFound(`hardware profile ${id}`);
      if (before.isDefault && (await tx.hardwareProfile.count()) > 1) {
        throw new AppError(
          "CONFLICT",
          `'${before.name}' is the default profile; make another profile the default first`,
        );
      }
      await tx.hardwareProfile.delete({ where: { id } });
      await recordAudit(tx, actor, {
        action: "hardwareProfile.delete",
        targetType: "HardwareProfile",
        targetId: id,
        before: viewHardwareProfile(before),
      });
    });
  }

  /** Makes the profile the default (the host the gateway runs on); usage samples from now on are costed with it. */
  setDefault(actor: Actor, id: string): Promise<HardwareProfileView> {
    return this.write("", async (tx) => {
      const target = await tx.hardwareProfile.findUnique({ where: { id } });
      if (target === null) throw notFound(`hardware profile ${id}`);
      const previous = await tx.hardwareProfile.findFirst({ where: { isDefault: true } });
      await tx.hardwareProfile.updateMany({ where: { isDefault: true, NOT: { id } }, data: { isDefault: false } });
      const after = await tx.hardwareProfile.update({ where: { id }, data: { isDefault: true } });
      const view = viewHardwareProfile(after);
      await recordAudit(tx, actor, {
        action: "hardwareProfile.setDefault",
        targetType: "HardwareProfile",
        targetId: id,
        before: { defaultId: previous?.id ?? null, defaultName: previous?.name ?? null },
        after: { defaultId: id, defaultName: after.name },
      });
      return view;
    });
  }

  /** One transaction under the writers' lock; a duplicate name becomes CONFLICT naming it. */
  private write<T>(name: string, work: (tx: Prisma.TransactionClient) => Promise<T>): Promise<T> {
    return this.lock.run("profiles", async () => {
      try {
        return await this.prisma.$transaction(work);
      } catch (error) {
        if (isUniqueViolation(error)) {
          throw new AppError("CONFLICT", `a hardware profile named '${name}' already exists`, {
            fieldErrors: [{ path: "name", message: "already in use" }],
            cause: error,
          });
        }
        throw error;
      }
    });
  }
}

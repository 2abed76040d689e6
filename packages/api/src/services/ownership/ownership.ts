import type { PrismaClient, Role } from "@operon/db";
import { AppError } from "../../app-error.js";

/**
 * Who may change a thing the control plane stores: its owner, or an admin.
 * Engineers change (edit, load, unload, delete, add versions to) only the
 * uploaded models and operators they own, and cancel or delete only the
 * perf runs and config searches they started. A thing whose owner is gone
 * (ownerId null: the account was deleted, or the platform made it, as with
 * automatic perf runs) is the admins'. Models of the operator's own
 * --model-repository folders have no row and no owner: the engineers' as
 * before (they are the host's, not anyone's upload).
 */
export interface Changer {
  id: string;
  role: Role;
}

export type OwnedKind = "model" | "operator" | "perf run" | "config search" | "dataset" | "batch job";

/** Throws FORBIDDEN, naming the thing and its owner, unless `who` owns it or is an admin. */
export async function requireOwnerOrAdmin(
  prisma: PrismaClient,
  who: Changer,
  kind: OwnedKind,
  label: string,
  ownerId: string | null,
): Promise<void> {
  if (who.role === "ADMIN" || (ownerId !== null && ownerId === who.id)) return;
  const owner =
    ownerId === null ? null : await prisma.user.findUnique({ where: { id: ownerId }, select: { email: true } });
  const whose = owner !== null ? `belongs to ${owner.email}` : "has no owner (the platform's)";
  throw new AppError("FORBIDDEN", `${kind} ${label} ${whose}: only its owner or an admin may change it`);
}

/**
 * An uploaded model (a row with versions): its owner or an admin. Repository
 * models pass: they have no row, or one without versions (the usage sampler
 * keeps a row per served model).
 */
export async function requireModelChanger(prisma: PrismaClient, who: Changer, name: string): Promise<void> {
  const model = await prisma.model.findUnique({
    where: { name },
    select: { ownerId: true, _count: { select: { versions: true } } },
  });
  if (model !== null && model._count.versions > 0)
    await requireOwnerOrAdmin(prisma, who, "model", `'${name}'`, model.ownerId);
}

export async function requireOperatorChanger(prisma: PrismaClient, who: Changer, name: string): Promise<void> {
  const operator = await prisma.operator.findUnique({ where: { name }, select: { ownerId: true } });
  if (operator !== null) await requireOwnerOrAdmin(prisma, who, "operator", `'${name}'`, operator.ownerId);
}

/**
 * A manual run: whoever started it, or an admin. An automatic run (no
 * creator: the platform queued it after a change) goes with its target: the
 * target's owner, or an admin (a repository model's: any engineer).
 */
export async function requirePerfRunChanger(prisma: PrismaClient, who: Changer, id: string): Promise<void> {
  const report = await prisma.perfReport.findUnique({
    where: { id },
    select: { createdById: true, targetName: true, targetKind: true, trigger: true },
  });
  if (report === null) return;
  if (report.trigger === "AUTOMATIC" && report.createdById === null) {
    const label = `${id} (automatic, of ${report.targetKind === "MODEL" ? "model" : "operator"} '${report.targetName}')`;
    if (report.targetKind === "MODEL") {
      const model = await prisma.model.findUnique({
        where: { name: report.targetName },
        select: { ownerId: true, _count: { select: { versions: true } } },
      });
      if (model !== null && model._count.versions > 0)
        await requireOwnerOrAdmin(prisma, who, "perf run", label, model.ownerId);
    } else {
      const operator = await prisma.operator.findUnique({
        where: { name: report.targetName },
        select: { ownerId: true },
      });
      if (operator !== null) await requireOwnerOrAdmin(prisma, who, "perf run", label, operator.ownerId);
    }
    return;
  }
  await requireOwnerOrAdmin(prisma, who, "perf run", `${id} (of '${report.targetName}')`, report.createdById);
}

export async function requireConfigSearchChanger(prisma: PrismaClient, who: Changer, id: string): Promise<void> {
  const search = await prisma.configSearch.findUnique({
    where: { id },
    select: { createdById: true, modelName: true },
  });
  if (search !== null)
    await requireOwnerOrAdmin(prisma, who, "config search", `${id} (of '${search.modelName}')`, search.createdById);
}

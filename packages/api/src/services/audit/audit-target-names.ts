import type { PrismaClient } from "@operon/db";

/**
 * What a person calls an audit event's target: a key's or a profile's name,
 * a user's email, a model's or an operator's name, a perf report's target.
 * Looked up now (names may have changed since), falling back to the name in
 * the event's own snapshots when the object is gone. Keyed "Type:id".
 */
export async function auditTargetNames(
  prisma: PrismaClient,
  events: ReadonlyArray<{ targetType: string; targetId: string | null; before: unknown; after: unknown }>,
): Promise<Map<string, string>> {
  const idsOf = (type: string) => [
    ...new Set(events.filter((event) => event.targetType === type && event.targetId).map((event) => event.targetId!)),
  ];
  const [keys, users, models, operators, profiles, reports] = await Promise.all([
    prisma.apiKey.findMany({ where: { id: { in: idsOf("ApiKey") } }, select: { id: true, name: true } }),
    prisma.user.findMany({ where: { id: { in: idsOf("User") } }, select: { id: true, email: true } }),
    // Model events name their target by id or, for config edits, by name.
    prisma.model.findMany({
      where: { OR: [{ id: { in: idsOf("Model") } }, { name: { in: idsOf("Model") } }] },
      select: { id: true, name: true },
    }),
    prisma.operator.findMany({
      where: { OR: [{ id: { in: idsOf("Operator") } }, { name: { in: idsOf("Operator") } }] },
      select: { id: true, name: true },
    }),
    prisma.hardwareProfile.findMany({
      where: { id: { in: idsOf("HardwareProfile") } },
      select: { id: true, name: true },
    }),
    prisma.perfReport.findMany({ where: { id: { in: idsOf("PerfReport") } }, select: { id: true, targetName: true } }),
  ]);
  const names = new Map<string, string>();
  for (const key of keys) names.set(`ApiKey:${key.id}`, key.name);
  for (const user of users) names.set(`User:${user.id}`, user.email);
  for (const model of models) names.set(`Model:${model.id}`, model.name).set(`Model:${model.name}`, model.name);
  for (const operator of operators)
    names.set(`Operator:${operator.id}`, operator.name).set(`Operator:${operator.name}`, operator.name);
  for (const profile of profiles) names.set(`HardwareProfile:${profile.id}`, profile.name);
  for (const report of reports) names.set(`PerfReport:${report.id}`, report.targetName);
  for (const event of events) {
    const key = `${event.targetType}:${event.targetId}`;
    if (!event.targetId || names.has(key)) continue;
    const named = snapshotName(event.after) ?? snapshotName(event.before);
    if (named !== undefined) names.set(key, named);
  }
  return names;
}

function snapshotName(snapshot: unknown): string | undefined {
  if (typeof snapshot !== "object" || snapshot === null) return undefined;
  const { name, email } = snapshot as { name?: unknown; email?: unknown };
  return typeof name === "string" && name !== "" ? name : typeof email === "string" ? email : undefined;
}

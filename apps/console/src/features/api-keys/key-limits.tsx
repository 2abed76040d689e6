/** A key's scheduling priority and request quota, in words. */
export function KeyLimits({ priorityLevel, qpsQuota }: { priorityLevel: number; qpsQuota: number | null }) {
  return (
    <>
      <span className="cell-line">priority {priorityLevel === 0 ? "default" : priorityLevel}</span>
      <span className="cell-line">{qpsQuota === null ? "no quota" : `${qpsQuota} req/s`}</span>
    </>
  );
}

/** Newer/older paging over the API's cursor (audit.list pages newest first). */
export function AuditPager({
  page,
  hasOlder,
  busy,
  onNewer,
  onOlder,
}: {
  page: number;
  hasOlder: boolean;
  busy: boolean;
  onNewer: () => void;
  onOlder: () => void;
}) {
  return (
    <nav className="pager" aria-label="Audit pages">
      <button type="button" className="button" onClick={onNewer} disabled={page === 1 || busy}>
        ← Newer
      </button>
      <span aria-live="polite">Page {page}</span>
      <button type="button" className="button" onClick={onOlder} disabled={!hasOlder || busy}>
        Older →
      </button>
    </nav>
  );
}

/** An event's before/after snapshots side by side (the API removes secrets from them). */
export function AuditSnapshots({ before, after }: { before: unknown; after: unknown }) {
  return (
    <div className="json-columns">
      {before != null ? <JsonBlock title="Before" value={before} /> : null}
      {after != null ? <JsonBlock title="After" value={after} /> : null}
    </div>
  );
}

function JsonBlock({ title, value }: { title: string; value: unknown }) {
  return (
    <figure className="json-block">
      <figcaption>{title}</figcaption>
      <pre>{JSON.stringify(value, null, 2)}</pre>
    </figure>
  );
}

/**
 * What kind of database a URL names, with no imports: `operon serve` asks
 * it on the gateway's thread, which must not load Prisma for it (the
 * gateway's heap is walked by every major GC of the request path).
 */
export function isPostgresUrl(url: string | undefined): boolean {
  return !!url && /^postgres(ql)?:\/\//i.test(url);
}

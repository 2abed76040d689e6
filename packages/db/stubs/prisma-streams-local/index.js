// The prisma CLI depends on @prisma/dev, which imports @prisma/streams-local
// lazily and only for `prisma dev` (a local Prisma Postgres server). That
// package requires Node 22, and Operon supports Node 20.19+, so the root
// package.json overrides it with this stub. Operon generates the client and
// runs migrations without `prisma dev`.
export function startLocalDurableStreamsServer() {
  throw new Error("`prisma dev` is not available in Operon's checkout (@prisma/streams-local needs Node 22); Operon uses its embedded PGlite database instead");
}

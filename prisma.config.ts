// Configuration for stock Prisma 7 (`npx prisma migrate deploy`, `prisma
// migrate dev`, `prisma studio`) on machines that can download its engines.
// Operon itself does not need it: `operon migrate` and every start apply the
// same prisma/migrations offline (see prisma/README.md).
import { defineConfig } from "prisma/config";

export default defineConfig({
  schema: "prisma/schema.prisma",
  migrations: { path: "prisma/migrations" },
  datasource: { url: process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/operon" },
});

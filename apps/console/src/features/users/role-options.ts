import type { SelectOption } from "@/components/form/select-field";
import { ROLES, roleLabel } from "@/lib/roles";

export const ROLE_OPTIONS: readonly SelectOption[] = ROLES.map((role) => ({ value: role, label: roleLabel(role) }));

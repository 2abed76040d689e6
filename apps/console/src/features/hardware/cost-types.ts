import type { RouterOutputs } from "@/lib/api-types";

export type CostReport = RouterOutputs["metrics"]["costs"];
export type ModelCost = CostReport["models"][number];
export type OperatorCost = CostReport["operators"][number];
export type ProfileCost = CostReport["profiles"][number];

/** One line of the cost table: a model's cost, or an operator's part of its steps' cost. */
export type CostLine = Omit<ModelCost, "model"> & { kind: "model" | "operator"; name: string };

/** Models and operators as the table lists them. */
export function costLines(models: readonly ModelCost[], operators: readonly OperatorCost[]): CostLine[] {
  return [
    ...models.map(({ model, ...line }) => ({ ...line, kind: "model" as const, name: model })),
    ...operators.map(({ operator, ...line }) => ({ ...line, kind: "operator" as const, name: operator })),
  ];
}

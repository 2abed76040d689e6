import { conditionText } from "@operon/operator-spec/spec-graph";
import type { SpecEdit } from "./spec-connections";

/**
 * The graph editor's edits of an operator's control edges, made on the spec
 * itself like the port connections (spec-connections.ts):
 *
 * - a branch: route → step, for one of the route's cases (the step id in
 *   `cases[i].next`) or its default (`default`); the step then runs only
 *   when the route picks that branch;
 * - an exit's answer: exit → operator output, the tensor the exit answers
 *   that output with when it fires (`outputs[output] = tensor`).
 *
 * Whether the result is a valid operator (a route with no branch left, an
 * exit that does not cover every output) is the validation's to say, shown
 * as for any other edit; these only refuse what cannot be written.
 */

/** Which branch of a route: the index of one of its cases, or its default. */
export type BranchKey = number | "default";

export interface RouteChoice {
  id: string;
  /** The route's branches as people read them: "= 1", "< 0.5", "default". */
  branches: Array<{ key: BranchKey; text: string }>;
}

/** What the branch and exit editor offers, read from the spec as it parses now. */
export interface ControlChoices {
  routes: RouteChoice[];
  exits: string[];
  /** Every step id (a branch may activate any step but its own route). */
  steps: string[];
  outputs: string[];
  /** Tensor names the spec already uses (operator inputs and what steps publish), for the exit's answer. */
  tensors: string[];
}

type Json = Record<string, unknown>;

export function controlChoices(spec: unknown): ControlChoices {
  const choices: ControlChoices = { routes: [], exits: [], steps: [], outputs: [], tensors: [] };
  if (!isObject(spec)) return choices;
  const tensors = new Set<string>(names(spec["inputs"]));
  for (const step of steps(spec)) {
    const id = step["id"];
    if (typeof id !== "string" || id === "") continue;
    choices.steps.push(id);
    if (step["kind"] === "route") {
      const cases = Array.isArray(step["cases"]) ? step["cases"] : [];
      choices.routes.push({
        id,
        branches: [
          ...cases.map((entry, index) => ({
            key: index,
            text: `case ${index + 1}: ${conditionText(isObject(entry) ? entry["when"] : undefined)}`,
          })),
          { key: "default" as const, text: "default" },
        ],
      });
    }
    if (step["kind"] === "exit") choices.exits.push(id);
    if (step["kind"] === "model" && isObject(step["outputs"]))
      for (const tensor of Object.values(step["outputs"])) if (typeof tensor === "string") tensors.add(tensor);
  }
  choices.outputs = names(spec["outputs"]);
  choices.tensors = [...tensors];
  return choices;
}

/** Route `routeId` activates `stepId` on `branch`. */
export function addBranch(spec: Json, routeId: string, branch: BranchKey, stepId: string): SpecEdit {
  const next = structuredClone(spec);
  const route = findStep(next, routeId, "route");
  if (typeof route === "string") return fail(route);
  if (stepId === routeId) return fail(`route '${routeId}' cannot activate itself`);
  if (!steps(next).some((step) => step["id"] === stepId)) return fail(`the spec has no step '${stepId}'`);
  const list = branchList(route, branch, true);
  if (list === undefined) return fail(`route '${routeId}' has no case ${Number(branch) + 1}`);
  if (list.includes(stepId)) return fail(`route '${routeId}' already runs '${stepId}' on ${branchText(branch)}`);
  list.push(stepId);
  return { ok: true, spec: next };
}

/** Route `routeId` no longer activates `stepId` on `branch` (an emptied default is removed). */
export function removeBranch(spec: Json, routeId: string, branch: BranchKey, stepId: string): SpecEdit {
  const next = structuredClone(spec);
  const route = findStep(next, routeId, "route");
  if (typeof route === "string") return fail(route);
  const list = branchList(route, branch, false);
  const at = list?.indexOf(stepId) ?? -1;
  if (list === undefined || at < 0) return fail(`route '${routeId}' does not run '${stepId}' on ${branchText(branch)}`);
  list.splice(at, 1);
  if (branch === "default" && list.length === 0) delete route["default"];
  return { ok: true, spec: next };
}

/** Exit `exitId` answers operator output `output` with `tensor` when it fires. */
export function setExitAnswer(spec: Json, exitId: string, output: string, tensor: string): SpecEdit {
  const next = structuredClone(spec);
  const exit = findStep(next, exitId, "exit");
  if (typeof exit === "string") return fail(exit);
  if (!names(next["outputs"]).includes(output)) return fail(`the spec has no operator output '${output}'`);
  if (tensor.trim() === "") return fail("name the tensor the exit answers with");
  if (!isObject(exit["outputs"])) exit["outputs"] = {};
  (exit["outputs"] as Record<string, string>)[output] = tensor.trim();
  return { ok: true, spec: next };
}

/** Exit `exitId` no longer answers operator output `output`. */
export function removeExitAnswer(spec: Json, exitId: string, output: string): SpecEdit {
  const next = structuredClone(spec);
  const exit = findStep(next, exitId, "exit");
  if (typeof exit === "string") return fail(exit);
  if (!isObject(exit["outputs"]) || !(output in exit["outputs"]))
    return fail(`exit '${exitId}' does not answer operator output '${output}'`);
  delete exit["outputs"][output];
  return { ok: true, spec: next };
}

export function branchText(branch: BranchKey): string {
  return branch === "default" ? "its default" : `case ${branch + 1}`;
}

/** The step with that id and kind, or why there is none. */
function findStep(spec: Json, id: string, kind: "route" | "exit"): Json | string {
  const step = steps(spec).find((entry) => entry["id"] === id);
  if (step === undefined) return `the spec has no step '${id}'`;
  if (step["kind"] !== kind)
    return `step '${id}' is a ${String(step["kind"])}, not ${kind === "exit" ? "an" : "a"} ${kind}`;
  return step;
}

/** The step ids of one branch, in the spec object (created for a default when asked). */
function branchList(route: Json, branch: BranchKey, create: boolean): string[] | undefined {
  if (branch === "default") {
    if (!Array.isArray(route["default"])) {
      if (!create) return undefined;
      route["default"] = [];
    }
    return route["default"] as string[];
  }
  const cases = Array.isArray(route["cases"]) ? route["cases"] : [];
  const entry = cases[branch];
  if (!isObject(entry)) return undefined;
  if (!Array.isArray(entry["next"])) entry["next"] = [];
  return entry["next"] as string[];
}

function steps(spec: Json): Json[] {
  return Array.isArray(spec["steps"]) ? spec["steps"].filter(isObject) : [];
}

function names(list: unknown): string[] {
  return Array.isArray(list)
    ? list.filter(isObject).flatMap((tensor) => (typeof tensor["name"] === "string" ? [tensor["name"]] : []))
    : [];
}

function fail(message: string): SpecEdit {
  return { ok: false, message };
}

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

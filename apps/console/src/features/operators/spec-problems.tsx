import type { ParsedSpec } from "./spec-text";
import type { SpecValidation } from "./use-spec-validation";

/** What is wrong with the spec as typed: its JSON, then the gateway's problems (announced as they change). */
export function SpecProblems({
  id,
  parsed,
  validation,
}: {
  id: string;
  parsed: ParsedSpec;
  validation: SpecValidation;
}) {
  return (
    <section id={id} className="spec-problems" aria-labelledby={`${id}-title`} aria-live="polite">
      <h3 id={`${id}-title`} className="chart-title">
        Validation
      </h3>
      <ValidationBody parsed={parsed} validation={validation} />
    </section>
  );
}

function ValidationBody({ parsed, validation }: { parsed: ParsedSpec; validation: SpecValidation }) {
  if (!parsed.ok) return <p className="field-error">{parsed.message}</p>;
  switch (validation.status) {
    case "unparsed":
    case "checking":
      return <p className="muted">Checking with the gateway…</p>;
    case "valid":
      return <p className="form-success">No problems: the gateway would serve this spec.</p>;
    case "failed":
      return <p className="field-error">Could not validate: {validation.message}</p>;
    case "invalid":
      return (
        <>
          <p className="field-error">
            {validation.problems.length === 1 ? "1 problem" : `${validation.problems.length} problems`}; marked ⚠ in the
            graph where a step is named:
          </p>
          <ul className="problem-list">
            {validation.problems.map((problem, index) => (
              <li key={index}>{problem}</li>
            ))}
          </ul>
        </>
      );
  }
}

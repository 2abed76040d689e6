import { TextWithCode } from "@/components/text-with-code";
import { apiProblem } from "@/lib/api-problem";

/** A failed load: the API's message and, when it may help, a retry. */
export function ErrorState({
  error,
  title = "Could not load this",
  onRetry,
}: {
  error: unknown;
  title?: string;
  onRetry?: () => void;
}) {
  const problem = apiProblem(error);
  return (
    <div className="state state-error" role="alert">
      <p className="state-title">{title}</p>
      <p className="state-body">
        <TextWithCode text={problem.message} />
      </p>
      {onRetry ? (
        <button type="button" className="button" onClick={onRetry}>
          Try again
        </button>
      ) : null}
    </div>
  );
}

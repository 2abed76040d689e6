/** A form's primary button: it says what it is doing, and cannot be pressed again, while the request is pending. */
export function SubmitButton({
  pending,
  label,
  pendingLabel,
  disabled = false,
}: {
  pending: boolean;
  label: string;
  pendingLabel: string;
  disabled?: boolean;
}) {
  return (
    <button type="submit" className="button button-primary" disabled={pending || disabled}>
      {pending ? pendingLabel : label}
    </button>
  );
}

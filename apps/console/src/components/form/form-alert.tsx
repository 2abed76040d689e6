import { TextWithCode } from "@/components/text-with-code";

/** The form-level message (the API's answer when it is not about one field). */
export function FormAlert({ message }: { message: string | undefined }) {
  if (!message) return null;
  return (
    <p className="form-alert" role="alert">
      <TextWithCode text={message} />
    </p>
  );
}

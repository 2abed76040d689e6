"use client";

import { useState, type ReactNode } from "react";
import { apiProblem } from "@/lib/api-problem";
import { ConfirmDialog } from "./confirm-dialog";

/** A button for an action that asks first (destructive by default); the dialog stays open with the API's message if it fails. */
export function ConfirmButton({
  label,
  accessibleLabel,
  title,
  description,
  confirmLabel,
  onConfirm,
  className = "button button-danger-outline",
  confirmClassName,
}: {
  label: string;
  /** When the visible label is ambiguous in a table ("Revoke"), name the target ("Revoke key ci"). */
  accessibleLabel?: string;
  title: string;
  description: ReactNode;
  confirmLabel: string;
  onConfirm: () => Promise<unknown>;
  className?: string;
  /** The dialog's confirm button (ConfirmDialog's default: danger). */
  confirmClassName?: string;
}) {
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const confirm = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await onConfirm();
      setOpen(false);
    } catch (failure) {
      setError(apiProblem(failure).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button type="button" className={className} aria-label={accessibleLabel} onClick={() => setOpen(true)}>
        {label}
      </button>
      <ConfirmDialog
        open={open}
        title={title}
        confirmLabel={confirmLabel}
        confirmClassName={confirmClassName}
        busy={busy}
        error={error}
        onConfirm={() => void confirm()}
        onCancel={() => {
          setOpen(false);
          setError(undefined);
        }}
      >
        {description}
      </ConfirmDialog>
    </>
  );
}

"use client";

import { TIME_RANGES, type TimeRangeId } from "@/features/charts/time-range";

/** A segmented radio group: arrow keys move between ranges, as with any radio group. */
export function TimeRangePicker({ value, onChange }: { value: TimeRangeId; onChange: (range: TimeRangeId) => void }) {
  return (
    <fieldset className="segmented">
      <legend>Time range</legend>
      <div className="segmented-options">
        {TIME_RANGES.map((range) => (
          <label key={range.id} className="segmented-option">
            <input
              type="radio"
              name="time-range"
              value={range.id}
              checked={value === range.id}
              onChange={() => onChange(range.id)}
            />
            <span>{range.label}</span>
          </label>
        ))}
      </div>
    </fieldset>
  );
}

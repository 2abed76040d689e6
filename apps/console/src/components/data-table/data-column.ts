import type { ReactNode } from "react";

/** What a column sorts by; null or undefined (no value) sorts last either way. */
export type SortValue = string | number;

/** Passed to every cell, so that a cell's button can open the row's details row. */
export interface DataTableRowContext {
  detailsOpen: boolean;
  detailsId: string;
  toggleDetails: () => void;
}

/** One column of a DataTable: how it is headed, drawn, sorted and laid out. */
export interface DataColumn<Row> {
  /** Stable id (the sort state names it). */
  id: string;
  header: ReactNode;
  /** The header as text, when `header` is not a string: the narrow-screen label and the sort button's title. */
  label?: string;
  /** The header is for screen readers only (an actions column). */
  hideHeader?: boolean;
  cell: (row: Row, context: DataTableRowContext) => ReactNode;
  /** Makes the column sortable by this value. */
  sortValue?: (row: Row) => SortValue | null | undefined;
  /** This column's cell is the row's header (`<th scope="row">`), normally the name. */
  rowHeader?: boolean;
  /** Right-aligned, tabular figures, never wrapped. */
  numeric?: boolean;
  /** Buttons: right-aligned, no label on narrow screens. */
  actions?: boolean;
  nowrap?: boolean;
  className?: string;
}

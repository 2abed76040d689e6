"use client";

import {
  type ColumnDef,
  getCoreRowModel,
  getSortedRowModel,
  type SortingState,
  useReactTable,
} from "@tanstack/react-table";
import { Fragment, type ReactNode, useId, useMemo, useState } from "react";
import { EmptyState } from "@/components/states/empty-state";
import { LoadingState } from "@/components/states/loading-state";
import { TableScroller } from "@/components/table-scroller";
import type { DataColumn, DataTableRowContext, SortValue } from "./data-column";

export type { DataColumn, DataTableRowContext } from "./data-column";

/**
 * The console's one table (issue 26, "Twins merged"): every list of records renders through it, so sorting,
 * empty and loading states, keyboard use, narrow screens and long names (issue 27, item 5) behave the same on
 * every page. TanStack Table keeps the sorting state; this component owns the markup:
 *
 * - a sortable column's header is a button (Enter/Space sort; the header carries `aria-sort`);
 * - the first column with `rowHeader` is the row's `<th scope="row">`;
 * - on a screen narrower than 48rem each row becomes a card of "label value" lines (`data-label`);
 * - `numeric` columns are right-aligned, tabular and never wrap, so they stay readable beside a long name;
 * - `rows === undefined` is the loading state, an empty array the empty state, both inside the table;
 * - `details(row)` adds a full-width row beneath, opened by the cell that calls `context.toggleDetails()`.
 */
export function DataTable<Row>({
  label,
  caption,
  columns,
  rows,
  rowKey,
  initialSort,
  empty = { title: "Nothing here yet" },
  loadingLabel,
  details,
  rowClassName,
  rowCurrent,
  rowLabel,
  className,
  stack = true,
  captionVisible = false,
}: {
  /** Names the table (its caption) and its scroll region. */
  label: string;
  /** A longer caption for screen readers, when the label is not enough ("…, newest first"). */
  caption?: string;
  columns: readonly DataColumn<Row>[];
  /** `undefined` while loading. */
  rows: readonly Row[] | undefined;
  rowKey: (row: Row) => string;
  initialSort?: { column: string; descending?: boolean };
  empty?: { title: string; body?: ReactNode };
  loadingLabel?: string;
  details?: (row: Row) => ReactNode | null;
  rowClassName?: (row: Row) => string | undefined;
  /** Marks the row the page is about (`aria-current="true"`: a recommended candidate). */
  rowCurrent?: (row: Row) => boolean;
  /** Names a row whose cells alone read poorly as its name ("job model add_sub on vectors", not every figure). */
  rowLabel?: (row: Row) => string;
  className?: string;
  /** Cards on narrow screens (default); false keeps the grid and scrolls sideways. */
  stack?: boolean;
  /** Show the caption as the table's title (two tables side by side: "Inputs", "Outputs"). */
  captionVisible?: boolean;
}) {
  const [sorting, setSorting] = useState<SortingState>(
    initialSort ? [{ id: initialSort.column, desc: initialSort.descending ?? false }] : [],
  );
  const [openDetails, setOpenDetails] = useState<ReadonlySet<string>>(() => new Set());
  const baseId = useId();

  const columnDefs = useMemo<ColumnDef<Row, SortValue>[]>(
    () =>
      columns.map((column) => ({
        id: column.id,
        // Columns without a sort key still need an accessor for TanStack; they are simply not sortable.
        accessorFn: (row: Row) => normalizeSortValue(column.sortValue?.(row)),
        enableSorting: column.sortValue !== undefined,
        sortUndefined: "last",
        sortingFn: "basic",
        sortDescFirst: column.numeric === true,
      })),
    [columns],
  );
  const data = useMemo(() => (rows ?? []) as Row[], [rows]);
  const table = useReactTable<Row>({
    data,
    columns: columnDefs,
    state: { sorting },
    onSortingChange: setSorting,
    getCoreRowModel: getCoreRowModel(),
    getSortedRowModel: getSortedRowModel(),
    getRowId: (row) => rowKey(row),
  });

  const byId = new Map(columns.map((column) => [column.id, column]));
  const classes = ["data-table", stack ? "stack-table" : "", className ?? ""].filter(Boolean).join(" ");
  return (
    <TableScroller label={label}>
      <table className={classes}>
        <caption className={captionVisible ? undefined : "visually-hidden"}>{caption ?? label}</caption>
        <thead>
          {table.getHeaderGroups().map((group) => (
            <tr key={group.id}>
              {group.headers.map((header) => {
                const column = byId.get(header.column.id);
                if (column === undefined) return null;
                const sorted = header.column.getIsSorted();
                const headerText = column.hideHeader ? (
                  <span className="visually-hidden">{column.header}</span>
                ) : (
                  column.header
                );
                return (
                  <th
                    key={header.id}
                    scope="col"
                    className={cellClass(column, "head")}
                    aria-sort={
                      header.column.getCanSort()
                        ? sorted === "asc"
                          ? "ascending"
                          : sorted === "desc"
                            ? "descending"
                            : "none"
                        : undefined
                    }
                  >
                    {header.column.getCanSort() ? (
                      <button
                        type="button"
                        className="sort-button"
                        onClick={header.column.getToggleSortingHandler()}
                        title={`Sort by ${column.label ?? String(column.header)}`}
                      >
                        {headerText}
                        <span className="sort-mark" aria-hidden="true">
                          {sorted === "asc" ? "▲" : sorted === "desc" ? "▼" : "↕"}
                        </span>
                      </button>
                    ) : (
                      headerText
                    )}
                  </th>
                );
              })}
            </tr>
          ))}
        </thead>
        <tbody>
          {rows === undefined ? (
            <tr className="data-table-state">
              <td colSpan={columns.length}>
                <LoadingState {...(loadingLabel ? { label: loadingLabel } : {})} />
              </td>
            </tr>
          ) : rows.length === 0 ? (
            <tr className="data-table-state">
              <td colSpan={columns.length}>
                <EmptyState title={empty.title}>{empty.body}</EmptyState>
              </td>
            </tr>
          ) : (
            table.getRowModel().rows.map((tableRow) => {
              const row = tableRow.original;
              const key = tableRow.id;
              const detailsId = `${baseId}-details-${tableRow.index}`;
              const detailsContent = details?.(row) ?? null;
              const open = openDetails.has(key);
              const context: DataTableRowContext = {
                detailsOpen: open,
                detailsId,
                toggleDetails: () =>
                  setOpenDetails((current) => {
                    const next = new Set(current);
                    if (next.has(key)) next.delete(key);
                    else next.add(key);
                    return next;
                  }),
              };
              return (
                <Fragment key={key}>
                  <tr
                    className={rowClassName?.(row)}
                    aria-current={rowCurrent?.(row) ? "true" : undefined}
                    aria-label={rowLabel?.(row)}
                  >
                    {columns.map((column) => {
                      const content = column.cell(row, context);
                      const dataLabel =
                        column.hideHeader || column.actions ? undefined : (column.label ?? textOf(column.header));
                      return column.rowHeader ? (
                        <th key={column.id} scope="row" className={cellClass(column, "body")}>
                          {content}
                        </th>
                      ) : (
                        <td key={column.id} className={cellClass(column, "body")} data-label={dataLabel}>
                          {content}
                        </td>
                      );
                    })}
                  </tr>
                  {detailsContent !== null ? (
                    <tr id={detailsId} className="row-details" hidden={!open}>
                      <td colSpan={columns.length}>{detailsContent}</td>
                    </tr>
                  ) : null}
                </Fragment>
              );
            })
          )}
        </tbody>
      </table>
    </TableScroller>
  );
}

function normalizeSortValue(value: SortValue | null | undefined): SortValue | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === "number" && Number.isNaN(value)) return undefined;
  // Text sorts case-insensitively, as a reader expects ("ada" beside "Ada").
  return typeof value === "string" ? value.toLocaleLowerCase() : value;
}

function cellClass<Row>(column: DataColumn<Row>, where: "head" | "body"): string | undefined {
  const classes = [
    column.numeric ? "cell-number" : "",
    column.actions ? "cell-actions" : "",
    column.nowrap ? "cell-nowrap" : "",
    where === "body" ? (column.className ?? "") : "",
  ].filter(Boolean);
  return classes.length > 0 ? classes.join(" ") : undefined;
}

function textOf(node: ReactNode): string | undefined {
  return typeof node === "string" || typeof node === "number" ? String(node) : undefined;
}

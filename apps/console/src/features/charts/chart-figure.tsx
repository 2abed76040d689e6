import { useId, type ReactNode } from "react";

/**
 * A chart with its title and its text summary (what the chart shows, in
 * words). Without data it says so instead of drawing empty axes.
 */
export function ChartFigure({
  title,
  summary,
  hasData,
  emptyText = "No data in this range.",
  headingLevel = 3,
  actions,
  plotHeight,
  children,
}: {
  title: string;
  summary: string;
  hasData: boolean;
  emptyText?: string;
  headingLevel?: 2 | 3;
  /** Controls that change what the chart shows (e.g. which percentile). */
  actions?: ReactNode;
  /** The plot's height in px when it depends on the data (bar charts); CSS gives the default. */
  plotHeight?: number;
  children: ReactNode;
}) {
  const id = useId();
  const Heading = headingLevel === 2 ? "h2" : "h3";
  return (
    <figure className="chart-figure" aria-labelledby={`${id}-title`} aria-describedby={`${id}-summary`}>
      <div className="chart-head">
        <Heading id={`${id}-title`} className="chart-title">
          {title}
        </Heading>
        {actions}
      </div>
      {hasData ? (
        <div className="chart-plot" style={plotHeight ? { height: plotHeight } : undefined}>
          {children}
        </div>
      ) : (
        <p className="chart-empty">{emptyText}</p>
      )}
      <figcaption id={`${id}-summary`} className="chart-summary">
        {summary}
      </figcaption>
    </figure>
  );
}

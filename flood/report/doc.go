// Package report renders run records (package flood/record) for people: the
// live line fed by the engine's per-second record.Progress (Live), the final
// text table (WriteTable), the ladder's table (WriteLadder), and the
// Markdown and self-contained HTML pages with SVG plots (WriteMarkdown,
// WriteHTML). It computes nothing a gate or a comparison decides on: those
// live in record, so what is printed is what was judged.
package report

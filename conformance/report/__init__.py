"""The report: built from rows, written as JSON, Markdown and HTML, diffed, and read for findings and snapshots."""

"""Textual building blocks the views share: rows drawn as segment lines
(``line``), line views that cache drawn lines (``lines_view``), and scrolling
rows views with a cursor (``rows_view``)."""

"""Textual building blocks the views share: rows drawn as segment lines
(``line``), line views that cache drawn lines (``lines_view``), scrolling rows
views with a cursor (``rows_view``) and jobs run off the app thread
(``background``)."""

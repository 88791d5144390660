"""One module per view of a snapshot (top functions, call tree, callers,
flame graph, diagnostics, threads) and ``navigation`` between them."""

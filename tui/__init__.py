"""bpftop above the kernel and the symbolizer, in rooms that import one way.

- ``model``: the pure call-tree model (snapshots, node store, time modes,
  baseline, derived views). Imports nothing from the rooms below.
- ``formats``: saved profiles and their file formats (folded, speedscope,
  pprof, SVG flame graph) and writing files.
- ``collect``: the collector thread and what it keeps beside the profile
  (targets, process facts, counters, probe profiles, unwind feed), and the
  snapshot-source protocol. No Textual.
- ``widgets``: Textual building blocks: segment lines, cached line views,
  rows views, background jobs.
- ``views``: one module per view (top, call tree, callers, flame graph,
  diagnostics, threads) and navigation between them.
- ``app``: the Textual app: snapshot mailbox, header, key bar, help, probe
  dialog.
- ``cli``: the ``bpftop`` command: arguments, live, record, view and diff.

Only ``widgets``, ``views`` and ``app`` import Textual; ``scripts/lint.sh``
checks these rules with import-linter (``[tool.importlinter]`` in
pyproject.toml).
"""

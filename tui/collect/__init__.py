"""Collection above ``bpf/`` and ``symbols/``: the collector thread and its helpers.

The collector drains the sampler each tick, symbolizes new stacks, folds
them into the model and posts immutable snapshots to a ``SnapshotSource``
callback. Beside it: stacks (each distinct stack symbolized once), targets
(launching and following processes), process facts (process_watch) and
counters, probe profiles, probe completion, the unwind-table feed, and the
snapshot-source protocols (snapshot_source) with the one-snapshot
StaticSource. No Textual.
"""

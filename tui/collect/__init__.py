"""Collection above ``bpf/`` and ``symbols/``: the collector thread and its helpers.

The collector drains the sampler each tick, symbolizes new stacks, folds
them into the model and posts immutable snapshots to a ``SnapshotSource``
callback. Beside it: targets (launching and following processes), process
facts and counters, probe profiles, probe completion and the unwind-table
feed. No Textual.
"""

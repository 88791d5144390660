"""The pure model: call tree, hot-function table, snapshots and folded output.

No Textual import anywhere below here; everything the app renders is an
immutable value built here by the collector thread.
"""

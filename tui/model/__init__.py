"""The pure model: call tree, snapshots, time modes, baseline and derived views.

No Textual import and no file I/O anywhere below here; everything the app
renders is an immutable value built here by the collector thread.
"""

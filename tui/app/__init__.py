"""The Textual app: the snapshot mailbox, background jobs, header, key bar,
help and probe dialog. It composes the views in ``tui.views``."""

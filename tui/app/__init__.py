"""The Textual app: the snapshot mailbox, header, key bar, help and probe
dialog. It composes the views in ``tui.views``."""

"""The Textual app (``app``): the snapshot mailbox (``source_app``), the
switcher that holds the views of ``tui.views`` (``view_switcher``), the keys
and their help (``keys``, ``help``, ``key_bar``), the header, the probe
dialog and the terminal driver."""

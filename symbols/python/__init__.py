"""CPython seen from outside: finding a process's interpreter and its layout
per version (``runtime``, ``layout``, ``tls``, ``eval_loop``), and naming
what the kernel's Python walker records (``code``, ``objects``, ``threads``)."""

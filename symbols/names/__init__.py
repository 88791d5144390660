"""Function names for display: C++ and Rust demangling (``demangle``, the Rust
grammar in ``rust``) and perf's short C++ names (``short``)."""

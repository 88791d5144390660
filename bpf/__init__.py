"""The kernel side of bpftop: the BPF program, probes, and draining its maps.

Nothing here imports ``bpftop.symbols`` or ``bpftop.tui``; what leaves this
package is a :class:`~bpftop.bpf.raw.RawTick` of plain integers.
"""

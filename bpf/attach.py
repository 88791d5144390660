"""Attaching one resolved probe (a :class:`Plan`) to the loaded program, and detaching it.

Every probe kind has its handler in the one compiled program, loaded once per
handler slot (0 and 1; the active slot counts, the other is muted), so
attaching is only perf_event_open / uprobe / tracepoint calls: no compile.
An :class:`Attachment` remembers exactly what it attached (uprobe event
names included) and detaches all of it; a failure half-way detaches what was
already attached before raising. Uprobes go through
:func:`bpftop.bpf.libbcc.attach_uprobe`, which gives a USDT probe's semaphore
to the kernel (raised while attached, lowered when detached); attach and
detach hold :data:`~bpftop.bpf.libbcc.LIBBCC_LOCK`.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from bpftop.bpf.capture import capture_stderr
from bpftop.bpf.libbcc import LIBBCC_LOCK, attach_uprobe
from bpftop.bpf.probes import KINDS, Attach, KindRule
from bpftop.bpf.resolve import Plan, UnsupportedProbeError, kprobes_available, site_files


def handler(name: bytes, slot: int) -> bytes:
    """The copy of a handler that counts while ``slot`` is active."""
    return name + b"_1" if slot else name


COMPILED_HANDLERS = tuple(
    dict.fromkeys(
        (name, rule.program.value)
        for rule in KINDS.values()
        if not rule.one_copy
        for name in (rule.handler, rule.return_handler)
        if name
    )
)
"""Slot 0's handlers, with their program types' names (attributes of bcc.BPF).
Each has a slot-1 copy made from its instructions (bpf/retarget.py)."""


class Attachment:
    """One probe attached to a loaded BCC program."""

    def __init__(self, bpf: Any, plan: Plan, slot: int = 0) -> None:
        self.plan = plan
        self.slot = slot
        self.files = site_files(plan.sites)  # what the sites name as attached
        self._bpf = bpf
        self._uprobe_events: list[bytes] = []
        self._attached = False
        try:
            with LIBBCC_LOCK, capture_stderr():  # libbcc's own lines: the error below says it
                self._attach()
        except Exception as exc:
            self.detach()
            if isinstance(exc, UnsupportedProbeError):
                raise
            raise UnsupportedProbeError(
                f"cannot attach {plan.spec}: {exc}", "check the spec and dmesg"
            ) from None

    @property
    def attached(self) -> bool:
        return self._attached

    def conflicts(self, plan: Plan) -> bool:
        """Would ``plan`` attach something this attachment holds (BCC keys them)?"""
        mine = self.plan
        if mine.perf_type >= 0 and (mine.perf_type, mine.perf_config) == (
            plan.perf_type,
            plan.perf_config,
        ):
            return True
        if mine.tracepoint and mine.tracepoint == plan.tracepoint:
            return True
        if mine.kernel_function and mine.kernel_function == plan.kernel_function:
            return True
        sites = {(s.path, s.address, s.pid) for s in mine.sites}
        return any((s.path, s.address, s.pid) in sites for s in plan.sites)

    def _fn(self, rule: KindRule, name: bytes = b"") -> bytes:
        """The copy of the rule's handler (or of ``name``) that counts for this slot."""
        if rule.one_copy:
            return rule.handler
        return handler(name or rule.handler, self.slot)

    def _attach(self) -> None:
        plan, bpf, rule = self.plan, self._bpf, self.plan.spec.rule
        self._attached = True
        if rule.attach is Attach.PERF_EVENT:
            rate = {"sample_freq" if rule.by_frequency else "sample_period": plan.spec.number}
            bpf.attach_perf_event(
                ev_type=plan.perf_type, ev_config=plan.perf_config, fn_name=self._fn(rule), **rate
            )
        elif rule.attach is Attach.TRACEPOINT:
            bpf.attach_tracepoint(tp=plan.tracepoint.encode(), fn_name=self._fn(rule))
        elif rule.attach is Attach.KERNEL_FUNCTION:
            self._attach_kprobe(rule)
        else:
            self._attach_sites(rule)

    def _attach_kprobe(self, rule: KindRule) -> None:
        if not kprobes_available():  # checked at resolve time too; the kernel may lack them
            raise UnsupportedProbeError(
                "kprobes are not available: this kernel was built without CONFIG_KPROBES",
                "use tracepoint: probes on this kernel",
            )
        event = self.plan.kernel_function.encode()
        if rule.at_return:
            self._bpf.attach_kretprobe(event=event, fn_name=self._fn(rule))
        else:
            self._bpf.attach_kprobe(event=event, fn_name=self._fn(rule))

    def _attach_sites(self, rule: KindRule) -> None:
        bpf, events = self._bpf, self._uprobe_events
        for site in self.plan.sites:
            path = site.path.encode()
            try:
                if rule.return_handler:
                    entry, ret = self._fn(rule), self._fn(rule, rule.return_handler)
                    events.append(attach_uprobe(bpf, path, site.address, entry, site.pid))
                    events.append(
                        attach_uprobe(bpf, path, site.address, ret, site.pid, retprobe=True)
                    )
                else:
                    fn, semaphore = self._fn(rule), site.ref_ctr_offset
                    events.append(
                        attach_uprobe(
                            bpf, path, site.address, fn, site.pid, ref_ctr_offset=semaphore
                        )
                    )
            except OSError:
                if site.pid > 0 and _exited(site.pid):
                    continue  # the process exited before its probe: nothing to count there
                raise

    def detach(self) -> None:
        """Detach everything this attachment attached; safe to call twice."""
        with LIBBCC_LOCK, capture_stderr():
            self._detach()

    def _detach(self) -> None:
        if not self._attached:
            return
        self._attached = False
        plan, bpf = self.plan, self._bpf
        for ev in self._uprobe_events:
            if ev in bpf.uprobe_fds:
                bpf.detach_uprobe_event(ev)
        self._uprobe_events.clear()
        if plan.perf_type >= 0 and (plan.perf_type, plan.perf_config) in bpf.open_perf_events:
            bpf.detach_perf_event(ev_type=plan.perf_type, ev_config=plan.perf_config)
        if plan.tracepoint and plan.tracepoint.encode() in bpf.tracepoint_fds:
            bpf.detach_tracepoint(plan.tracepoint.encode())
        if plan.kernel_function:
            for detach in (bpf.detach_kprobe, bpf.detach_kretprobe):
                with contextlib.suppress(Exception):  # not attached
                    detach(plan.kernel_function.encode())


def _exited(pid: int) -> bool:
    """Has process ``pid`` exited (gone, or a zombie: its image is unmapped)?"""
    try:
        os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return True
    return False

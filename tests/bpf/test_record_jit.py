"""`bpftop record` on a process running JIT code: without a perf map it says
in one line what to turn on; with one, the code is named and nothing is said.
Against the real kernel, with a program that spins in anonymous executable
memory (built here by gcc). A stack whose walk lands in the heap (a wrong
return address, as in Debian's sqlite3 without frame pointers) is no JIT code
and gets no such hint."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from tests.bpf.test_record import parse_folded
from tests.bpf.test_targets import record

# Copies a spin loop (`jmp .`) into anonymous executable memory and runs it;
# with the argument "map" it first describes it in /tmp/perf-PID.map.
JIT_SPIN = r"""
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
int main(int argc, char **argv) {
    unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED) return 1;
    code[0] = 0xeb; code[1] = 0xfe;
    if (argc > 1 && strcmp(argv[1], "map") == 0) {
        char path[64];
        snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
        FILE *map = fopen(path, "w");
        if (!map) return 1;
        fprintf(map, "%lx 2 LazyCompile:*spin app.js:1\n", (unsigned long)code);
        fclose(map);
    }
    ((void (*)(void))code)();
    return 0;
}
"""


# Spins in main with its frame pointer aimed at a heap block whose "return
# address" points back into the heap: every walk of its stack (the CFA rule of
# a frame-pointer main is rbp-based; a frame-pointer walk reads the same slot)
# finds a caller in non-executable memory.
HEAP_FRAME = r"""
#include <stdint.h>
#include <stdlib.h>
int main(void) {
    uint64_t *frame = calloc(64, sizeof *frame);
    if (!frame) return 1;
    frame[1] = (uint64_t)(frame + 32);  /* frame[0], the caller's rbp: none */
    __asm__ volatile("mov %0, %%rbp\n1: jmp 1b" : : "r"(frame) : "memory");
    return 0;
}
"""


def _build(folder: Path, name: str, source: str, *flags: str) -> Path:
    (folder / f"{name}.c").write_text(source)
    out = folder / name
    subprocess.run(["gcc", "-O1", *flags, "-o", str(out), str(folder / f"{name}.c")], check=True)
    return out


@pytest.fixture(scope="module")
def jit_spin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build(tmp_path_factory.mktemp("jit"), "jit_spin", JIT_SPIN)


@pytest.mark.parametrize("with_map", [False, True], ids=["no-perf-map", "perf-map"])
def test_record_says_what_to_turn_on_for_jit_code(
    jit_spin: Path, tmp_path: Path, with_map: bool
) -> None:
    target = subprocess.Popen([str(jit_spin), *(["map"] if with_map else [])])
    out = tmp_path / "jit.folded"
    try:
        time.sleep(0.2)
        result = record(out, "-p", str(target.pid), "-F", "199", "-d", "2")
    finally:
        target.kill()
        target.wait()
        Path(f"/tmp/perf-{target.pid}.map").unlink(missing_ok=True)
    stacks = parse_folded(out)
    total = sum(stacks.values())
    named = sum(n for s, n in stacks.items() if any("LazyCompile:*spin" in f for f in s))
    hints = [line for line in result.stderr.splitlines() if "perf map" in line]
    print(f"with_map={with_map}: {named} of {total} samples named; stderr: {hints}")
    assert total > 50, result.stderr
    if with_map:
        assert named >= 0.95 * total, stacks.most_common(3)
        assert not hints, result.stderr
        return
    assert named == 0
    assert len(hints) == 1, result.stderr
    (line,) = hints
    share = float(line.split("% of the samples")[0].rsplit(" ", 1)[-1])
    assert share >= 95.0, line
    for flag in ("node --perf-basic-prof", "python3 -X perf", "-XX:+DumpPerfMapAtExit"):
        assert flag in line, line


def test_a_walk_into_the_heap_is_no_jit_code(tmp_path: Path) -> None:
    heap_frame = _build(tmp_path, "heap_frame", HEAP_FRAME, "-fno-omit-frame-pointer")
    target = subprocess.Popen([str(heap_frame)])
    out = tmp_path / "heap.folded"
    try:
        time.sleep(0.2)
        # Frame pointers only, early samples and BPF's alike: the .eh_frame walk
        # would not follow the planted frame pointer into the heap.
        result = record(out, "-p", str(target.pid), "-F", "199", "-d", "2", "--unwind", "fp")
    finally:
        target.kill()
        target.wait()
    stacks = parse_folded(out)
    total = sum(stacks.values())
    in_heap = sum(n for s, n in stacks.items() if any(f.startswith("[heap]+0x") for f in s))
    print(f"{in_heap} of {total} stacks with a [heap] frame; stderr: {result.stderr!r}")
    assert total > 50, result.stderr
    assert in_heap >= 0.9 * total, stacks.most_common(3)  # the walk did land in the heap
    assert "perf map" not in result.stderr and "JIT" not in result.stderr, result.stderr

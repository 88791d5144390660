"""The compiled program kept on disk (bpf/program_image.py), against the real kernel.

A first load compiles and writes the image; the next loads it without BCC's
compile and samples the same; an image the kernel refuses, or one another
user could have written, is never used.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

import bpftop.bpf.program as program
from bpftop.base.errors import BpfLoadError
from bpftop.bpf.program import CpuSampler
from bpftop.bpf.program_image import DIR_ENV, ImageCache, ProgramImage


@pytest.fixture
def image_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "programs"
    monkeypatch.setenv(DIR_ENV, str(folder))
    return folder


def _no_compile(*_: object) -> ProgramImage:
    raise AssertionError("compiled although the image was on disk")


def _counted_samples(sampler: CpuSampler, pid: int, seconds: float) -> int:
    sampler.set_targets([pid])
    sampler.start()
    time.sleep(seconds)
    return sampler.drain().total_samples


def test_first_load_compiles_and_the_next_loads_the_image(
    image_dir: Path, workloads: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with CpuSampler(999, unwind="auto") as first:
        first.load()
        assert first.compiled
    images = list(image_dir.glob("*.image"))
    assert len(images) == 1
    monkeypatch.setattr(program, "compile_image", _no_compile)
    target = subprocess.Popen([str(workloads / "demo"), "3"], stdout=subprocess.DEVNULL)
    try:
        with CpuSampler(999, unwind="auto") as second:
            started = time.process_time()
            second.load()
            load_cpu_s = time.process_time() - started
            assert not second.compiled
            samples = _counted_samples(second, target.pid, 0.5)
    finally:
        target.kill()
        target.wait()
    assert samples > 200  # 999 Hz on a busy target for 0.5 s
    assert load_cpu_s < 0.5  # a compile alone takes 0.6-1.2 CPU-s


def test_an_image_the_kernel_refuses_is_compiled_again(image_dir: Path) -> None:
    with CpuSampler(99, unwind="auto") as first:
        first.load()
    (path,) = image_dir.glob("*.image")
    cache = ImageCache(image_dir)
    image = cache.read(path.stem)
    assert image is not None
    broken = dict(image.functions)
    broken[b"on_cpu_sample"] = b"\xff" * 16  # no such instruction
    cache.write(path.stem, ProgramImage(broken, image.maps, image.license, image.kern_version))
    with CpuSampler(99, unwind="auto") as second:
        second.load()
        assert second.compiled
    again = cache.read(path.stem)
    assert (
        again is not None and again.functions[b"on_cpu_sample"] == image.functions[b"on_cpu_sample"]
    )


def test_an_image_others_could_write_is_not_read(image_dir: Path) -> None:
    with CpuSampler(99, unwind="fp") as first:
        first.load()
    (path,) = image_dir.glob("*.image")
    os.chmod(path, 0o666)
    assert ImageCache(image_dir).read(path.stem) is None
    link = image_dir / "elsewhere.image"
    link.symlink_to(path)
    assert ImageCache(image_dir).read("elsewhere") is None
    with CpuSampler(99, unwind="fp") as second:
        second.load()
        assert second.compiled


def test_a_program_that_does_not_compile_still_says_why(image_dir: Path, tmp_path: Path) -> None:
    source = tmp_path / "broken.bpf.c"
    source.write_text("int on_cpu_sample(void *ctx) { return undeclared; }\n")
    with CpuSampler(99, unwind="fp", source=source) as sampler, pytest.raises(BpfLoadError) as err:
        sampler.load()
    assert "undeclared" in str(err.value)
    assert not list(image_dir.glob("*.image"))

"""Function names offered for a uprobe (completion, a missing symbol's near
matches): each once, without a library's internal aliases of a function."""

from __future__ import annotations

import os

import pytest

from bpftop.bpf.probes import ProbeSpecError, parse_spec
from bpftop.bpf.resolve import public_names, resolve

GLIBC_LIKE = [
    ("malloc", 1),
    ("__libc_malloc", 1),
    ("__GI___libc_malloc", 1),
    ("malloc", 1),
    ("mallopt", 2),
    ("__mallopt", 2),
    ("_int_malloc", 3),  # its own function, no public name
    ("_dl_start", 4),
    ("__dl_start_alias", 4),
]


def test_one_name_per_function_the_most_public() -> None:
    assert public_names(GLIBC_LIKE) == ["_dl_start", "_int_malloc", "malloc", "mallopt"]
    assert public_names(GLIBC_LIKE, "mall") == ["malloc", "mallopt"]


def test_an_underscore_typed_asks_for_every_name() -> None:
    assert public_names(GLIBC_LIKE, "__") == [
        "__GI___libc_malloc",
        "__dl_start_alias",
        "__libc_malloc",
        "__mallopt",
    ]


def test_a_missing_libc_function_lists_near_names_once_without_aliases() -> None:
    with pytest.raises(ProbeSpecError) as caught:
        resolve(parse_spec("uprobe:c:mallocc"), [os.getpid()])
    message = str(caught.value)
    assert "no function 'mallocc'" in message and "malloc" in message
    near = message.rsplit("did you mean:", 1)[1]
    names = [n.strip(" )") for n in near.split(",")]
    assert "malloc" in names
    assert len(names) == len(set(names)), message
    assert not any(n.startswith("__") for n in names), message

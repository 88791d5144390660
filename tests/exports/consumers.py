"""The real consumers of our exports, driven from tests.

- ``speedscope_schema()``: the JSON schema shipped in speedscope's npm package
  (scripts/setup.sh installs it under build/node).
- ``go_pprof_raw(path)``: ``go tool pprof -raw`` parsed into stacks of
  function names (root-first, inlined frames expanded) with their counts.
- ``Chromium``: headless Debian chromium driven over the DevTools protocol
  (websocket-client), for loading an SVG and clicking, hovering, searching.

A missing consumer fails the test with what to install; it never skips.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import websocket

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "build/node/node_modules/speedscope/dist/release/file-format-schema.json"


def need(tool: str, package: str) -> str:
    found = shutil.which(tool)
    if found is None:
        pytest.fail(f"'{tool}' is missing: install Debian's {package} (./scripts/setup.sh does)")
    return found


def speedscope_schema() -> dict[str, Any]:
    if not SCHEMA.is_file():
        pytest.fail(f"{SCHEMA} is missing: ./scripts/setup.sh installs speedscope from npm")
    schema: dict[str, Any] = json.loads(SCHEMA.read_text())
    return schema


_SAMPLE = re.compile(r"\s*(\d+)(?:\s+\d+)*:\s*([\d ]*)$")
_LOCATION = re.compile(r"\s*(\d+): 0x[0-9a-f]+ (?:M=\d+ )?(\S+) ")
_INLINED = re.compile(r"\s+(\S+) \S*:\d+ s=\d+")


def go_pprof_raw(path: Path) -> tuple[Counter[tuple[str, ...]], str]:
    """Stacks (root-first function names) and counts as Go's pprof reads them, and its text."""
    go = need("go", "golang-go")
    home = tempfile.mkdtemp(prefix="gopprof-")
    env = {**os.environ, "HOME": home, "GOCACHE": f"{home}/cache", "PPROF_TMPDIR": home}
    done = subprocess.run(
        [go, "tool", "pprof", "-raw", str(path)], capture_output=True, text=True, env=env,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, f"go tool pprof failed: {done.stderr}"
    text = done.stdout
    samples_part, _, rest = text.partition("\nLocations\n")
    locations_part = rest.partition("\nMappings\n")[0]
    names: dict[str, list[str]] = {}  # location id -> its lines' functions, leaf first
    current = ""
    for line in locations_part.splitlines():
        found = _LOCATION.match(line)
        if found:
            current = found.group(1)
            names[current] = [found.group(2)]
        elif (inl := _INLINED.match(line)) and current:
            names[current].append(inl.group(1))
    stacks: Counter[tuple[str, ...]] = Counter()
    for line in samples_part.split("Samples:", 1)[-1].splitlines():
        found = _SAMPLE.match(line)
        if not found or not found.group(2).strip():
            continue
        leaf_first = [n for loc in found.group(2).split() for n in names[loc]]
        stacks[tuple(reversed(leaf_first))] += int(found.group(1))
    return stacks, text


class Chromium:
    """One headless chromium with one page, spoken to over the DevTools protocol."""

    def __init__(self) -> None:
        binary = need("chromium", "chromium")
        self.profile_dir = tempfile.mkdtemp(prefix="chromium-")
        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--remote-debugging-port=0", f"--user-data-dir={self.profile_dir}",
             "--window-size=1300,900", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        port = self._port()
        deadline = time.monotonic() + 30
        while True:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as r:
                pages = [t for t in json.load(r) if t.get("type") == "page"]
            if pages or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert pages, "chromium opened no page"
        self.ws = websocket.create_connection(pages[0]["webSocketDebuggerUrl"], timeout=30)
        self._id = 0
        self.events: list[dict[str, Any]] = []
        self.replies: dict[int, dict[str, Any]] = {}

    def _port(self) -> int:
        assert self.proc.stderr is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            found = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
            if found:
                return int(found.group(1))
            if not line and self.proc.poll() is not None:
                break
        raise AssertionError(f"chromium did not start (exit {self.proc.poll()})")

    def send(self, method: str, **params: Any) -> int:
        """Send a command without waiting for its reply (a click that opens a dialog
        is only answered once the dialog is closed)."""
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        return self._id

    def reply(self, command_id: int) -> dict[str, Any]:
        while command_id not in self.replies:
            self._receive()
        message = self.replies.pop(command_id)
        assert "error" not in message, message["error"]
        result: dict[str, Any] = message["result"]
        return result

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        return self.reply(self.send(method, **params))

    def _receive(self) -> None:
        message = json.loads(self.ws.recv())
        if "id" in message:
            self.replies[message["id"]] = message
        else:
            self.events.append(message)

    def wait_event(self, method: str, timeout_s: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for event in self.events:
                if event.get("method") == method:
                    self.events.remove(event)
                    return event
            self._receive()
        raise AssertionError(f"no {method} event")

    def js(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def mouse(self, kind: str, x: float, y: float, wait: bool = True) -> int:
        params: dict[str, Any] = {"type": kind, "x": x, "y": y}
        if kind != "mouseMoved":
            params.update(button="left", clickCount=1)
        sent = self.send("Input.dispatchMouseEvent", **params)
        if wait:
            self.reply(sent)
        return sent

    def close(self) -> None:
        self.ws.close()
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.profile_dir, ignore_errors=True)

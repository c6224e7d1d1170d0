#!/usr/bin/env python3
"""The Go toolchain the franz-go clients are built with.

    python tools/go_toolchain.py        # prints the path of a usable `go`

franz-go v1.22 needs Go 1.26 (its go.mod says so). The machine's `go` is used
when it is at least that; otherwise (none, or Debian 12's 1.19) Go's own
toolchain module -- the zip `go` itself downloads when a go.mod asks for a
newer version -- is fetched once from the Go module proxy into .cache/go/ and
used from there. `make clients` runs this, so the download happens at install
time and a second run finds it in place.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / ".cache" / "go"
REQUIRED = (1, 26)
TOOLCHAIN = "go1.26.8"
PROXY = os.environ.get("GOPROXY", "https://proxy.golang.org").split(",")[0].rstrip("/")
if PROXY in ("direct", "off"):
    PROXY = "https://proxy.golang.org"


class GoUnavailable(RuntimeError):
    pass


def _arch() -> str:
    machine = platform.machine().lower()
    return {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(
        machine, machine
    )


def version_of(go: str) -> tuple[int, int] | None:
    """(major, minor) that `go version` reports, or None if it cannot run."""
    try:
        out = subprocess.run([go, "version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"go(\d+)\.(\d+)", out)
    return (int(match.group(1)), int(match.group(2))) if match else None


def cached_go() -> Path:
    return CACHE / TOOLCHAIN / "bin" / "go"


def go_binary() -> str:
    """A `go` of at least REQUIRED: the machine's, else the cached toolchain
    (downloaded now if it is not there yet). GoUnavailable if neither works."""
    machine = shutil.which("go")
    if machine and (version_of(machine) or (0, 0)) >= REQUIRED:
        return machine
    local = cached_go()
    if not local.exists():
        _download()
    if (version_of(str(local)) or (0, 0)) < REQUIRED:
        raise GoUnavailable(f"{local} does not run as Go {TOOLCHAIN}")
    return str(local)


def _download() -> None:
    name = f"v0.0.1-{TOOLCHAIN}.linux-{_arch()}"
    url = f"{PROXY}/golang.org/toolchain/@v/{name}.zip"
    print(f"go_toolchain: Go {'.'.join(map(str, REQUIRED))}+ not on PATH; fetching {url}")
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        archive = Path(tmp) / "toolchain.zip"
        try:
            with urllib.request.urlopen(url, timeout=600) as response, open(archive, "wb") as out:
                shutil.copyfileobj(response, out)
        except OSError as e:
            raise GoUnavailable(f"cannot download the Go toolchain from {url}: {e}") from e
        prefix = f"golang.org/toolchain@{name}/"
        unpacked = Path(tmp) / TOOLCHAIN
        with zipfile.ZipFile(archive) as z:
            for info in z.infolist():
                if not info.filename.startswith(prefix) or info.is_dir():
                    continue
                target = unpacked / info.filename[len(prefix) :]
                target.parent.mkdir(parents=True, exist_ok=True)
                with z.open(info) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                mode = (info.external_attr >> 16) & 0o777
                if mode:
                    target.chmod(mode)
        # Renamed into place whole: a run that stopped half-way leaves nothing.
        os.replace(unpacked, CACHE / TOOLCHAIN)


def main() -> int:
    try:
        print(go_binary())
    except GoUnavailable as e:
        print(f"go_toolchain: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

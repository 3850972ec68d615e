"""deploy/nginx.conf rendered for loopback and a temporary directory, and a live nginx running
it in front of a live server, stopped by PID; for the proxy's tests and benchmark.

Rendering changes what ties the file to a machine (the listen address, the API's address,
the paths of the pid file, logs, cache and temporary files, the worker count, the ``user``
line) and nothing else, so the caching rules that run are the committed ones. nginx runs in
the foreground (``daemon off``) under whoever starts it: as root its workers are nginx's
default unprivileged user, which may only pass through the temporary directory to the
cache and temporary-file directories nginx creates for it there.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from server.dev.local_engine import free_port
from testing.live_server import wait_until_answers

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "deploy" / "nginx.conf"
START_TIMEOUT = 20.0
# The temporary-file paths of every module Debian's nginx is built with: nginx creates them
# at start-up, under /var/lib/nginx unless told otherwise.
TEMP_PATHS = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
INSTALL_HINT = (
    "run scripts/setup (as root it installs Debian's nginx package) or "
    "`apt-get install nginx`, or point NGINX at an nginx binary"
)
_SAFE_PATH = re.compile(r"[A-Za-z0-9_./-]+")


class NginxError(RuntimeError):
    """nginx is missing, the configuration cannot be rendered, or nginx would not start."""


def find_nginx() -> str | None:
    """The nginx binary: $NGINX, else the one on PATH or Debian's /usr/sbin/nginx (a
    non-root PATH often lacks /usr/sbin)."""
    named = os.environ.get("NGINX")
    if named:
        return named
    found = shutil.which("nginx")
    if found:
        return found
    return "/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None


def render(text: str, *, port: int, upstream: str, root: Path, workers: int = 1) -> str:
    """The configuration ``text`` (deploy/nginx.conf) listening on 127.0.0.1:``port``, proxying
    to ``upstream`` (host:port), with every path under ``root``. NginxError when a line it
    changes is not there exactly once, so a reshaped file fails here rather than running with
    production paths."""
    if not _SAFE_PATH.fullmatch(str(root)):
        raise NginxError(f"{root} is not a path nginx can take unquoted")
    temp = "".join(f"    {name}_temp_path {root}/{name}_temp;\n" for name in TEMP_PATHS)
    changes = [
        # Workers run as whoever starts nginx (as root: nginx's unprivileged default).
        ("user", r"^[ \t]*user[ \t][^;]*;[ \t]*\n", ""),
        # Given on the command line, with `daemon off`.
        ("pid", r"^[ \t]*pid[ \t][^;]*;[ \t]*\n", ""),
        ("worker_processes", r"^([ \t]*worker_processes[ \t]+)[^;]+;", rf"\g<1>{workers};"),
        ("error_log", r"^([ \t]*error_log[ \t]+)\S+", rf"\g<1>{root}/error.log"),
        ("access_log", r"^([ \t]*access_log[ \t]+)\S+", rf"\g<1>{root}/access.log"),
        ("listen", r"^([ \t]*listen[ \t]+)[^;]+;", rf"\g<1>127.0.0.1:{port};"),
        # The upstream's server line ("server {" opens a block and does not match).
        ("upstream server", r"^([ \t]*server[ \t]+)[^\s;{]+", rf"\g<1>{upstream}"),
        ("proxy_cache_path", r"^([ \t]*proxy_cache_path[ \t]+)\S+", rf"\g<1>{root}/cache"),
        ("http block", r"^(http[ \t]*\{[ \t]*\n)", rf"\g<1>{temp}"),
    ]
    for name, pattern, replacement in changes:
        text, count = re.subn(pattern, replacement, text, flags=re.MULTILINE)
        if count != 1:
            raise NginxError(f"{CONFIG.name}: expected one {name} line, found {count}")
    return text


@dataclass(frozen=True, slots=True)
class LiveNginx:
    port: int
    pid: int
    root: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def graphql_url(self) -> str:
        return f"{self.base_url}/graphql"

    @property
    def access_log(self) -> Path:
        return self.root / "access.log"

    @property
    def error_log(self) -> Path:
        return self.root / "error.log"

    def cache_statuses(self) -> Counter[str]:
        """How many requests so far had each cache status (HIT, MISS, ...; "-" for none),
        from the access log's ``cache=`` field."""
        text = self.access_log.read_text() if self.access_log.exists() else ""
        return Counter(re.findall(r" cache=(\S+)", text))


@contextmanager
def live_nginx(
    upstream_port: int, *, workers: int = 1, config: Path = CONFIG
) -> Iterator[LiveNginx]:
    """nginx running ``config`` rendered for a free loopback port, in front of the API on
    ``upstream_port``, until the block ends; ready once /healthz answers through it."""
    binary = find_nginx()
    if binary is None:
        raise NginxError(f"nginx is not installed: {INSTALL_HINT}")
    root = Path(tempfile.mkdtemp(prefix="nginx-"))
    try:
        # Workers started by root run unprivileged and must pass through to their cache.
        root.chmod(0o711)
        port = free_port()
        conf = root / "nginx.conf"
        text = render(
            config.read_text(),
            port=port,
            upstream=f"127.0.0.1:{upstream_port}",
            root=root,
            workers=workers,
        )
        conf.write_text(text)
        command = [
            binary,
            "-p",
            str(root),
            "-c",
            str(conf),
            "-e",
            str(root / "error.log"),
            "-g",
            f"daemon off; pid {root}/nginx.pid;",
        ]
        with (root / "output.log").open("wb") as output:
            process = subprocess.Popen(
                command, cwd=root, stdin=subprocess.DEVNULL, stdout=output, stderr=output
            )
            try:
                _wait_ready(process, root, f"http://127.0.0.1:{port}/healthz")
                yield LiveNginx(port, process.pid, root)
            finally:
                process.terminate()  # SIGTERM: nginx's fast shutdown, workers included
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _wait_ready(process: subprocess.Popen[bytes], root: Path, url: str) -> None:
    wait_until_answers(
        process,
        url,
        START_TIMEOUT,
        what="nginx",
        logs=lambda: _logs(root),
        error=NginxError,
        poll=0.05,
    )


def _logs(root: Path) -> str:
    parts = []
    for name in ("output.log", "error.log"):
        path = root / name
        if path.exists():
            parts.append(path.read_text(errors="replace")[-3000:])
    return "\n".join(parts)

"""Start and stop the shipped shared cache (deploy/varnish/default.vcl: Varnish with the
xkey module) in front of running servers, on loopback, on free ports, stopped by PID: for
the purge test and the freshness benchmark, as ``server.dev.local_broker`` starts Redis.

The configuration is the shipped file with its backends (the part between
``# backends:begin`` and ``# backends:end``) written for the servers given, so what is
tested is what ships. Two listeners, as in production: the shoppers' one (``url``) and the
purge listener (``purge_url``, what PURGE_URLS names). It keeps objects in memory only.
"""

from __future__ import annotations

import re
import tempfile
import time
from pathlib import Path

from server.dev.launched import Launched, find_binary
from server.dev.local_engine import free_port
from server.settings.development import EngineSettings

START_TIMEOUT = 30.0
VCL = Path(__file__).resolve().parents[2] / "deploy" / "varnish" / "default.vcl"
_BACKENDS = re.compile(r"# backends:begin.*?# backends:end\n", re.DOTALL)


class ProxyError(RuntimeError):
    """varnishd is missing or would not start; the message says what to do."""


def find_varnishd() -> str:
    found = find_binary(EngineSettings().varnishd, "varnishd", "/usr/sbin/varnishd")
    if found is None:
        raise ProxyError(
            "varnishd is missing: the purge test and the freshness benchmark run the "
            "shipped Varnish configuration (scripts/setup installs it; Debian: apt-get "
            "install varnish varnish-modules), or set VARNISHD"
        )
    return found


def configuration(backends: list[int], host: str = "127.0.0.1") -> str:
    """The shipped VCL with these servers' ports as its backends, healthy from the start
    and probed on /readyz as the shipped ones are."""
    if not backends:
        raise ValueError("a proxy needs at least one server behind it")
    blocks = []
    for n, port in enumerate(backends, 1):
        blocks.append(
            f"backend api_{n} {{\n"
            f'    .host = "{host}";\n'
            f'    .port = "{port}";\n'
            "    .connect_timeout = 2s;\n"
            "    .first_byte_timeout = 30s;\n"
            '    .probe = { .url = "/readyz"; .interval = 1s; .timeout = 1s;\n'
            "        .window = 3; .threshold = 2; .initial = 2; }\n"
            "}\n"
        )
    adds = "".join(f"    api.add_backend(api_{n});\n" for n in range(1, len(backends) + 1))
    written = "".join(blocks) + f"sub vcl_init {{\n{adds}}}\n"
    shipped = VCL.read_text()
    if not _BACKENDS.search(shipped):
        raise ProxyError(f"{VCL} has lost its '# backends:begin' ... '# backends:end' part")
    return _BACKENDS.sub(lambda _: written, shipped, count=1)


class LocalProxy(Launched):
    """A varnishd in front of ``backends`` (ports on loopback); a context manager."""

    def __init__(self, backends: list[int], *, memory: str = "64m") -> None:
        self.backends = backends
        self.memory = memory
        self.port: int | None = None
        self.purge_port: int | None = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None

    @property
    def url(self) -> str:
        if self.port is None:
            raise ProxyError("the proxy is not running")
        return f"http://127.0.0.1:{self.port}"

    @property
    def purge_url(self) -> str:
        if self.purge_port is None:
            raise ProxyError("the proxy is not running")
        return f"http://127.0.0.1:{self.purge_port}/"

    def start(self, *, port: int | None = None, purge_port: int | None = None) -> LocalProxy:
        binary = find_varnishd()
        self._dir = tempfile.TemporaryDirectory(prefix="varnish-")
        # varnishd reads the file, and its cache process works there, as its own user
        # (varnish's jail, when started as root): nothing here is secret.
        Path(self._dir.name).chmod(0o755)
        vcl = Path(self._dir.name) / "default.vcl"
        vcl.write_text(configuration(self.backends))
        vcl.chmod(0o644)
        for _ in range(3):  # a port picked free can be taken before varnishd binds it
            if self._try_start(binary, vcl, port or free_port(), purge_port or free_port()):
                return self
            if port is not None:
                break
        tail = self._tail()
        self.stop()
        raise ProxyError(f"varnishd did not start:\n{tail}")

    def _try_start(self, binary: str, vcl: Path, port: int, purge_port: int) -> bool:
        assert self._dir is not None
        args = [
            binary,
            "-F",
            "-n",
            str(Path(self._dir.name) / "work"),
            "-a",
            f"127.0.0.1:{port}",
            "-a",
            f"purge=127.0.0.1:{purge_port}",
            "-f",
            str(vcl),
            "-s",
            f"malloc,{self.memory}",
            "-T",
            "none",
        ]
        process = self._spawn(args, "varnish-")
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if process.poll() is not None:
                return False
            if "Child launched OK" in self._tail():
                self.port, self.purge_port = port, purge_port
                return True
            time.sleep(0.05)
        raise ProxyError(f"varnishd did not start within {START_TIMEOUT:.0f} s:\n{self._tail()}")

    def stop(self) -> None:
        self.port = self.purge_port = None
        # The manager stops its child (the cache) on SIGTERM, and then itself.
        self._end(timeout=15)
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

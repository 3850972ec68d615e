"""Secrets kept in files (``JWT_SECRET_FILE``, ``JWT_PREVIOUS_SECRET_FILE``,
``AUTHOR_ID_KEY_FILE``, and the CDNs' API tokens: ``FASTLY_API_TOKEN_FILE``,
``CLOUDFLARE_API_TOKEN_FILE``), read as they are, once, at start. In development the JWT secret's
file is made the first time it is missing: a random secret readable by its owner only.

That is how ``docker compose up`` gets a secret of its own for each data volume instead of
one written in the repository, which anyone could use to mint moderator tokens. Nothing
else is ever made: a missing file of any other secret, or any in production, is an error.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path

# RFC 7518: an HS256 key should have at least 256 bits (the settings' rule for JWT_SECRET).
SECRET_MIN_BYTES = 32
# Where development keeps its secret when none is configured: in the embedded engine's
# DATA_DIR, so that tokens outlive a restart and `comments token` finds it by itself.
DEV_SECRET_NAME = "jwt-secret"


def dev_secret_path(data_dir: Path) -> Path:
    """The development secret's file in ``data_dir`` (DATA_DIR)."""
    return data_dir / DEV_SECRET_NAME


def secret_from_file(
    path: Path,
    *,
    create: bool = True,
    name: str = "JWT_SECRET_FILE",
    min_bytes: int = SECRET_MIN_BYTES,
) -> str:
    """The secret in ``path`` (surrounding whitespace aside); when the file does not exist
    and ``create``, a new random secret written there first (mode 0600, never over a file
    that another process made meanwhile). ``ValueError`` naming the setting ``name`` when it
    cannot be read or made, or is shorter than ``min_bytes`` (a key this project uses
    needs 32; a token another service issued is as long as that service makes it)."""
    try:
        return _read(path, name, min_bytes)
    except FileNotFoundError:
        if not create:
            raise ValueError(f"{name}: {path} does not exist") from None
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Written whole beside it, then linked in place: a process starting at the same time
        # finds either no file or the whole secret, and of two links one wins, both read it.
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise ValueError(f"{name}: cannot create {path}: {exc.strerror}") from exc
    try:
        with os.fdopen(fd, "w", encoding="ascii") as file:  # mkstemp: mode 0600
            file.write(secrets.token_urlsafe(SECRET_MIN_BYTES) + "\n")
            file.flush()
            os.fsync(file.fileno())
        os.link(temp, path)
    except FileExistsError:
        pass
    except OSError as exc:
        raise ValueError(f"{name}: cannot create {path}: {exc.strerror}") from exc
    finally:
        os.unlink(temp)
    return _read(path, name, min_bytes)


def _read(path: Path, name: str, min_bytes: int) -> str:
    try:
        secret = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ValueError(f"{name}: cannot read {path}: {reason}") from exc
    if not secret:
        raise ValueError(f"{name}: {path} is empty")
    if len(secret.encode()) < min_bytes:
        raise ValueError(f"{name}: {path} holds less than {min_bytes} bytes")
    return secret

"""A JWT secret kept in a file (server.secret_file): made once, at random, for its owner
only; read as it is after, by the server and by `comments token` alike."""

from __future__ import annotations

import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jwt
import pytest
from pydantic import ValidationError

from server.cli import main
from server.secret_file import SECRET_MIN_BYTES, secret_from_file
from server.settings import Settings, TokenSettings
from tests.api_helpers import SECRET


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No setting comes from the environment the tests run in."""
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    return monkeypatch


def test_a_missing_file_gets_a_random_secret_for_its_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "volume" / "jwt-secret"
    made = secret_from_file(path)
    assert len(made.encode()) >= SECRET_MIN_BYTES
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    # Kept: the next start reads the same; another volume gets another.
    assert secret_from_file(path) == made
    assert secret_from_file(tmp_path / "other" / "jwt-secret") != made


def test_processes_starting_at_once_share_one_secret(tmp_path: Path) -> None:
    path = tmp_path / "jwt-secret"
    with ThreadPoolExecutor(8) as pool:
        secrets = set(pool.map(lambda _: secret_from_file(path), range(32)))
    assert secrets == {path.read_text().strip()}


def test_a_secret_of_ones_own_is_read_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "jwt-secret"
    path.write_text(f"  {SECRET}\n")
    assert secret_from_file(path) == SECRET


@pytest.mark.parametrize(
    ("content", "reason"), [(b"short\n", "less than 32 bytes"), (b"\xff" * 40, "not UTF-8")]
)
def test_a_file_that_holds_no_usable_secret_is_refused(
    tmp_path: Path, content: bytes, reason: str
) -> None:
    path = tmp_path / "jwt-secret"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=reason):
        secret_from_file(path)


def test_a_file_that_cannot_be_made_is_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(ValueError, match="cannot"):
        secret_from_file(blocker / "jwt-secret")


def test_the_file_is_a_secret_for_a_real_endpoint(
    environment: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "jwt-secret"
    environment.setenv("DYNAMODB_ENDPOINT_URL", "http://dynamodb:8000")
    environment.setenv("JWT_SECRET_FILE", str(path))
    settings = Settings()
    assert settings.jwt_secret == path.read_text().strip()
    assert Settings().jwt_secret == settings.jwt_secret


def test_the_token_command_signs_with_the_files_secret(
    environment: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `docker compose exec api .venv/bin/comments token ann` mints what the server accepts,
    # from the file the server made.
    path = tmp_path / "jwt-secret"
    environment.setenv("JWT_SECRET_FILE", str(path))
    served = Settings().jwt_secret
    assert served is not None
    assert TokenSettings().jwt_secret == served
    assert main(["token", "ann", "--moderator"]) == 0
    token = capsys.readouterr().out.strip()
    claims = jwt.decode(token, served, algorithms=["HS256"])
    assert (claims["sub"], claims["roles"]) == ("ann", ["moderator"])


def test_production_reads_a_secret_file_but_never_makes_one(
    environment: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Each host would make its own, and tokens would hold on one of them only.
    path = tmp_path / "jwt-secret"
    environment.setenv("DYNAMODB_ENDPOINT_URL", "http://dynamodb:8000")
    environment.setenv("PRODUCTION", "true")
    environment.setenv("AUTHOR_ID_KEY", AUTHOR_ID_KEY)
    environment.setenv("JWT_SECRET_FILE", str(path))
    with pytest.raises(ValidationError, match="does not exist"):
        Settings()
    assert not path.exists()
    path.write_text(SECRET)
    assert Settings().jwt_secret == SECRET


# --- every secret setting, from the environment or a file ------------------------------

NEW_SECRET = "the-secret-after-the-rotation-" + "0123456789abcdef" * 2
AUTHOR_ID_KEY = "the-key-of-the-public-author-ids-" + "0123456789abcdef" * 2
# What each secret needs beside it (a previous secret needs a current one and the ids' key).
BESIDE = {"JWT_SECRET": NEW_SECRET, "AUTHOR_ID_KEY": AUTHOR_ID_KEY}
SECRETS = ["JWT_SECRET", "JWT_PREVIOUS_SECRET", "AUTHOR_ID_KEY"]


def _beside(environment: pytest.MonkeyPatch, name: str) -> None:
    environment.setenv("DYNAMODB_ENDPOINT_URL", "http://dynamodb:8000")
    for other, value in BESIDE.items():
        environment.setenv(other, value)
    environment.delenv(name, raising=False)


@pytest.mark.parametrize("name", SECRETS)
def test_every_secret_may_be_kept_in_a_file(
    environment: pytest.MonkeyPatch, tmp_path: Path, name: str
) -> None:
    _beside(environment, name)
    path = tmp_path / name.lower()
    path.write_text(f"{SECRET}\n")
    environment.setenv(f"{name}_FILE", str(path))
    settings = Settings()
    assert getattr(settings, name.lower()) == SECRET
    # Read once, at start: the settings hold the secret, and never show it.
    path.unlink()
    assert getattr(settings.model_copy(), name.lower()) == SECRET
    assert SECRET not in repr(settings)
    assert SECRET not in str(settings)


@pytest.mark.parametrize("name", SECRETS)
def test_a_secret_and_its_file_at_once_are_refused(
    environment: pytest.MonkeyPatch, tmp_path: Path, name: str
) -> None:
    # Which one would win is a guess nobody should have to make.
    _beside(environment, name)
    path = tmp_path / name.lower()
    path.write_text(SECRET)
    environment.setenv(name, SECRET)
    environment.setenv(f"{name}_FILE", str(path))
    with pytest.raises(ValidationError, match=f"{name} and {name}_FILE: set one of them"):
        Settings()


@pytest.mark.parametrize("name", SECRETS)
@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "does not exist"),
        (b"", "cannot read"),
        (b"short\n", "holds less than 32 bytes"),
        (b"\xff" * 40, "not UTF-8 text"),
    ],
    ids=["missing", "folder", "short", "not-text"],
)
def test_a_secret_file_that_cannot_serve_is_one_line_naming_it(
    environment: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    content: bytes | None,
    reason: str,
) -> None:
    _beside(environment, name)
    path = tmp_path / name.lower()
    if content == b"":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    environment.setenv(f"{name}_FILE", str(path))
    # `comments token` reads the secrets as the server does, and makes none.
    assert main(["token", "ann"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {name}_FILE: ")
    assert reason in err
    assert err.count("\n") == 1
    assert content is not None or not path.exists()


def test_production_never_makes_a_file_for_any_secret(
    environment: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    environment.setenv("PRODUCTION", "true")
    for name in SECRETS:
        _beside(environment, name)
        environment.setenv(f"{name}_FILE", str(tmp_path / name.lower()))
        with pytest.raises(ValidationError, match=f"{name}_FILE: .* does not exist"):
            Settings()
        environment.delenv(f"{name}_FILE")
    assert list(tmp_path.iterdir()) == []

"""What every group of settings shares: where the values come from, and list parsing."""

from __future__ import annotations

from pydantic_settings import SettingsConfigDict

# Every variable is the field's name in upper case; unknown variables are ignored.
# hide_input_in_errors: a refused value (a secret among them) never appears in the error.
FROM_ENVIRONMENT = SettingsConfigDict(
    env_prefix="", case_sensitive=False, extra="ignore", hide_input_in_errors=True
)


def split_commas(value: object) -> object:
    """A comma-separated variable as a list (blanks dropped); other values as they are."""
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return value

"""Reading the CloudFormation templates of deploy/ in tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


class CloudFormationLoader(yaml.SafeLoader):  # type: ignore[misc]
    """YAML with CloudFormation's short tags (``!Ref``, ``!Sub``...) read as their long forms."""


def _intrinsic(loader: Any, suffix: str, node: Any) -> dict[str, Any]:
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
        if suffix == "GetAtt":
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    return {suffix if suffix in ("Ref", "Condition") else f"Fn::{suffix}": value}


CloudFormationLoader.add_multi_constructor("!", _intrinsic)


def load_template(path: Path) -> dict[str, Any]:
    """A template as data, its short tags in their long forms (``{"Fn::Sub": ...}``)."""
    loaded: dict[str, Any] = yaml.load(path.read_text(), Loader=CloudFormationLoader)
    return loaded

"""Prices per model, from ``MIMIKIT_PRICES``: a JSON object or the path of a JSON file.

``{"gpt-4o-mini": {"input": 0.15, "output": 0.6}}`` prices a model per million input and output
tokens (in whatever currency the user keeps accounts in). A model without a price is counted
in tokens only.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from mimikit.exceptions import InvalidValue

PER_TOKENS = 1_000_000


class Price(BaseModel):
    """What one million tokens cost, read and written."""

    model_config = ConfigDict(extra="forbid")
    input: float = Field(ge=0)
    output: float = Field(ge=0)


PriceTable = dict[str, Price]
_TABLE = TypeAdapter(PriceTable)


def parse_prices(text: str | None) -> PriceTable:
    """The price table in ``text`` (JSON, or a path to a JSON file; empty: no prices).

    Raises:
        InvalidValue: The file is missing or the JSON is not ``{model: {input, output}}``.
    """
    if not text or not text.strip():
        return {}
    source = text.strip()
    if not source.startswith("{"):
        path = Path(source).expanduser()
        try:
            source = path.read_text(encoding="utf-8")
        except OSError as error:
            raise InvalidValue(f"cannot read the price file {path}: {error.strerror}; give a "
                               'JSON object like {"gpt-4o-mini": {"input": 0.15, "output": 0.6}} '
                               "or the path of a file holding one") from None
    try:
        return _TABLE.validate_python(json.loads(source))
    except (json.JSONDecodeError, ValidationError) as error:
        raise InvalidValue(f"prices must map a model to {{input, output}} per million tokens, "
                           f'e.g. {{"gpt-4o-mini": {{"input": 0.15, "output": 0.6}}}}: '
                           f"{str(error).splitlines()[0]}") from None

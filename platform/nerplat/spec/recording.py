"""What of a spec may be written where others read it: resolved_spec.yaml and plan.json in MLflow.

A `${VAR}` value can be a secret (`${AWS_SECRET_ACCESS_KEY}`), and everyone who can read the
MLflow store reads these files. So a value written with references is recorded as written
(`${VAR}`, `s3://${BUCKET}/x`) unless the spec lists every variable it uses in
`tracking.record_env`; and the text those variables had is masked as `${VAR}` wherever else it
appears in the plan (an absolute dataset path, a tracking URI). Credentials written in a URL
(`https://user:password@host`) are dropped from every recorded string, interpolated or not.
Values shorter than `MIN_MASKED_LENGTH` are not searched for elsewhere (they would match
everywhere); their own value is still recorded as its reference.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from nerplat.credentials import without_credentials
from nerplat.spec.loader import Document, YamlPath

MIN_MASKED_LENGTH = 4


def recorded_data(document: Document, data: Any, safe: Collection[str], path: YamlPath = ()) -> Any:
    """`data` (found at `path` of `document`) with each interpolated value not `safe` replaced by its reference."""
    location = document.locations.get(path)
    interpolation = document.interpolated.get(location.path) if location is not None else None
    if interpolation is not None and not set(interpolation.names) <= set(safe):
        return interpolation.text
    if isinstance(data, dict):
        return {key: recorded_data(document, value, safe, path + (key,)) for key, value in data.items()}
    if isinstance(data, list):
        return [recorded_data(document, value, safe, path + (index,)) for index, value in enumerate(data)]
    return data


def unrecorded_values(document: Document, safe: Collection[str]) -> dict[str, str]:
    """Text of the environment variables the spec used and may not record -> its reference."""
    return {
        value: f"${{{name}}}"
        for name, value in document.environment_values.items()
        if name not in safe and len(value) >= MIN_MASKED_LENGTH
    }


def mask_values(data: Any, values: Mapping[str, str]) -> Any:
    """`data` with every occurrence of a key of `values` in its strings replaced by the value,
    and credentials dropped from URLs."""
    if isinstance(data, str):
        for secret in sorted(values, key=len, reverse=True):
            data = data.replace(secret, values[secret])
        return without_credentials(data)
    if isinstance(data, dict):
        return {key: mask_values(value, values) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [mask_values(value, values) for value in data]
    return data


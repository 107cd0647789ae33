"""Credentials written in URLs, dropped before a URL is recorded, printed or forwarded.

A leaf module: the spec layer masks them in resolved specs and plans, the tracking layer in the
tracking URI it prints and gives to Ray, and neither should import the other for it.
"""

from __future__ import annotations

import re

_URL_CREDENTIALS = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)[^/@\s]+@")
_SECRET_QUERY = re.compile(
    r"(?P<key>[?&](?:[A-Za-z_]*token|[A-Za-z_]*secret|password|key|sig|signature)=)[^&#\s]*", re.IGNORECASE
)


def without_credentials(text: str) -> str:
    """`text` with `user:password@` dropped from URLs and secret-looking query values (token=...) emptied."""
    return _SECRET_QUERY.sub(r"\g<key>", _URL_CREDENTIALS.sub(r"\g<scheme>", text))

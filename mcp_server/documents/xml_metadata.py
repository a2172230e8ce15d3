"""Metadata fields from the XML of a packaged document (OpenDocument's ``meta.xml``, an EPUB's package file)."""

from __future__ import annotations

from collections.abc import Mapping
from xml.etree import ElementTree


def metadata_fields(
    root: ElementTree.Element, paths: Mapping[str, str], namespaces: Mapping[str, str]
) -> dict[str, object]:
    """The metadata fields named in ``paths`` (field -> element path): the first element's text for a field,
    every element's for ``tags``; a ``date`` is cut to its day (``2024-05-01T10:00`` -> ``2024-05-01``)."""
    fields: dict[str, object] = {}
    for key, path in paths.items():
        texts = [e.text.strip() for e in root.iterfind(path, dict(namespaces)) if e.text and e.text.strip()]
        if texts:
            fields[key] = texts if key == "tags" else texts[0][:10] if key == "date" else texts[0]
    return fields

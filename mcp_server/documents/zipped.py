"""Zip-based documents (Office Open XML, OpenDocument, EPUB) checked before any parser inflates them.

A 3 MB ``.docx`` may hold a ``document.xml`` that inflates to a gigabyte. Before a reader
touches the archive, its directory is checked: the members' declared sizes together must
stay within ``max_unzipped_bytes``, and no member past 1 MB may inflate more than
:data:`~mcp_server.documents.limits.MAX_ZIP_RATIO` times. Python's ``zipfile`` never
inflates a member past its declared size (a member that lies fails its CRC check), so the
declared sizes bound what any parser reading through ``zipfile`` can get.
"""

from __future__ import annotations

import io
import zipfile

from mcp_server.documents.limits import MAX_ZIP_RATIO, ZIP_RATIO_FLOOR_BYTES, FileInput
from mcp_server.errors import IngestError


def checked_zip(file: FileInput, kind: str) -> io.BytesIO:
    """``file``'s bytes as a stream for a zip reader, once its directory passed the limits.

    :raises IngestError: the file is not a zip archive (``kind`` names what it should be), or
        its members would inflate past the limits.
    """
    stream = io.BytesIO(file.data)
    try:
        with zipfile.ZipFile(stream) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as error:
        raise IngestError(
            f"{file.path} is not a readable {kind} file ({error}); if it is an older format or password-protected, "
            "open it and save it again without a password in the current format."
        ) from error
    total = sum(member.file_size for member in members)
    limit = file.limits.max_unzipped_bytes
    if total > limit:
        raise IngestError(
            f"{file.path} would inflate to {total / 1_048_576:.0f} MB, over the limit of {limit / 1_048_576:g} MB "
            "for a zip-based document; raise RAGMCP_MAX_UNZIPPED_MB if the file is genuine."
        )
    for member in members:
        ratio = member.file_size / max(member.compress_size, 1)
        if member.file_size > ZIP_RATIO_FLOOR_BYTES and ratio > MAX_ZIP_RATIO:
            raise IngestError(
                f"{file.path} is a zip bomb: its member {member.filename!r} would inflate {ratio:.0f} times "
                f"(to {member.file_size / 1_048_576:.0f} MB); remove it from the corpus folder."
            )
    stream.seek(0)
    return stream

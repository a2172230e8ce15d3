"""E-mail messages (``.eml``): the subject as title, sender, recipients and date as metadata, the body as text.

Read with the standard library's ``email`` package (the modern policy). The body is the
``text/plain`` part, else the HTML part through the HTML reader; attachments are named at the
end (``Attachments: invoice.pdf, photo.jpg``), not read. A message of more than
:data:`MAX_PARTS` MIME parts is refused (a hostile file can nest thousands).

Every header is read from its first :data:`MAX_HEADER_CHARS` characters only. The standard
library parses a header's encoded words and parameters in quadratic time and memory (a 160 KB
``Subject`` of ``=?utf-8?q?...?=`` words took 650 MB, a 664 KB one 13 GB), so a header is cut
before it is parsed; real headers we read (subject, addresses, date, content type and
disposition) are far shorter.
"""

from __future__ import annotations

from email.message import EmailMessage
from email.parser import BytesParser
from email.policy import EmailPolicy
from typing import Any
from email.utils import parsedate_to_datetime

from mcp_server.documents.html_text import html_to_text
from mcp_server.documents.limits import FileInput
from mcp_server.documents.loaded import LoadedDocument, Structure, make_document, normalise_newlines
from mcp_server.errors import IngestError

MAX_PARTS = 500
MAX_HEADER_CHARS = 8_192
"""The characters of a header that are parsed; the rest is left out (see the module docstring)."""


class _CutHeaders(EmailPolicy):
    """The standard library's modern e-mail policy, parsing each header from its first
    :data:`MAX_HEADER_CHARS` characters."""

    def header_fetch_parse(self, name: str, value: str) -> Any:
        if isinstance(value, str) and len(value) > MAX_HEADER_CHARS:
            value = value[:MAX_HEADER_CHARS]
        return super().header_fetch_parse(name, value)


_POLICY = _CutHeaders()


def load_eml(file: FileInput) -> LoadedDocument:
    message = BytesParser(policy=_POLICY).parsebytes(file.data)
    if not isinstance(message, EmailMessage):  # the default policy always makes one; this narrows the type
        raise IngestError(f"{file.path} is not a readable e-mail message.")
    parts = 0
    for _ in message.walk():
        parts += 1
        if parts > MAX_PARTS:
            raise IngestError(f"{file.path} has more than {MAX_PARTS} MIME parts; save the message's text instead.")
    body = _body(message)
    attachments = [name for part in message.iter_attachments() if (name := part.get_filename())]
    header = [f"{label}: {message[key]}" for key, label in (("From", "From"), ("To", "To"), ("Cc", "Cc")) if message[key]]
    text = "\n".join(header) + "\n\n" + body
    if attachments:
        text += "\n\nAttachments: " + ", ".join(attachments)
    fields: dict[str, object] = {}
    if message["Subject"]:
        fields["title"] = " ".join(str(message["Subject"]).split())
    if message["Date"]:
        try:
            fields["date"] = parsedate_to_datetime(str(message["Date"])).date()
        except (TypeError, ValueError):
            pass
    for key in ("From", "To"):
        if message[key]:
            fields[key.lower()] = str(message[key])
    return make_document(file.path, text.strip(), Structure(fields=fields, titled_by_heading=False))


def _body(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    try:
        content = part.get_content()
    except (LookupError, ValueError):  # an unknown charset or a broken transfer encoding
        content = part.get_payload(decode=True) or b""
        content = content.decode("utf-8", "replace") if isinstance(content, bytes) else str(content)
    if part.get_content_subtype() == "html":
        return html_to_text(str(content)).text
    return normalise_newlines(str(content)).strip()

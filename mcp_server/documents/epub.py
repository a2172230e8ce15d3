"""EPUB books (``.epub``): the chapters in reading order, each through the HTML reader.

An EPUB is a zip archive (checked by :func:`~mcp_server.documents.zipped.checked_zip`):
``META-INF/container.xml`` names the package file, whose ``metadata`` gives the title,
date and subjects (tags), whose ``manifest`` names the chapter files and whose ``spine``
their order. A chapter is read once however often the spine names it, so what the book
inflates to stays within the archive's checked size (a 20 KB file naming one chapter
thousands of times was read for minutes). Each chapter's XHTML becomes Markdown-like text
(:func:`~mcp_server.documents.html_text.html_to_text`), so its headings are sections. The XML
is read with expat, which resolves no external entity and refuses exponential expansion.
"""

from __future__ import annotations

import posixpath
import zipfile
from xml.etree import ElementTree

from mcp_server.documents.html_text import html_to_text
from mcp_server.documents.limits import FileInput
from mcp_server.documents.loaded import LoadedDocument, Structure, make_document
from mcp_server.documents.sniff import decode_text
from mcp_server.documents.xml_metadata import metadata_fields
from mcp_server.documents.zipped import checked_zip
from mcp_server.errors import IngestError

_NS = {
    "container": "urn:oasis:names:tc:opendocument:xmlns:container",
    "opf": "http://www.idpf.org/2007/opf",
    "dc": "http://purl.org/dc/elements/1.1/",
}
_KIND = "EPUB (.epub)"


def load_epub(file: FileInput) -> LoadedDocument:
    try:
        with zipfile.ZipFile(checked_zip(file, _KIND)) as archive:
            container = ElementTree.fromstring(archive.read("META-INF/container.xml"))
            rootfile = container.find("container:rootfiles/container:rootfile", _NS)
            package_path = rootfile.get("full-path", "") if rootfile is not None else ""
            package = ElementTree.fromstring(archive.read(package_path))
            folder = posixpath.dirname(package_path)
            manifest = {
                item.get("id"): posixpath.normpath(posixpath.join(folder, item.get("href", "")))
                for item in package.iterfind("opf:manifest/opf:item", _NS)
            }
            chapters = dict.fromkeys(  # in spine order, each chapter once however often the spine names it
                manifest[ref.get("idref")] for ref in package.iterfind("opf:spine/opf:itemref", _NS)
                if ref.get("idref") in manifest
            )  # fmt: skip
            texts = [_chapter_text(archive.read(name), file) for name in chapters]
    except (KeyError, ElementTree.ParseError, zipfile.BadZipFile, ValueError) as error:
        raise IngestError(f"{file.path} is not a readable {_KIND} file ({error}); check it or convert it.") from error
    paths = {
        "title": "opf:metadata/dc:title", "date": "opf:metadata/dc:date", "tags": "opf:metadata/dc:subject",
        "author": "opf:metadata/dc:creator",
    }  # fmt: skip
    fields = metadata_fields(package, paths, _NS)
    return make_document(file.path, "\n\n".join(text for text in texts if text), Structure(fields=fields))


def _chapter_text(data: bytes, file: FileInput) -> str:
    return html_to_text(decode_text(data, file.path)).text

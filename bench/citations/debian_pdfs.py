"""Public PDF manuals from Debian documentation packages, fetched with ``apt-get download`` and unpacked
with ``dpkg-deb -x`` into a cache folder outside the repository (nothing here is committed).

Three manuals from three typesetters, so the measurement is not one producer's quirks:

- ``python-reportlab-doc``: the ReportLab user guide (134 pages, ReportLab itself: code listings,
  tables, two-level headings);
- ``docbook-xsl-doc-pdf``: the DocBook XSL reference (95 pages, dblatex through pdfTeX 1.40,
  shipped gzipped);
- ``camlidl-doc``: the CamlIDL manual (26 pages, pdfTeX 0.13 from 2007: old Type 1 fonts).

The package versions are the ones apt offers; the file names of the ``.deb`` files (which carry
them) are written into the results.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Manual:
    """A PDF inside a Debian package: ``member`` is its path in the package (``.gz``: gzipped there)."""

    package: str
    member: str
    name: str


MANUALS = (
    Manual("python-reportlab-doc", "usr/share/doc/python-reportlab-doc/reportlab-userguide.pdf", "reportlab-userguide"),
    Manual("docbook-xsl-doc-pdf", "usr/share/doc/docbook-xsl-doc-pdf/doc/reference.pdf.gz", "docbook-xsl-reference"),
    Manual("camlidl-doc", "usr/share/doc/camlidl/camlidl-1.04.doc.pdf", "camlidl-manual"),
)


def fetch(manual: Manual, cache: Path) -> tuple[Path, str]:
    """The manual's PDF in ``cache/pdf/NAME.pdf`` (downloaded and unpacked once), and its ``.deb`` file's name."""
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    deb = next(debs.glob(f"{manual.package}_*.deb"), None)
    if deb is None:
        subprocess.run(["apt-get", "download", manual.package], cwd=debs, check=True, capture_output=True)
        deb = next(debs.glob(f"{manual.package}_*.deb"))
    target = cache / "pdf" / f"{manual.name}.pdf"
    if not target.is_file():
        unpacked = cache / "unpacked" / manual.package
        unpacked.mkdir(parents=True, exist_ok=True)
        subprocess.run(["dpkg-deb", "-x", str(deb), str(unpacked)], check=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        member = unpacked / manual.member
        with (gzip.open(member) if member.suffix == ".gz" else member.open("rb")) as source, target.open("wb") as out:
            shutil.copyfileobj(source, out)
    return target, deb.name

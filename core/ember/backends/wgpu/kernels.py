"""The kernel layer: WGSL sources from ``shaders/``, strict placeholder substitution and a
pipeline cache.

Kernels live in ``.wgsl`` files; ``{{KEY}}`` placeholders are filled from keyword arguments
and a missing key raises (a typo must not compile into a silently different kernel). A file
may hold named sections (a line ``//! name`` starts one); the text before the first marker is
shared by every section.

>>> render("const N: u32 = {{N}}u;", N=4)
'const N: u32 = 4u;'
"""

from __future__ import annotations

import re
from pathlib import Path

from ...errors import EmberError

_PLACEHOLDER = re.compile(r"\{\{([A-Z0-9_]+)\}\}")


class KernelError(EmberError):
    """A kernel template could not be rendered or compiled."""


def shader_dir() -> Path:
    """The installed ``ember/shaders`` (wheel), else the repository's ``shaders/`` (editable)."""
    here = Path(__file__).resolve()
    installed = here.parents[2] / "shaders"
    if installed.is_dir():
        return installed
    repo = here.parents[4] / "shaders"
    if repo.is_dir():
        return repo
    raise KernelError(f"wgpu: WGSL kernels not found in {installed} or {repo}")


def render(template: str, **keys: object) -> str:
    """Substitute every ``{{KEY}}``; raises :class:`KernelError` naming missing keys."""
    missing = sorted({m for m in _PLACEHOLDER.findall(template) if m not in keys})
    if missing:
        raise KernelError(f"wgpu kernel template: no value for {', '.join(missing)}")
    return _PLACEHOLDER.sub(lambda m: str(keys[m.group(1)]), template)


class KernelLibrary:
    """Loads WGSL files once and caches compiled pipelines by a key of their parameters."""

    def __init__(self, adapter, directory: Path | None = None):
        self.adapter = adapter
        self.directory = directory or shader_dir()
        self._files: dict[str, tuple[str, dict[str, str]]] = {}
        self._pipelines: dict[tuple, object] = {}

    def _load(self, name: str) -> tuple[str, dict[str, str]]:
        if name not in self._files:
            path = self.directory / f"{name}.wgsl"
            if not path.is_file():
                raise KernelError(f"wgpu: no kernel file {path}")
            common, sections, current = [], {}, None
            for line in path.read_text().splitlines(keepends=True):
                if line.startswith("//! "):
                    current = line[4:].strip()
                    sections[current] = []
                elif current is None:
                    common.append(line)
                else:
                    sections[current].append(line)
            self._files[name] = ("".join(common), {k: "".join(v) for k, v in sections.items()})
        return self._files[name]

    def source(self, name: str, section: str | None = None) -> str:
        """A file's text, or its shared part followed by one section."""
        common, sections = self._load(name)
        if section is None:
            return common
        if section not in sections:
            raise KernelError(f"wgpu: {name}.wgsl has no section {section!r}: {sorted(sections)}")
        return common + sections[section]

    def snippet(self, name: str, section: str, **keys: object) -> str:
        """One section alone (without the file's shared part), rendered."""
        _, sections = self._load(name)
        if section not in sections:
            raise KernelError(f"wgpu: {name}.wgsl has no section {section!r}")
        return render(sections[section], **keys)

    def pipeline(self, key: tuple, build):
        """The cached pipeline for ``key``; ``build()`` returns ``(wgsl_code, access)``."""
        found = self._pipelines.get(key)
        if found is None:
            code, access = build()
            try:
                found = self.adapter.create_pipeline(code, tuple(access))
            except Exception as e:
                raise KernelError(f"wgpu: kernel {key[0]!r} failed to compile: {e}") from e
            self._pipelines[key] = found
        return found

    def __len__(self) -> int:
        return len(self._pipelines)

"""The records of a run: its configuration (`RunConfig`, the base every instrument's
configuration type extends), its `Manifest`, a scored run as analyses read it (`Arm`), and an
analysis that was not computed (`Skipped`).

These are JSON objects given typed fields: each reads what the store wrote and gives back exactly
that, so the hash of a record read and written again is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Generic, Self, get_type_hints

from pydantic import TypeAdapter, ValidationError
from typing_extensions import TypeVar

from choiceaudit.errors import InputError
from choiceaudit.types._choice import Decision, Query
from choiceaudit.types._columns import ChoiceColumns

__all__ = ["Arm", "Manifest", "RunConfig", "Skipped"]


def _thaw(value: Any) -> Any:
    return [_thaw(v) for v in value] if isinstance(value, tuple) else value


_ADAPTERS: dict[type, dict[str, TypeAdapter[Any]]] = {}


def _adapters(cls: type) -> dict[str, TypeAdapter[Any]]:
    """One validator per field of a record type, built once (from its resolved annotations)."""
    if cls not in _ADAPTERS:
        hints = get_type_hints(cls)
        _ADAPTERS[cls] = {
            f.name: TypeAdapter(hints[f.name])
            for f in fields(cls)
            if f.name not in ("extra", "stored_keys")
        }
    return _ADAPTERS[cls]


def _location(cls: type) -> str:
    """Where a record's fields live in a manifest: a configuration's under ``config.``."""
    return "config." if issubclass(cls, RunConfig) else ""


@dataclass(frozen=True)
class _Record:
    """A JSON object as typed fields (a top-level list as a tuple, unknown keys in ``extra``);
    :meth:`to_json` gives back exactly what was read (a stored null too), so it hashes the same."""

    extra: Mapping[str, Any] = field(default_factory=dict, kw_only=True)
    stored_keys: frozenset[str] = field(
        default=frozenset(), compare=False, repr=False, kw_only=True
    )

    @classmethod
    def _known(cls) -> list[str]:
        return [f.name for f in fields(cls) if f.name not in ("extra", "stored_keys")]

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, source: str | None = None) -> Self:
        """The record of the JSON object ``data``, each known field checked against its type
        (strictly: no value is converted from another JSON type); a field that fails is an
        :class:`~choiceaudit.errors.InputError` naming ``source`` (the file it was read from,
        where known) and the field."""
        if not isinstance(data, Mapping):
            raise InputError(f"a JSON object is needed, got {type(data).__name__}", source=source)
        known = cls._known()
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in known}
        adapters = _adapters(cls)
        for name, value in values.items():
            try:
                adapters[name].validate_python(value, strict=True)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise InputError(
                    f"{first['msg']} (got {value!r:.80}){' at ' + where if where else ''}",
                    source=source,
                    field=f"{_location(cls)}{name}",
                ) from None
        extra = {k: v for k, v in data.items() if k not in known}
        return cls(**values, extra=extra, stored_keys=frozenset(data))

    def to_json(self) -> dict[str, object]:
        """The record as the JSON object it was read from (the serialising edge: its values
        are whatever the record's fields and unknown keys hold)."""
        out: dict[str, object] = dict(self.extra)
        for name in self._known():
            value = getattr(self, name)
            if value is not None or name in self.stored_keys:
                out[name] = _thaw(value)
        return out


@dataclass(frozen=True)
class RunConfig(_Record):
    """A run's configuration (the manifest's ``config``); each instrument subclasses it with its
    fields. ``instrument`` is absent for plain scoring runs and imports."""

    instrument: str | None = None
    chooser: str | None = None  # a reference chooser's or imported population's name
    human: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Manifest(_Record):
    """``manifest.json``: what made the run (command, scorer, versions, ``config`` as stored
    JSON, typed by :attr:`Arm.config`) and what each scoring session did."""

    config: Mapping[str, Any] = field(default_factory=dict)
    scorer: Mapping[str, Any] = field(default_factory=dict)
    status: str | None = None
    rows: int | None = None
    parts: int | None = None
    sessions: tuple[Mapping[str, Any], ...] = ()
    command: tuple[str, ...] = ()
    created: str | None = None
    updated: str | None = None
    choiceaudit_version: str | None = None
    git_commit: str | None = None
    python: str | None = None
    platform: str | None = None
    failure: str | None = None
    truncated_rows: int | None = None
    rows_with_choice: int | None = None
    choice_not_argmax_rows: int | None = None
    #: what the precision gate measured before a run in a reduced precision (its noise floor
    #: against float32, the float64 check), or that it was opted out of; outside ``config``
    precision_gate: Mapping[str, Any] | None = None

    @property
    def instrument(self) -> str:
        """The instrument that made the run (``score`` for plain query files)."""
        return str(self.config.get("instrument", "score"))

    @property
    def model_label(self) -> str | None:
        """The scorer's model name, else its backend name (``None`` if neither is recorded)."""
        name = self.scorer.get("model") or self.scorer.get("name")
        return None if name is None else str(name)


ConfigT = TypeVar("ConfigT", bound=RunConfig, default=RunConfig, covariant=True)
OtherConfigT = TypeVar("OtherConfigT", bound=RunConfig)


@dataclass(frozen=True)
class Arm(Generic[ConfigT]):
    """One scored run as an analysis reads it: a label for tables, its source (the run
    directory), its manifest, its ``(Query, Decision)`` rows in input order and its
    configuration as the instrument's type (``Arm[MeaningConfig]``). The audit layer builds arms
    from run directories; instruments analyse arms and never read Parquet. A mapping given as
    ``manifest`` is read as a :class:`Manifest`, and without ``config`` its config as the base
    :class:`RunConfig` (:meth:`with_config` re-reads it as an instrument's)."""

    label: str
    source: str
    manifest: Manifest
    rows: Sequence[tuple[Query, Decision]]
    config: ConfigT = field(default=None, kw_only=True)  # type: ignore[assignment]
    #: reads the rows as columns from where they are stored (``None``: built from ``rows``)
    read_columns: Callable[[], ChoiceColumns] | None = field(
        default=None, kw_only=True, compare=False, repr=False
    )
    _columns: ChoiceColumns | None = field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.manifest, Manifest):
            manifest = Manifest.from_json(self.manifest, source=self._manifest_file)
            object.__setattr__(self, "manifest", manifest)
        if self.config is None:
            config = RunConfig.from_json(self.manifest.config, source=self._manifest_file)
            object.__setattr__(self, "config", config)

    @property
    def _manifest_file(self) -> str:
        """Where this arm's manifest was read from (errors in its records name it)."""
        return f"{self.source}/manifest.json"

    def with_config(self, config_type: type[OtherConfigT]) -> Arm[OtherConfigT]:
        """This arm with its configuration read as ``config_type`` (itself when it already is)."""
        if isinstance(self.config, config_type):
            return self  # type: ignore[return-value]
        config = config_type.from_json(self.config.to_json(), source=self._manifest_file)
        arm = Arm(
            self.label,
            self.source,
            self.manifest,
            self.rows,
            config=config,
            read_columns=self.read_columns,
        )
        object.__setattr__(arm, "_columns", self._columns)
        return arm

    def columns(self) -> ChoiceColumns:
        """The rows as columns (:class:`~choiceaudit.types.ChoiceColumns`), read once: from
        the store where the arm was opened from a run directory, else from ``rows``."""
        if self._columns is None:
            read = self.read_columns
            columns = read() if read is not None else ChoiceColumns.from_rows(self.rows)
            object.__setattr__(self, "_columns", columns)
        assert self._columns is not None
        return self._columns

    @property
    def status(self) -> str | None:
        return self.manifest.status


@dataclass(frozen=True)
class Skipped:
    """An analysis that was not computed, and why (the report lists every one)."""

    analysis: str
    reason: str

    def __str__(self) -> str:
        return f"{self.analysis}: {self.reason}" if self.analysis else self.reason

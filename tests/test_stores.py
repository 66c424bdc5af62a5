"""A store whose file makes SQLite answer in bytes that are not UTF-8 (a flipped byte in the
schema, which SQLite quotes in its error message) is damaged like any other file: set aside and
started anew, never an exception (a case random damage to the judge cache found)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from vst_core.stores import DAMAGED_SUFFIX, SqliteStore

SCHEMA = ("CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, v TEXT)",)


def flipped_schema(path: Path) -> None:
    """The table's schema text with a byte that is not UTF-8 at its end, as a flip leaves it."""
    db = sqlite3.connect(path)
    db.execute(SCHEMA[0])
    db.execute("PRAGMA writable_schema=ON")
    db.execute(
        "UPDATE sqlite_master SET sql = CAST(? AS TEXT) WHERE name = 't'", (b"CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT) \xf3",)
    )
    db.commit()
    db.close()


def test_the_file_is_damage_that_python_could_not_even_read_the_error_of(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    flipped_schema(path)
    with pytest.raises(UnicodeDecodeError):  # what SQLite says of it cannot be decoded
        sqlite3.connect(path).execute(SCHEMA[0])
    store = SqliteStore(path, SCHEMA, probe="SELECT v FROM t")
    assert store.set_aside and store.set_aside[0].startswith("UnicodeDecodeError")
    assert (tmp_path / f"cache.sqlite{DAMAGED_SUFFIX}").is_file()
    assert store.run(lambda db: db.execute("SELECT count(*) FROM t").fetchone()[0], default=-1) == 0  # a new file

"""Tables of minipaimon's earlier formats, after ``migrate``, read by Paimon's clients.

The fixtures (tests/fixtures): ``legacy_tables/append`` (partitioned by a date, a tag),
``legacy_tables/pk`` (partitioned, 2 buckets, deletion vectors, a delete, an added column)
and ``v1_decimal_table`` (format version 1 manifests, DECIMAL(38, 4) primary-key table).
Each is copied into a warehouse, read by minipaimon, migrated in place, and then read by
every judge (one batch each): the rows equal minipaimon's read before the migration.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.migrate import migrate
from tests.interop import harness
from tests.interop.compare import JAVA_NULL_ROW, differences

pytestmark = pytest.mark.interop

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LEGACY = {"legacy_append": FIXTURES / "legacy_tables" / "append",
          "legacy_append_text": FIXTURES / "legacy_tables" / "append_text",  # files hard-linked
          "legacy_pk": FIXTURES / "legacy_tables" / "pk",
          "v1_decimal": FIXTURES / "v1_decimal_table"}


@dataclass
class Migrated:
    warehouse: Path
    before: dict[str, pa.Table]
    reads: dict[str, list[harness.Outcome]]


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Migrated:
    wh = tmp_path_factory.mktemp("migrated")
    before = {}
    for name, fixture in LEGACY.items():
        path = wh / "db.db" / name
        shutil.copytree(fixture, path)
        old = mp.open_table(str(path))
        assert old.table_schema.legacyFormat
        before[name] = old.to_arrow()
        assert migrate(str(path)).migrated
    return Migrated(wh, before, {})


def reads(m: Migrated, judge_name: str, tmp_path_factory: pytest.TempPathFactory) -> list[harness.Outcome]:
    """Judge ``judge_name``'s reads of every migrated table, one batch on first use."""
    judge = harness.judge(judge_name)
    if judge_name not in m.reads:
        b = judge.batch(tmp_path_factory.mktemp(f"migrated-reads-{judge_name}"))
        for name in LEGACY:
            b.read(m.warehouse, f"db.{name}")
        m.reads[judge_name] = b.run()
    return m.reads[judge_name]


CASES = [pytest.param(judge, name, id=f"{judge}-{name}")
         for judge in harness.READERS for name in LEGACY]


@pytest.mark.parametrize(("judge_name", "name"), CASES)
def test_a_migrated_table_reads_in_paimon_as_before_the_migration(
        migrated: Migrated, judge_name: str, name: str,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    outcome = reads(migrated, judge_name, tmp_path_factory)[list(LEGACY).index(name)]
    want = migrated.before[name]
    assert want.num_rows > 0
    mine = mp.open_table(str(migrated.warehouse / "db.db" / name)).to_arrow()
    assert differences(mine, want) is None, "minipaimon's read after the migration"
    quirks = [JAVA_NULL_ROW] if judge_name == harness.JAVA else []
    assert outcome.ok, f"{judge_name} cannot read the migrated {name}: {outcome.error}"
    assert differences(outcome.table(), want, quirks) is None

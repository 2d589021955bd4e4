"""Decoding metadata on several threads of a fresh process never crashes it.

A writer of test_four_processes_commit_concurrently died with SIGSEGV: its read pool
decoded its first manifests on several threads, and msgspec (0.22) builds a struct type's
decoding info on the first decode into it, visible to other threads before it is complete
(format/typed_decode.py). Each child here is forked from a process that imported the
package and decoded nothing, so its threads are the first to decode every kind of metadata
file, all at once."""

from __future__ import annotations

import subprocess
import sys

import minipaimon_core as mp
from tests.helpers import SCHEMA, rows

CHILDREN = 60

RACE = r"""
import os, sys, threading
import minipaimon_core  # noqa: F401 - what a process has imported before its first read
from minipaimon_core.metadata import consumer
from minipaimon_core.format import manifest_file, snapshot, table_schema

files = [(open(p, "rb").read(), p) for p in sys.argv[1:4]]
decoders = [lambda d, p: manifest_file.decode_with_names(d, p, None), snapshot.decode,
            table_schema.decode]
cons = consumer.encode(consumer.Consumer(3))
crashed = 0
for _ in range(int(sys.argv[4])):
    pid = os.fork()
    if pid == 0:
        sys.setswitchinterval(1e-6)
        start = threading.Barrier(4)

        def decode_all():
            start.wait()
            for decode, (data, path) in zip(decoders, files):
                decode(data, path)
            consumer.decode(cons, "consumer-x")

        threads = [threading.Thread(target=decode_all) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    crashed += status != 0
print(crashed)
"""


def test_first_decodes_on_many_threads_at_once_never_crash(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(rows(0, 3))
    snap = t.latest_snapshot()
    manifest = t.context().manifests.snapshot_list(snap, "delta")[0].fileName
    layout = t.layout
    out = subprocess.run(
        [sys.executable, "-c", RACE, layout.manifest_path(manifest), layout.snapshot_path(snap.id),
         layout.schema_path(snap.schemaId), str(CHILDREN)],
        capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["0"]  # no child crashed

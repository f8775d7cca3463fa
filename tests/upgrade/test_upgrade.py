"""Every data dir kept in tests/upgrade/fixtures/ (written by an earlier build, fixture.py)
must start under this build and serve the tree it held, every node's data, stat and ACL as a
client saw them before that build stopped; then take writes. One fixture per on-disk format
the server must read (issue 37)."""

import json
import os
import shutil
import signal

import pytest

from fixture import HERE, client, dump, serving, start, wait

FIXTURES = sorted(os.listdir(os.path.join(HERE, "fixtures")))
BIN = os.environ.get("PALISADE_BIN", "target/release/palisade")
BASE = int(os.environ.get("UPGRADE_PORT_BASE", "29200"))


def _copy(fixture, part, to):
    shutil.copytree(os.path.join(HERE, "fixtures", fixture, part), to)


def _expect(fixture):
    with open(os.path.join(HERE, "fixtures", fixture, "expect.json")) as f:
        return json.load(f)


def _stop(procs):
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(20)
        except Exception:
            p.kill()


@pytest.mark.parametrize("fixture", FIXTURES)
def test_a_standalone_data_dir_of_an_earlier_build_starts(fixture, tmp_path):
    data = str(tmp_path / "standalone")
    _copy(fixture, "standalone", data)
    port = BASE + 1
    p = start(BIN, data, port, log=str(tmp_path / "server.log"))
    try:
        assert wait(lambda: serving(port), 30), open(tmp_path / "server.log").read()[-3000:]
        zk = client(port)
        assert dump(zk) == _expect(fixture)["standalone"]
        zk.create("/app/after-upgrade", b"new")
        assert zk.exists("/app/after-upgrade").czxid > max(
            n["stat"][1] for n in _expect(fixture)["standalone"].values())
        zk.stop()
    finally:
        _stop([p])


@pytest.mark.parametrize("fixture", FIXTURES)
def test_an_ensembles_data_dirs_of_an_earlier_build_start(fixture, tmp_path):
    # The fixture's members were written with these peer ports: the log's membership
    # names them, and the zoo.cfg lines must agree.
    base = 29100
    servers = [(i, base + 20 + i, base + 40 + i) for i in (1, 2, 3)]
    root = tmp_path / "ensemble"
    procs = []
    ports = [BASE + 10 + i for i in (1, 2, 3)]
    try:
        for i, port in enumerate(ports):
            data = str(root / ("m%d" % (i + 1)))
            _copy(fixture, os.path.join("ensemble", "m%d" % (i + 1)), data)
            procs.append(start(BIN, data, port, servers, i + 1, str(tmp_path / "servers.log")))
        assert wait(lambda: all(serving(p) for p in ports), 40), \
            open(tmp_path / "servers.log").read()[-4000:]
        want = _expect(fixture)["ensemble"]
        for port in ports:
            zk = client(port)
            zk.sync("/")
            assert dump(zk) == want, "member on %d" % port
            zk.stop()
        zk = client(ports[0])
        zk.create("/app/after-upgrade", b"new")
        assert zk.exists("/app/after-upgrade").czxid > max(n["stat"][1] for n in want.values())
        zk.stop()
    finally:
        _stop(procs)

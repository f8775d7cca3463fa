#!/usr/bin/env python3
"""ACL cases through the real Java CLI (zkCli.sh), beyond what zkcli_check.py covers:
setAcl with several entries, -v and -R, what a reader without ADMIN sees in getAcl (digests
masked), NOAUTH for every operation kind, a wrong password, ip ACLs, DELETE checked on the
parent, the auth scheme after two addauths, and (when ZK_SUPER_AUTH=user:password names the
server's super digest login) the super user.

usage: zkcli_acl_check.py HOST:PORT BASE_PATH

The expected outputs were observed with Apache ZooKeeper 3.8.0 (the Debian package).
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Reporter  # noqa: E402
from zkcli_check import NO_OUTPUT, Session, digest, parse_stat  # noqa: E402

R = Reporter("zkcli-acl")


def main():
    hp, B = sys.argv[1], sys.argv[2]
    dg = digest("user", "pass")
    dg_wrong = digest("user", "wrong")
    noperm = "Insufficient permission : %s"

    # ---------------------------------------------------------------- owner session
    a = Session(hp)
    c = {}
    for name, cmd in [
        ("mkbase", "create %s" % B),
        ("mk", "create %s/p data" % B),
        ("setacl_multi", "setAcl %s/p digest:%s:cdrwa,world:anyone:r" % (B, dg)),
        ("getacl_noadmin", "getAcl %s/p" % B),
        ("getacl_s", "getAcl -s %s/p" % B),
        ("setacl_noadmin_badv", "setAcl -v 5 %s/p world:anyone:cdrwa" % B),
        ("setacl_noadmin", "setAcl %s/p world:anyone:cdrwa" % B),
        ("set_noauth", "set %s/p x" % B),
        ("get_read", "get %s/p" % B),
        ("ls_read", "ls %s/p" % B),
        ("create_noauth", "create %s/p/c x" % B),
        ("stat", "stat %s/p" % B),
        ("addauth_wrong", "addauth digest user:wrong"),
        ("set_wrong", "set %s/p x" % B),
        ("addauth", "addauth digest user:pass"),
        ("getacl_admin", "getAcl %s/p" % B),
        ("set_ok", "set %s/p y" % B),
        ("setacl_badv", "setAcl -v 0 %s/p digest:%s:cdrwa" % (B, dg)),
        ("setacl_goodv", "setAcl -v 1 %s/p digest:%s:cdrwa" % (B, dg)),
        ("getacl_after", "getAcl -s %s/p" % B),
        ("create_child", "create %s/p/c x" % B),
        ("setacl_invalid_scheme", "setAcl %s/p foo:bar:cdrwa" % B),
        ("setacl_invalid_world", "setAcl %s/p world:someone:r" % B),
        ("mkip", "create %s/ip ipdata ip:127.0.0.1:cdrwa" % B),
        ("getacl_ip", "getAcl %s/ip" % B),
        ("get_ip", "get %s/ip" % B),
        ("mkip10", "create %s/ip10 d ip:10.0.0.0/8:cdrwa" % B),
        ("get_ip10", "get %s/ip10" % B),
        ("getacl_ip10", "getAcl %s/ip10" % B),
        ("mknodel", "create %s/nodel x world:anyone:crwa" % B),
        ("mknodelc", "create %s/nodel/c x" % B),
        ("del_nodel_c", "delete %s/nodel/c" % B),
        ("setacl_R_missing", "setAcl -R %s/r world:anyone:r" % B),
        ("mkr", "create %s/r" % B),
        ("mkr1", "create %s/r/a" % B),
        ("mkr2", "create %s/r/a/b" % B),
        ("setacl_R", "setAcl -R %s/r world:anyone:cdr" % B),
        ("getacl_r", "getAcl %s/r" % B),
        ("getacl_rab", "getAcl %s/r/a/b" % B),
        ("mkauth", "create %s/au x auth:ignored:cdrwa" % B),
        ("getacl_auth", "getAcl %s/au" % B),
        # leave the tree removable without super: DELETE back on /nodel, the ip10 node gone
        ("fix_nodel", "setAcl %s/nodel world:anyone:cdrwa" % B),
        ("del_ip10", "delete %s/ip10" % B),
    ]:
        c[name] = a.add(cmd)
    a.run()
    o = a.out
    if o(c["mkbase"]) != ["Created %s" % B]:
        R.check("owner session created the base node", False, a.raw[-2000:])
        return R.finish()
    R.eq("setAcl with two entries prints nothing", o(c["setacl_multi"]), [])
    R.eq("getAcl without ADMIN masks the digest (user:x)", o(c["getacl_noadmin"]),
         ["'digest,'user:x", ": cdrwa", "'world,'anyone", ": r"])
    lines = o(c["getacl_s"])
    R.eq("getAcl -s: the ACL lines", lines[:4], ["'digest,'user:x", ": cdrwa", "'world,'anyone", ": r"])
    st, _ = parse_stat(lines)
    R.eq("getAcl -s: aclVersion 1 after one setAcl", st and st.get("aclVersion"), "1")
    R.eq("setAcl without ADMIN (even with a bad version) -> Insufficient permission",
         o(c["setacl_noadmin_badv"]), [noperm % (B + "/p")])
    R.eq("setAcl without ADMIN -> Insufficient permission", o(c["setacl_noadmin"]), [noperm % (B + "/p")])
    R.eq("set without WRITE -> Insufficient permission", o(c["set_noauth"]), [noperm % (B + "/p")])
    R.eq("get with world READ works", o(c["get_read"]), ["data"])
    R.eq("ls with world READ works", o(c["ls_read"]), ["[]"])
    R.eq("create child without CREATE -> Insufficient permission (child path)", o(c["create_noauth"]),
         [noperm % (B + "/p/c")])
    st, _ = parse_stat(o(c["stat"]))
    R.check("stat (exists) needs no permission", bool(st) and st.get("dataLength") == "4", o(c["stat"]))
    R.eq("addauth with a wrong password prints nothing", o(c["addauth_wrong"]), [])
    R.eq("wrong password grants nothing", o(c["set_wrong"]), [noperm % (B + "/p")])
    R.eq("getAcl with ADMIN shows the full digest", o(c["getacl_admin"]),
         ["'digest,'" + dg, ": cdrwa", "'world,'anyone", ": r"])
    R.eq("set after addauth works", o(c["set_ok"]), [])
    R.eq("setAcl -v with a stale version -> version No is not valid", o(c["setacl_badv"]),
         ["version No is not valid : %s/p" % B])
    R.eq("setAcl -v with the current version works", o(c["setacl_goodv"]), [])
    lines = o(c["getacl_after"])
    st, _ = parse_stat(lines)
    R.eq("getAcl -s after setAcl -v: one entry, aclVersion 2", (lines[:2], st and st.get("aclVersion")),
         (["'digest,'" + dg, ": cdrwa"], "2"))
    R.eq("create child with CREATE (digest) works", o(c["create_child"]), ["Created %s/p/c" % B])
    R.eq("setAcl with an unknown scheme -> Acl is not valid", o(c["setacl_invalid_scheme"]),
         ["Acl is not valid : %s/p" % B])
    R.eq("setAcl world:someone -> Acl is not valid", o(c["setacl_invalid_world"]), ["Acl is not valid : %s/p" % B])
    R.eq("create with ip:127.0.0.1 ACL", o(c["mkip"]), ["Created %s/ip" % B])
    R.eq("getAcl of an ip ACL", o(c["getacl_ip"]), ["'ip,'127.0.0.1", ": cdrwa"])
    R.eq("ip ACL matching the loopback client grants READ", o(c["get_ip"]), ["ipdata"])
    R.eq("ip:10.0.0.0/8 does not match 127.0.0.1 (get)", o(c["get_ip10"]), [noperm % (B + "/ip10")])
    R.eq("ip:10.0.0.0/8 does not match 127.0.0.1 (getAcl)", o(c["getacl_ip10"]), [noperm % (B + "/ip10")])
    R.eq("delete needs DELETE on the parent", o(c["del_nodel_c"]), [noperm % (B + "/nodel/c")])
    R.eq("setAcl -R on a missing node", o(c["setacl_R_missing"]), ["Node does not exist: %s/r" % B])
    R.eq("setAcl -R prints nothing", o(c["setacl_R"]), [])
    R.eq("setAcl -R sets the node", o(c["getacl_r"]), ["'world,'anyone", ": cdr"])
    R.eq("setAcl -R sets the grandchild", o(c["getacl_rab"]), ["'world,'anyone", ": cdr"])
    R.eq("auth: ACL expands to both digest identities of the session (wrong and right password)",
         o(c["getacl_auth"]), ["'digest,'" + dg_wrong, ": cdrwa", "'digest,'" + dg, ": cdrwa"])
    R.eq("delete of a node whose own ACL excludes us (DELETE is checked on the parent)", o(c["del_ip10"]), [])
    if o(len(a.cmds) - 1) == [NO_OUTPUT]:
        R.check("owner session completed", False, a.raw[-2000:])

    # ---------------------------------------------------------------- stranger (and super) session
    superauth = os.environ.get("ZK_SUPER_AUTH")
    b = Session(hp)
    d = {}
    steps = [
        ("get", "get %s/p" % B),
        ("ls", "ls %s/p" % B),
        ("getacl", "getAcl %s/p" % B),
        ("stat", "stat %s/p" % B),
        ("delete_child", "delete %s/p/c" % B),
        ("setacl", "setAcl %s/p world:anyone:cdrwa" % B),
        ("sync", "sync %s/p" % B),
    ]
    if superauth:
        steps += [
            ("addauth_super", "addauth digest %s" % superauth),
            ("get_super", "get %s/p" % B),
            ("getacl_super", "getAcl %s/p" % B),
            ("set_nowrite_super", "set %s/r/a/b z" % B),
            ("get_nowrite_super", "get %s/r/a/b" % B),
            ("delete_child_super", "delete %s/p/c" % B),
            ("whoami_super", "whoami"),
            ("mk_super_auth", "create %s/sa x auth::cdrwa" % B),
            ("getacl_super_auth", "getAcl %s/sa" % B),
        ]
    steps += [("addauth", "addauth digest user:pass"), ("cleanup", "deleteall %s" % B), ("gone", "stat %s" % B)]
    for name, cmd in steps:
        d[name] = b.add(cmd)
    b.run()
    o = b.out
    for k in ("get", "ls", "getacl", "setacl"):
        R.eq("stranger: %s on a digest-only node -> Insufficient permission" % k, o(d[k]), [noperm % (B + "/p")])
    R.eq("stranger: delete under a digest-only parent -> Insufficient permission", o(d["delete_child"]),
         [noperm % (B + "/p/c")])
    st, _ = parse_stat(o(d["stat"]))
    R.check("stranger: stat works (exists is never ACL-checked)", bool(st) and st.get("numChildren") == "1",
            o(d["stat"]))
    R.eq("stranger: sync works (never ACL-checked)", o(d["sync"]), ["Sync is OK"])
    if superauth:
        user = superauth.split(":")[0]
        R.eq("super: addauth prints nothing", o(d["addauth_super"]), [])
        R.eq("super: get on a digest-only node", o(d["get_super"]), ["y"])
        R.eq("super: getAcl shows the full digest (super has ADMIN everywhere)", o(d["getacl_super"]),
             ["'digest,'" + dg, ": cdrwa"])
        R.eq("super: set on a node without WRITE for anyone", (o(d["set_nowrite_super"]), o(d["get_nowrite_super"])),
             ([], ["z"]))
        R.eq("super: delete under a digest-only parent", o(d["delete_child_super"]), [])
        lines = o(d["whoami_super"])
        R.check("super: whoami lists super, digest and ip (any order)",
                bool(lines) and lines[0] == "Auth scheme: User"
                and sorted(lines[1:]) == sorted(["super: ", "digest: " + user, "ip: 127.0.0.1"]), lines)
        R.eq("super: create with auth: ACL", o(d["mk_super_auth"]), ["Created %s/sa" % B])
        got = o(d["getacl_super_auth"])
        R.check("super: auth: ACL expands to the digest id only (no 'super' entry)",
                len(got) == 2 and re.fullmatch(r"'digest,'%s:[A-Za-z0-9+/=]+" % re.escape(user), got[0]) is not None
                and got[1] == ": cdrwa", got)
    R.eq("cleanup with deleteall", o(d["cleanup"]), [])
    R.eq("base node gone", o(d["gone"]), ["Node does not exist: %s" % B])
    if o(len(b.cmds) - 1) == [NO_OUTPUT]:
        R.check("stranger session completed", False, b.raw[-2000:])
    return R.finish()


if __name__ == "__main__":
    try:
        rc = main()
    except Exception:  # a driver crash is a failed check, not a bare traceback
        import traceback
        R.check("driver completed without exception", False, traceback.format_exc())
        rc = R.finish()
    sys.exit(rc)

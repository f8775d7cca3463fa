"""Checkers: each takes the history (and what was read from every member after the heal) and
returns {"checked": n, "violations": [...]} — a violation is a short description with the
events that show it."""

import bisect
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "ensemble"))
from helpers import STAT_FIELDS  # noqa: E402  (the order of a tree entry's Stat)


def result(checked, violations, **extra):
    r = {"checked": checked, "violations": violations[:20], "violation_count": len(violations)}
    r.update(extra)
    return r


def linearizable(history, binary, out_dir, budget_s=20.0):
    """The register's history, key by key, through `palisade-linearize` (stateright's
    LinearizabilityTester over a compare-and-set register)."""
    path = os.path.join(out_dir, "register.jsonl")
    n = 0
    keys = {ev["key"] for ev in history.events if ev["workload"] == "register"}
    budget_s = max(budget_s, 0.1 * len(keys))  # long runs: 0.1 s a key at least
    with open(path, "w") as f:
        for ev in history.events:
            if ev["workload"] == "register":
                f.write(json.dumps({k: ev[k] for k in ("process", "type", "f", "key", "value")})
                        + "\n")
                n += ev["type"] != "invoke"
    r = subprocess.run([binary, "--budget-secs", str(budget_s), path], capture_output=True,
                       timeout=budget_s * 4 + 60)
    if r.returncode not in (0, 1):
        raise RuntimeError("palisade-linearize failed (%s): %s" % (r.returncode,
                                                                  r.stderr.decode()[-2000:]))
    rep = json.loads(r.stdout)
    viol = ["key %s is not linearizable: %s" % (k["key"], k.get("excerpt", ""))
            for k in rep["keys"] if k["verdict"] == "not-linearizable"]
    unknown = [k["key"] for k in rep["keys"] if k["verdict"] == "unknown"]
    return result(n, viol, keys=len(rep["keys"]), keys_unknown=unknown)


def unique_ids(history, member_children):
    """Ids never repeated; a create that completed before another was invoked has the lower
    id; every acknowledged one is on every member after the heal."""
    oks = [(inv, c) for inv, c in history.pairs("ids") if c is not None and c["type"] == "ok"]
    viol = []
    seen = {}
    for inv, c in oks:
        if c["value"] in seen:
            viol.append("id %d given twice: %r and %r" % (c["value"], seen[c["value"]], c))
        seen[c["value"]] = c
    # Real-time order: for each op b, every op completed before b's invocation has a lower id.
    by_done = sorted(oks, key=lambda p: p[1]["index"])
    done_idx = [p[1]["index"] for p in by_done]
    prefix_max = []
    m = None
    for inv, c in by_done:
        if m is None or c["value"] > m[1]["value"]:
            m = (inv, c)
        prefix_max.append(m)
    for inv, c in oks:
        k = bisect.bisect_left(done_idx, inv["index"])
        if k > 0:
            pa, pc = prefix_max[k - 1]
            if pc["value"] >= c["value"]:
                viol.append("id %d (invoked at %d) after id %d had completed (at %d)"
                            % (c["value"], inv["index"], pc["value"], pc["index"]))
    lost = []
    for member, kids in member_children.items():
        missing = [c["node"] for _, c in oks if c["node"] not in kids]
        if missing:
            lost.append("member %s lacks %d acknowledged id nodes, e.g. %s"
                        % (member, len(missing), missing[:5]))
    # Losses first: the summary keeps the first 20 violations.
    return result(len(oks), lost + viol, lost_on_members=len(lost))


def counter(history, final_values):
    """Every read between the adds certainly done before it and those possibly done by its
    end; the final value (on every member) likewise."""
    adds = [(inv, c) for inv, c in history.pairs("counter") if inv["f"] == "add"]
    ok_done = sorted(c["index"] for inv, c in adds if c is not None and c["type"] == "ok")
    maybe_inv = sorted(inv["index"] for inv, c in adds
                       if c is None or c["type"] in ("ok", "info"))
    viol = []
    reads = [(inv, c) for inv, c in history.pairs("counter")
             if inv["f"] == "read" and c is not None and c["type"] == "ok"]
    for inv, c in reads:
        lo = bisect.bisect_left(ok_done, inv["index"])
        hi = bisect.bisect_left(maybe_inv, c["index"])
        if not lo <= c["value"] <= hi:
            viol.append("read %d outside [%d, %d]: %r" % (c["value"], lo, hi, c))
    lo, hi = len(ok_done), len(maybe_inv)
    for member, v in final_values.items():
        if not lo <= v <= hi:
            viol.append("member %s's final value %d outside [%d, %d]" % (member, v, lo, hi))
    return result(len(reads) + len(ok_done), viol, final=final_values, bounds=[lo, hi])


def queue(history, remaining_by_member):
    """No value dequeued twice; none dequeued that was never enqueued; every acknowledged
    enqueue dequeued or still queued on every member, except as many as the dequeues whose
    outcome is unknown may have taken."""
    pairs = history.pairs("queue")
    enq_ok = {c["value"] for inv, c in pairs
              if inv["f"] == "enqueue" and c is not None and c["type"] == "ok"}
    enq_any = {inv["value"] for inv, c in pairs if inv["f"] == "enqueue"}
    deq = [c["value"] for inv, c in pairs
           if inv["f"] == "dequeue" and c is not None and c["type"] == "ok"]
    deq_unknown = sum(1 for inv, c in pairs if inv["f"] == "dequeue"
                      and (c is None or c["type"] == "info"))
    viol = []
    seen = set()
    for v in deq:
        if v in seen:
            viol.append("value %d dequeued twice" % v)
        seen.add(v)
        if v not in enq_any:
            viol.append("value %d dequeued but never enqueued" % v)
    for member, rem in remaining_by_member.items():
        rem = set(rem)
        lost = enq_ok - seen - rem
        if len(lost) > deq_unknown:
            viol.append("member %s: %d acknowledged values neither dequeued nor queued "
                        "(%d dequeues of unknown outcome): %s"
                        % (member, len(lost), deq_unknown, sorted(lost)[:10]))
        twice = rem & seen
        if twice:
            viol.append("member %s still queues dequeued values %s" % (member, sorted(twice)[:10]))
    return result(len(enq_ok) + len(deq), viol, unknown_dequeues=deq_unknown)


def locks(history, store_log):
    """Fencing tokens accepted by the store strictly increasing; holders that did not overlap
    got tokens in acquisition order; two holders overlapping in real time only if the earlier
    token's write was rejected or done before the later holder held."""
    holds = [c["value"] for inv, c in history.pairs("lock")
             if c is not None and c["type"] in ("ok", "info") and isinstance(c["value"], dict)]
    viol = []
    accepted = [int(p[1]) for p in store_log if p[0] == "ACCEPT"]
    for a, b in zip(accepted, accepted[1:]):
        if b < a:
            viol.append("store accepted token %d after %d" % (b, a))
    holds.sort(key=lambda h: h["start"])
    overlaps = 0
    for i, a in enumerate(holds):
        a_end = a["end"] if a["end"] is not None else float("inf")
        for b in holds[i + 1:]:
            if b["start"] >= a_end:
                if a["token"] is not None and b["token"] is not None and b["token"] <= a["token"]:
                    viol.append("holder %d (token %s) after holder %d (token %s) ended"
                                % (b["holder"], b["token"], a["holder"], a["token"]))
                continue
            overlaps += 1
            first, second = (a, b) if (a["token"] or 0) < (b["token"] or 0) else (b, a)
            if first["wrc"] == 0 and first["w0"] is not None and first["w0"] > second["start"]:
                viol.append("holders %d and %d overlapped and the lower token (%s) wrote while "
                            "the higher (%s) held" % (first["holder"], second["holder"],
                                                      first["token"], second["token"]))
    return result(len(holds), viol, overlaps=overlaps, accepted=len(accepted))


def ephemerals(history, member_nodes, live_sessions, made_sessions, expired_sessions):
    """A session's ephemeral exists while the session lives (its own checks), after the heal
    every member holds exactly the live sessions' ephemerals, and none of an expired one."""
    viol = []
    checks = [(inv, c) for inv, c in history.pairs("ephemeral")
              if inv["f"] == "exists" and c is not None and c["type"] == "ok"]
    for inv, c in checks:
        if c["value"] is False:
            viol.append("session %016x's own ephemeral missing while it lived: %r"
                        % (inv["key"], c))
    live = {"s%016x" % sid for sid, _ in live_sessions.values()}
    made = {"s%016x" % sid for sid in made_sessions}
    for member, nodes in member_nodes.items():
        nodes = set(nodes)
        stale = nodes - live
        if stale:
            viol.append("member %s keeps ephemerals of sessions not alive: %s"
                        % (member, sorted(stale)[:5]))
        gone = made - nodes
        if gone:
            viol.append("member %s lacks ephemerals of live sessions: %s"
                        % (member, sorted(gone)[:5]))
        exp = {"s%s" % s for s in expired_sessions} & nodes
        if exp:
            viol.append("member %s keeps ephemerals of expired sessions %s"
                        % (member, sorted(exp)[:5]))
    return result(len(checks), viol)


def trees_equal(trees):
    """Every member's tree under /jepsen equal (data, every Stat field, children, ACLs)."""
    ms = list(trees)
    viol = []
    for m in ms[1:]:
        if trees[m] != trees[ms[0]]:
            diff = [p for p in sorted(set(trees[m]) | set(trees[ms[0]]))
                    if trees[m].get(p) != trees[ms[0]].get(p)]
            viol.append("members %s and %s differ at %d nodes, e.g. %s; first: %s"
                        % (ms[0], m, len(diff), diff[:3],
                           node_diff(trees[ms[0]].get(diff[0]), trees[m].get(diff[0]))))
    return result(sum(len(t) for t in trees.values()), viol)


# The parts of a tree entry (tests/ensemble/helpers.py tree()).
NODE_PARTS = ("data", "stat", "children", "acls")


def node_diff(a, b):
    """What differs between two members' entries for one node: missing on one side, or each
    differing part (Stat fields by name) with both values."""
    if a is None or b is None:
        return "present on one member only"
    out = []
    for name, x, y in zip(NODE_PARTS, a, b):
        if x == y:
            continue
        if name == "stat" and len(x) == len(STAT_FIELDS) == len(y):
            out += ["%s %r vs %r" % (f, u, v) for f, u, v in zip(STAT_FIELDS, x, y) if u != v]
        elif name == "children":
            out.append("children only on one: %s, only on the other: %s"
                       % (sorted(set(x) - set(y))[:3], sorted(set(y) - set(x))[:3]))
        else:
            out.append("%s %r vs %r" % (name, x, y))
    return "; ".join(out)


def quorum_outages(history):
    """[(start, end)] in ns: from each `quorum-lost` to the next `quorum-serving` (a leader
    serving again), or to the history's end if none came."""
    out = []
    start = None
    for ev in history.events:
        if ev["workload"] != "nemesis":
            continue
        if ev["f"] == "quorum-lost" and start is None:
            start = ev["time"]
        elif ev["f"] == "quorum-serving" and start is not None:
            out.append((start, ev["time"]))
            start = None
    if start is not None:
        out.append((start, history.events[-1]["time"] if history.events else start))
    return out


def sessions(history, timeout_s, slack_s=1.0):
    """A session expires only after its client was silent for its whole timeout while a quorum
    was serving (issue 34). For each session of the ephemeral workload that its client was told
    had expired (kazoo: LOST on EXPIRED_SESSION), unless the expiry nemesis closed it: from its
    client's last answered request (or its start) to that news, less the time the nemesis had
    a quorum away (`quorum_outages`), must be at least the timeout, less `slack_s`: a leader
    notices a lost quorum only after its lease (Palisade's is at most 300 ms; ZooKeeper's
    syncLimit ticks), and a request is heard before its answer arrives. The harness's clients
    are never paused or cut off themselves, so a client is silent only while it cannot reach a
    serving member; its last answer is a lower bound on when it was last heard, so the check
    errs towards passing. Other faults (a leader killed, a partition) leave a quorum serving
    but may stop service for a moment: counted as serving, which errs the same way."""
    outages = quorum_outages(history)
    closed = {ev["value"]["session"] for ev in history.events
              if ev["workload"] == "nemesis" and ev["f"] == "expire-session"}
    need = (timeout_s - slack_s) * 1e9
    started = {}
    heard = {}
    expired = []
    viol = []
    for ev in history.events:
        if ev["workload"] == "ephemeral" and ev["type"] == "ok" and ev["key"] is not None:
            heard["%016x" % ev["key"]] = ev["time"]
            continue
        if ev["workload"] != "session":
            continue
        sid = ev["value"].get("session")
        if ev["f"] == "connected":
            started.setdefault(sid, ev["time"])
            heard[sid] = max(heard.get(sid, 0), ev["time"])
            continue
        if ev["f"] != "expired" or sid is None:
            continue
        expired.append(sid)
        if sid in closed or sid not in heard:
            continue
        last, now = heard[sid], ev["time"]
        away = sum(max(0, min(e, now) - max(s, last)) for s, e in outages)
        serving = now - last - away
        if serving < need:
            viol.append("session %s expired after %.2f s of silence with a quorum serving "
                        "(%.2f s silent, %.2f s of it without a quorum; timeout %.1f s): last "
                        "heard at %.3f s, told it expired at %.3f s"
                        % (sid, serving / 1e9, (now - last) / 1e9, away / 1e9, timeout_s,
                           last / 1e9, now / 1e9))
    return result(len(started), viol, expired=len(expired),
                  closed_by_nemesis=sum(1 for sid in expired if sid in closed),
                  outages=len(outages))

"""The history: every operation's invocation and completion, in real-time order.

An event is a dict: index, time (ns since the run started, monotonic), process, type
(invoke / ok / fail / info), workload, f, key, value. `ok` is done, `fail` certainly did not
happen, `info` may or may not have happened (a timeout, a lost connection): as in Jepsen, the
process that saw an `info` is retired and its thread carries on as a new process. Events are
appended under one lock with the time taken inside it, so list order is real-time order: an
operation completed before another was invoked comes earlier in the list.
"""

import itertools
import json
import threading
import time


class History:
    def __init__(self):
        self.lock = threading.Lock()
        self.events = []
        self.t0 = time.monotonic_ns()
        self._procs = itertools.count()

    def new_process(self):
        return next(self._procs)

    def now(self):
        return time.monotonic_ns() - self.t0

    def _add(self, ev):
        with self.lock:
            ev["time"] = time.monotonic_ns() - self.t0
            ev["index"] = len(self.events)
            self.events.append(ev)
        return ev

    def invoke(self, process, workload, f, value=None, key=None):
        return self._add({"process": process, "type": "invoke", "workload": workload, "f": f,
                          "key": key, "value": value})

    def complete(self, inv, typ, value=None, **extra):
        ev = {"process": inv["process"], "type": typ, "workload": inv["workload"],
              "f": inv["f"], "key": inv["key"], "value": value}
        ev.update(extra)
        return self._add(ev)

    def note(self, workload, what, **detail):
        """An event that is no operation: a fault, a session's state as its client saw it."""
        ev = {"process": workload, "type": "info", "workload": workload, "f": what,
              "key": None, "value": detail}
        return self._add(ev)

    def nemesis(self, what, **detail):
        return self.note("nemesis", what, **detail)

    def pairs(self, workload):
        """[(invoke, completion or None)] of one workload, in invocation order."""
        open_ = {}
        out = []
        for ev in self.events:
            if ev["workload"] != workload:
                continue
            if ev["type"] == "invoke":
                open_[ev["process"]] = len(out)
                out.append([ev, None])
            else:
                i = open_.pop(ev["process"], None)
                if i is not None:
                    out[i][1] = ev
        return [tuple(p) for p in out]

    def dump(self, path):
        with open(path, "w") as f:
            for ev in self.events:
                f.write(json.dumps(ev, sort_keys=True) + "\n")


class Proc:
    """A worker's current process id: renewed after every `info`."""

    def __init__(self, history):
        self.h = history
        self.id = history.new_process()

    def invoke(self, workload, f, value=None, key=None):
        return self.h.invoke(self.id, workload, f, value, key)

    def ok(self, inv, value=None, **extra):
        return self.h.complete(inv, "ok", value, **extra)

    def fail(self, inv, value=None, **extra):
        return self.h.complete(inv, "fail", value, **extra)

    def info(self, inv, value=None, **extra):
        ev = self.h.complete(inv, "info", value, **extra)
        self.id = self.h.new_process()
        return ev

# Sourced by run_all.sh: kazoo 2.11.0 scenarios.
KZ="kazoo 2.11.0 (Python $(python3 -c 'import platform;print(platform.python_version())'))"
KD="$HERE/kazoo_driver.py"
capture kazoo-basic "$KZ" "create (persistent, empty b'', null None, ephemeral, sequential, ephemeral-sequential, create2 include_data, NODEEXISTS, NONODE), exists present/missing with watch, getData with watch, setData (fires watch) + BADVERSION, getChildren/getChildren2, getACL, setACL + BADVERSION, sync, delete + NONODE + NOTEMPTY, closeSession" -- python3 "$KD" basic
capture kazoo-multi "$KZ" "transaction (multi create/create-ephemeral/setData/check/delete) that succeeds, then a multi whose middle check fails (BADVERSION, RUNTIMEINCONSISTENCY for the others)" -- python3 "$KD" multi
capture kazoo-auth "$KZ" "conn 1: addAuth digest alice:secret, create with digest ACL, get, getACL; conn 2: unauthenticated get/set -> NOAUTH" -- python3 "$KD" auth
capture kazoo-watch "$KZ" "conn 1 registers exists/data/child watches, conn 2 creates/sets/creates child/deletes; conn 1 receives notifications (xid -1)" -- python3 "$KD" watch
capture kazoo-children1000 "$KZ" "getChildren2 (include_data) on a node with 1000 children (children created directly, not through the proxy)" -- python3 "$KD" children1000
capture kazoo-ping "$KZ" "session timeout 4000 ms, idle ~5 s: pings (xid -2, opcode 11)" -- python3 "$KD" ping

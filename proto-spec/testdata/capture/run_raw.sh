# Sourced by run_all.sh: the hand-rolled raw client (capture/raw_client.py).
RAW_DESC="RAW CLIENT (hand-written capture/raw_client.py, NOT a real ZooKeeper client library)"
RD="$HERE/raw_client.py"
capture raw-oldhandshake "$RAW_DESC" "44-byte ConnectRequest (no readOnly byte) -> 36-byte ConnectResponse; create with null data, getEphemerals, getAllChildrenNumber, whoAmI, multiRead with a missing path, checkWatches/removeWatches (+NOWATCHER), addWatch, setWatches2 (xid -8, relativeZxid 0) with immediate notifications, ping, delete, closeSession" -- python3 "$RD" old_handshake
capture raw-authfail "$RAW_DESC" "45-byte handshake; auth (xid -4) with unknown scheme -> AUTHFAILED (-115), server then closes the connection" -- python3 "$RD" authfail
capture raw-expired "$RAW_DESC" "handshake with an unknown sessionId (44-byte then 45-byte form): server replies timeout 0 / sessionId 0 / zero passwd (session expired) and closes" -- python3 "$RD" expired
capture raw-badrequest "$RAW_DESC" "getData with a path without leading slash, then an unknown opcode 999" -- python3 "$RD" unknown_op

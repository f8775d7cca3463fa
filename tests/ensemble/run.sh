#!/usr/bin/env bash
# The ensemble suite, bounded (10 minutes at most; about 5 minutes on this 2-core machine).
#   tests/ensemble/run.sh [pytest args...]
#   ENSEMBLE_KIND=palisade|zookeeper (default palisade), PALISADE_BIN (default
#   ./target/release/palisade), ENSEMBLE_PORT_BASE (default 24100)
# Prints the figures (formation and election times) at the end.
set -uo pipefail
cd "$(dirname "$0")/../.."
export ENSEMBLE_KIND=${ENSEMBLE_KIND:-palisade}
if [ "$ENSEMBLE_KIND" = palisade ]; then
  bin=${PALISADE_BIN:-./target/release/palisade}
  [ -x "$bin" ] || { echo "no Palisade binary at $bin (cargo build --release -p palisade, or set PALISADE_BIN)" >&2; exit 2; }
fi
figures=$(mktemp "${TMPDIR:-/tmp}/ensemble-figures.XXXXXX")
export ENSEMBLE_FIGURES=$figures
timeout -k 5 600 python3 -m pytest -q -p no:cacheprovider -c tests/ensemble/pytest.ini \
  --rootdir tests/ensemble tests/ensemble "$@"
rc=$?
echo "== ensemble figures ($ENSEMBLE_KIND)"
python3 - "$figures" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    v = r["value"]
    print("  %-62s %-44s %s %s" % (r["test"], r["figure"],
                                   "%.3f" % v if isinstance(v, float) else v, r["unit"]))
PY
rm -f "$figures"
[ $rc = 124 ] && echo "the suite hit its 600 s bound" >&2
exit $rc

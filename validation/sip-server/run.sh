#!/usr/bin/env bash
# One command, from a fresh clone: Kamailio under SIPp load on 127.0.0.1, measured against qderive.
#   validation/sip-server/run.sh            # measure (about 9 minutes), then compare
#   validation/sip-server/run.sh --analyse  # only the comparison, from the committed data
# Installs kamailio and sip-tester with apt when they are missing (sudo if not root). Every process it starts
# is stopped on exit (harness.py kills its process groups on exit, error, SIGINT/SIGTERM and timeout); the
# whole measurement is bounded by `timeout`. Only 127.0.0.1 is used (udp ports 5070 and 5071, --port).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PY="${PYTHON:-python3}"  # a Python with qderive installed (PYTHON=/path/to/venv/bin/python)

"$PY" -c "import qderive, scipy, matplotlib" 2>/dev/null || {
  echo "run.sh: $PY cannot import qderive: python3 -m pip install -e \"$ROOT[test]\" (or set PYTHON)" >&2; exit 2; }

if [[ "${1:-}" != "--analyse" ]]; then
  missing=()
  command -v kamailio >/dev/null || missing+=(kamailio)
  command -v sipp >/dev/null || missing+=(sip-tester)
  if ((${#missing[@]})); then
    SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
    # policy-rc.d 101: the package's own service is not started by the installation (an existing policy is kept)
    ours=0
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
      $SUDO sh -c 'printf "#!/bin/sh\nexit 101\n" > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d'
      ours=1
      trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
    fi
    $SUDO apt-get update -q
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
    if ((ours)); then $SUDO rm -f /usr/sbin/policy-rc.d; fi
  fi
  if pgrep -x kamailio >/dev/null; then
    echo "run.sh: another kamailio is running (the distribution's service?); the harness uses its own on" \
         "127.0.0.1:5070 and leaves that one alone" >&2
  fi
  timeout --signal=TERM --kill-after=10 900 "$PY" "$HERE/harness.py" "$@"
fi
"$PY" "$HERE/analysis.py"

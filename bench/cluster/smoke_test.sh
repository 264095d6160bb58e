#!/usr/bin/env bash
# End-to-end smoke test of the emulated cluster (CTest: cluster.emulation_smoke).
#
#   smoke_test.sh ALLREDUCE_PLAIN
#
# Brings up 2 namespaces at 100mbit, checks that both ends of every link carry a tbf qdisc, runs
# an exact allreduce across them with small sizes, tears down and checks nothing is left. Exits
# 77 (skipped) when the machine cannot create network namespaces or has no mpirun. Asserts only
# on structure and results, never on timing (the machine is shared).
set -uo pipefail

SKIP=77
here=$(cd "$(dirname "$0")" && pwd)
plain=${1:?usage: smoke_test.sh ALLREDUCE_PLAIN}
# A unique name per run: several ctest runs may share the machine.
export OCTET_CLUSTER_NAME=octt$$
emulate=$here/emulate.sh

skip() {
  echo "SKIP: $*"
  exit $SKIP
}
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

[[ $(id -u) -eq 0 ]] || skip "not root"
command -v ip >/dev/null || skip "no ip (iproute2)"
command -v tc >/dev/null || skip "no tc (iproute2)"
command -v mpirun >/dev/null || skip "no mpirun"
[[ -x $plain ]] || fail "not an executable: $plain"
probe=$OCTET_CLUSTER_NAME-probe
ip netns add "$probe" 2>/dev/null || skip "cannot create network namespaces here"
# The kernel must also offer veth and the tbf qdisc (a module that some kernels lack).
if ! ip -n "$probe" link add octv0 type veth peer name octv1 2>/dev/null ||
   ! ip netns exec "$probe" tc qdisc add dev octv0 root tbf rate 1mbit burst 32kb latency 10ms \
     2>/dev/null; then
  ip netns del "$probe"
  skip "no veth or tbf qdisc in this kernel"
fi
ip netns del "$probe"

trap '"$emulate" down >/dev/null 2>&1' EXIT
"$emulate" up 2 100mbit || fail "emulate.sh up failed"

qdiscs=$("$emulate" status | grep -c 'qdisc tbf .* rate 100Mbit')
[[ $qdiscs -eq 4 ]] || fail "expected tbf on both ends of 2 links (4 qdiscs), found $qdiscs"

out=$(timeout 90 "$emulate" run -- -np 2 "$plain" -b 4K -e 256K -f 8 -n 3 -w 1 2>&1)
rc=$?
echo "$out"
[[ $rc -eq 0 ]] || fail "allreduce_plain across the emulated cluster exited $rc"
rows=$(grep -cE '^ +[0-9]+ ' <<<"$out")
[[ $rows -eq 3 ]] || fail "expected 3 result rows (4K, 32K, 256K), got $rows"
# Two ranks on different hosts: the result must have crossed the emulated link exactly.
grep -q '^# allreduce_plain: 2 ranks' <<<"$out" || fail "did not run on 2 ranks"

# The same over UCX (OCTET_CLUSTER_PML=ucx), where OpenMPI has its UCX layer.
if ompi_info 2>/dev/null | grep -q 'MCA pml: ucx'; then
  out=$(OCTET_CLUSTER_PML=ucx timeout 90 "$emulate" run -- -np 2 "$plain" -b 4K -e 256K -f 8 -n 3 \
    -w 1 2>&1)
  rc=$?
  echo "$out"
  [[ $rc -eq 0 ]] || fail "allreduce_plain over UCX across the emulated cluster exited $rc"
  rows=$(grep -cE '^ +[0-9]+ ' <<<"$out")
  [[ $rows -eq 3 ]] || fail "UCX: expected 3 result rows, got $rows"
else
  echo "no UCX layer in this OpenMPI: the UCX run is skipped"
fi

"$emulate" down || fail "emulate.sh down failed"
left=$(ip netns list | grep -c "^$OCTET_CLUSTER_NAME-") || true
[[ $left -eq 0 ]] || fail "$left namespaces left after down"
"$emulate" down >/dev/null || fail "a second down is not idempotent"
echo "PASS"

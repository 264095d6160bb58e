#!/usr/bin/env bash
# CTest bench.codec_ab: octet_codec_ab with this build's library twice (both decodes must run and
# be reported, the first against itself at 1.000), and its one-line errors for a directory without
# the library, a bad size and a count too large.
#
#   ab_test.sh OCTET_CODEC_AB LIB_DIR
set -euo pipefail
ab=$1 lib=$2
out=$("$ab" 4096 0 20 "$lib" "$lib")
echo "$out"
[[ $(wc -l <<<"$out") == 3 ]] || { echo "want 3 lines"; exit 1; }
grep -q '^bound [0-9.]* G/s' <<<"$out" || { echo "no bound line"; exit 1; }
[[ $(grep -c "^$lib  [0-9.]* G/s  of_bound [0-9.]*  vs_first [0-9.]*$" <<<"$out") == 2 ]] ||
  { echo "want a line per build"; exit 1; }
sed -n 2p <<<"$out" | grep -q 'vs_first 1.000$' || { echo "the first build is not 1.000 of itself"; exit 1; }
for bad in "4096 0 20 /nonexistent" "12 0 20 $lib" "4096 0 x $lib" "4096 0 99999999999 $lib"; do
  set +e
  err=$("$ab" $bad 2>&1 >/dev/null)
  rc=$?
  set -e
  echo "$bad -> $rc: $err"
  [[ $rc == 2 && $(wc -l <<<"$err") == 1 && $err == octet_codec_ab:* ]] ||
    { echo "want one line and exit 2 for: $bad"; exit 1; }
done
echo "ok"

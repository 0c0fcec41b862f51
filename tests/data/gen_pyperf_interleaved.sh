#!/bin/sh
# Interleaved pyperf files (run from tests/data): process i of OLD, NEW and SAME runs back
# to back, so a slow drift of the machine's speed hits the three files alike.
# usage: sh gen_pyperf_interleaved.sh PREFIX PROCESSES N_OLD N_NEW
set -eu
prefix=$1 processes=$2 n_old=$3 n_new=$4
rm -f "${prefix}_old.json" "${prefix}_new.json" "${prefix}_same.json"
i=0
while [ "$i" -lt "$processes" ]; do
  for side in old new same; do
    n=$n_old
    [ "$side" = new ] && n=$n_new
    python -m pyperf command --quiet --processes 1 --values 2 --loops 1 \
      --append "${prefix}_${side}.json" -- python3 -c "sum(range($n))" >/dev/null
  done
  i=$((i + 1))
done

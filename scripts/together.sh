#!/usr/bin/env bash
# Runs npm scripts at the same time, each printing as it goes, and fails if any of them fails. `npm test` runs the
# type check (one core: tsc) beside `cdk synth` (one core, mostly: a bundle at a time) this way; on two cores the pair
# takes about as long as the longer of the two (docs/decisions.md, "The test suite's phases").
set -u
pids=()
for script in "$@"; do
  npm run "$script" &
  pids+=("$!")
done
status=0
for pid in "${pids[@]}"; do
  wait "$pid" || status=1
done
exit "$status"

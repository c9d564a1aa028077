#!/bin/sh
# Instructions one run of a node program executes, counted by valgrind's callgrind with V8 in
# --predictable mode (one thread, no randomness): a measure of a start-up's work that a busy machine
# does not move (two runs agree within about 0.2%), where wall and CPU times swing by tens of percent.
# Slow (about 30 s a run) and not time: cache misses, I/O and GC threads are not in it. Usage:
#   bench/instructions.sh dist/cli/bin.js sessions --data-dir /tmp/empty
#   bench/instructions.sh -e ''
valgrind --tool=callgrind --smc-check=all-non-file --callgrind-out-file=/dev/null node --predictable "$@" 2>&1 >/dev/null | sed -n 's/.*Collected : //p'

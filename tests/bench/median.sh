# median: the median of the numbers on stdin, one or more a line (spaces
# between them), the lower of the middle two for an even count.  Sourced
# by the benchmark scripts of tests/bench.
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
